package tmuxctl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadCommand is wrapped by every refusal of a command line before it is
// sent to tmux.
var ErrBadCommand = errors.New("bad tmux command")

// Quote returns arg as one word for tmux's command parser. Words made only
// of safe characters are returned as they are; anything else is put in
// single quotes, where tmux takes every byte literally (a single quote
// itself is written as '\” outside the quotes); a word with control
// characters (newline, tab, ESC) is put in double quotes with octal escapes,
// since a control-mode command must fit on one line. Characters that are special
// to tmux at the start or inside a word (';', '#', '$', '~', '%', '{', '}',
// quotes, backslash, white space) always force quoting, so `#{...}` formats
// are passed through for tmux to expand only where a command expands them.
func Quote(arg string) string {
	if arg == "" {
		return "''"
	}
	if isSafeWord(arg) {
		return arg
	}
	var b strings.Builder
	b.Grow(len(arg) + 2)
	if hasControl(arg) {
		// Control characters cannot travel literally (a newline ends the
		// command line): use double quotes, where tmux decodes octal
		// escapes, and escape what is special there.
		b.WriteByte('"')
		for i := 0; i < len(arg); i++ {
			c := arg[i]
			switch {
			case c < 0x20 || c == 0x7f:
				fmt.Fprintf(&b, "\\%03o", c)
			case c == '"' || c == '\\' || c == '$':
				b.WriteByte('\\')
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	b.WriteByte('\'')
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		if c == '\'' {
			b.WriteString(`'\''`)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func isSafeWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == '=' || c == '@' || c == '+' || c == ':':
		default:
			return false
		}
	}
	return true
}

// Command builds one tmux command line from a command name and its
// arguments, quoting each argument with Quote.
func Command(name string, args ...string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}

// CheckCommand reports why line must not be sent to tmux as one command, or
// nil. Empty, white-space-only and comment lines are refused (an empty line
// detaches a control client and a comment produces no reply block); so are
// newlines and NUL bytes (they would split or truncate the line), and an
// unquoted ';' (it would split the line into several commands, each with
// its own reply block; use Client.RunMany for that).
func CheckCommand(line string) error {
	trimmed := strings.TrimLeft(line, " \t")
	switch {
	case strings.TrimSpace(line) == "":
		return fmt.Errorf("%w: empty or white-space-only command (an empty line detaches the client)", ErrBadCommand)
	case strings.HasPrefix(trimmed, "#"):
		return fmt.Errorf("%w: comment-only command %q produces no reply", ErrBadCommand, line)
	case strings.ContainsAny(line, "\n\r"):
		return fmt.Errorf("%w: command %q contains a newline; quote arguments with Quote", ErrBadCommand, line)
	case strings.IndexByte(line, 0) >= 0:
		return fmt.Errorf("%w: command %q contains a NUL byte", ErrBadCommand, line)
	}
	if hasUnquotedSemicolon(line) {
		return fmt.Errorf("%w: command %q contains an unquoted ';'; quote the argument or use RunMany", ErrBadCommand, line)
	}
	return nil
}

// hasUnquotedSemicolon scans line as tmux's parser would for the purpose of
// command separation: single quotes are literal, double quotes honour
// backslash escapes, and a backslash outside quotes escapes the next byte.
func hasUnquotedSemicolon(line string) bool {
	var inSingle, inDouble bool
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inSingle:
			if c == '\'' {
				inSingle = false
			}
		case inDouble:
			if c == '\\' {
				i++
			} else if c == '"' {
				inDouble = false
			}
		case c == '\\':
			i++
		case c == '\'':
			inSingle = true
		case c == '"':
			inDouble = true
		case c == ';':
			return true
		}
	}
	return false
}

// ShellQuote returns arg as one word for a POSIX shell: unchanged when it
// is made only of characters no shell treats specially, else in single
// quotes (a single quote itself written as '\”).
func ShellQuote(arg string) string {
	if arg == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@%+=:,./_-", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}
