package textwait

import (
	"bytes"
	"regexp"
	"strings"
)

// The echo of typed input is masked only where the terminal echoed it:
// at the input position. The first line of an input is echoed there when
// it appears in the output that follows the input with nothing before it
// but blanks, the prompt the input followed (Input.Prefix: a line editor
// redraws "prompt + line") and partial copies of the line itself (a line
// editor's redraws as it takes the keys), and within echoWindow bytes of
// the input position. Output that merely contains the typed text — a
// program that prints it back after `stty -echo`, `printf 'AFTER-%s\n'` —
// is not an echo and satisfies the wait. The later lines of a multi-line
// input are echoed after the line before them, with the program's output
// in between (a shell runs each line before it reads the next): each is
// its first occurrence after the echo found before it, looked for only
// once the first line's echo was found — a terminal that did not echo the
// first line did not echo the rest. Found echoes are blanked (NUL), which
// no pattern of ours can match.
//
// The screen rows (searched when the text log lost text) have no input
// position: there the first line's echo is an occurrence with nothing but
// such noise before it on its row.

// maxWrapAware bounds the input lines searched with wrap points allowed.
const maxWrapAware = 2048

// echoWindow is how far after the input position its echo may begin.
func echoWindow(line string) int { return 1024 + 2*len(line) }

// echoMask finds, in text that arrives in pieces, the echoes of the
// inputs typed after the baseline.
type echoMask struct {
	seq      uint64 // the Seq of the last input taken (see Source.InputsAfter)
	startLog uint64 // the oldest log offset of the text the scan holds
	inputs   []*echoInput
}

// echoInput is one input whose echo is still looked for.
type echoInput struct {
	at     int // scan offset of the input position
	prefix string
	first  *echoLine // the first line, until its echo is found
	rest   []string  // the later lines, queued when the first is found
	later  []*echoLine
	from   int // scan offset of the end of the last echo found
}

type echoLine struct {
	text  string
	re    *regexp.Regexp // wrap-aware search; compiled on first use
	to    int            // scan offset up to which it was looked for
	fresh bool           // never looked for
}

// inputLines splits an input into the lines an echo shows.
func inputLines(text string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// add takes an input; the text read so far ends at log offset logEnd,
// scan offset end. An input is typed at the end of the text read up to
// it (the scan reads up to each input's offset first); one found typed
// further back (it was recorded while the turn before read) is placed by
// counting back from the end, exact unless invalid UTF-8 came since. An
// input typed where the scan's text is not known (in text the log
// dropped) is not looked for.
func (m *echoMask) add(in Input, logEnd uint64, end int) {
	lines := inputLines(in.Text)
	if len(lines) == 0 || in.At < m.startLog {
		return
	}
	at := end // typed at the end of the text read (or inside a rune there)
	if in.At < logEnd {
		at = end - int(min(logEnd-in.At, uint64(end)))
	}
	m.inputs = append(m.inputs, &echoInput{at: at, from: at, prefix: in.Prefix,
		first: &echoLine{text: lines[0], fresh: true}, rest: lines[1:]})
}

// lookback is how far before the end of the text already searched an
// echo of l may begin and still be cut by it. A wrapped echo carries line
// ends and padding between its characters: up to three bytes of it per
// byte of the line plus a row's padding are allowed for.
func (l *echoLine) lookback() int {
	if len(l.text) > maxWrapAware {
		return len(l.text) - 1
	}
	return 4*len(l.text) + 512
}

// keepFrom is the oldest scan offset a later search for a pending echo
// may read (end: the end of the text so far).
func (m *echoMask) keepFrom(end int) int {
	keep := end
	for _, in := range m.inputs {
		if in.first != nil {
			keep = min(keep, in.at)
		}
		for _, l := range in.later {
			keep = min(keep, max(in.from, end-l.lookback()))
		}
	}
	return keep
}

// find looks for the pending echoes in buf (scan offset bufAt), blanks
// those found and returns the scan offset of the first byte blanked, or
// the end of buf.
func (m *echoMask) find(buf []byte, bufAt int) int {
	end := bufAt + len(buf)
	first := end
	kept := m.inputs[:0]
	for _, in := range m.inputs {
		if in.first != nil && in.at < bufAt {
			continue // its position is no longer kept (a whole-text scan trimmed it)
		}
		if in.first != nil {
			l := in.first
			i, j := firstEcho(buf[in.at-bufAt:], 0, true, in.prefix, l)
			switch {
			case i >= 0:
				i, j = in.at+i, in.at+j
				clear(buf[i-bufAt : j-bufAt])
				first = min(first, i)
				in.first, in.from = nil, j
				for _, line := range in.rest {
					in.later = append(in.later, &echoLine{text: line, fresh: true})
				}
				in.rest = nil
			case end-in.at > echoWindow(l.text)+l.lookback():
				continue // no echo can begin at the input position any more
			default:
				kept = append(kept, in)
				continue
			}
		}
		later := in.later[:0]
		for _, l := range in.later {
			start := in.from
			if !l.fresh {
				start = max(start, l.to-l.lookback())
			}
			start = max(start, bufAt)
			i, j := l.findIn(buf[start-bufAt:])
			if i < 0 {
				l.to, l.fresh = end, false
				later = append(later, l)
				continue
			}
			clear(buf[start-bufAt+i : start-bufAt+j])
			first = min(first, start+i)
			in.from = start + j
		}
		clear(in.later[len(later):])
		in.later = later
		if len(in.later) > 0 {
			kept = append(kept, in)
		}
	}
	clear(m.inputs[len(kept):])
	m.inputs = kept
	return first
}

// firstEcho finds the echo of an input's first line l in b: with
// positioned, b starts at the input position and the echo must begin
// within echoWindow of it with only noise (quiet) before it; without, b
// is screen rows and only noise may precede the echo on its row. It
// returns the echo's bounds in b, or -1, -1.
func firstEcho(b []byte, from int, positioned bool, prefix string, l *echoLine) (int, int) {
	limit := len(b)
	if positioned {
		limit = min(limit, echoWindow(l.text)+1)
	}
	for o := from; o < limit; {
		i, j := l.findIn(b[o:min(len(b), limit+l.lookback())])
		if i < 0 || o+i >= limit {
			return -1, -1
		}
		i, j = o+i, o+j
		lineStart := 0
		if !positioned {
			lineStart = bytes.LastIndexByte(b[:i], '\n') + 1
		}
		if quiet(b[lineStart:i], prefix, l.text) {
			return i, j
		}
		o = i + 1
	}
	return -1, -1
}

// quiet reports whether noise, the text between the input position and
// an occurrence of line, is what a line editor draws there before its
// echo: on every line of it, nothing but blanks, the prompt the input
// followed, and a beginning of line itself.
func quiet(noise []byte, prefix, line string) bool {
	pr := strings.TrimSpace(prefix)
	for len(noise) > 0 {
		piece := noise
		if k := bytes.IndexByte(noise, '\n'); k >= 0 {
			piece, noise = noise[:k], noise[k+1:]
		} else {
			noise = nil
		}
		p := strings.TrimSpace(strings.ReplaceAll(string(piece), "\x00", ""))
		if pr != "" {
			if after, ok := strings.CutPrefix(p, pr); ok {
				p = strings.TrimSpace(after)
			}
		}
		if !strings.HasPrefix(line, p) {
			return false
		}
	}
	return true
}

// findIn finds l's echo in b, exactly or with wrap points inserted: the
// leftmost of either.
func (l *echoLine) findIn(b []byte) (int, int) {
	if len(l.text) > maxWrapAware {
		if i := bytes.Index(b, []byte(l.text)); i >= 0 {
			return i, i + len(l.text)
		}
		return -1, -1
	}
	if l.re == nil {
		re, err := regexp.Compile(wrapPattern(l.text))
		if err != nil {
			return -1, -1
		}
		l.re = re
	}
	if loc := l.re.FindIndex(b); loc != nil {
		return loc[0], loc[1]
	}
	return -1, -1
}

// wrapPattern is the regular expression of line's echo as a line editor
// may break it: line ends and spaces between any two characters, and a
// space of the line itself may be gone (a row's trailing space, trimmed
// where the editor wrapped at it).
func wrapPattern(line string) string {
	var pat strings.Builder
	for i, r := range line {
		if i > 0 {
			pat.WriteString(`[ \n]*`)
		}
		if r == ' ' {
			continue
		}
		pat.WriteString(regexp.QuoteMeta(string(r)))
	}
	return pat.String()
}

// MaskEcho masks the echoes of inputs in text as a scan that reads the
// text piece by piece masks them; at[i] is the offset in text at which
// inputs[i] was typed (the length the text had then).
func MaskEcho(text string, inputs []Input, at []int) string {
	b := []byte(text)
	for i, in := range inputs {
		lines := inputLines(in.Text)
		if len(lines) == 0 || at[i] < 0 || at[i] > len(b) {
			continue
		}
		maskLines(b, at[i], true, in.Prefix, lines)
	}
	return string(b)
}

// MaskRows masks the echoes of inputs in screen rows and returns them,
// each followed by a line end.
func MaskRows(rows []string, inputs []Input) string {
	var sb strings.Builder
	for _, r := range rows {
		sb.WriteString(r)
		sb.WriteByte('\n')
	}
	if len(inputs) == 0 {
		return sb.String()
	}
	b := []byte(sb.String())
	for _, in := range inputs {
		if lines := inputLines(in.Text); len(lines) > 0 {
			maskLines(b, 0, false, in.Prefix, lines)
		}
	}
	return string(b)
}

// maskLines blanks the echoes of one input's lines in b, its input
// position at (see firstEcho for positioned).
func maskLines(b []byte, at int, positioned bool, prefix string, lines []string) {
	i, j := firstEcho(b[at:], 0, positioned, prefix, &echoLine{text: lines[0]})
	if i < 0 {
		return
	}
	clear(b[at+i : at+j])
	from := at + j
	for _, line := range lines[1:] {
		l := &echoLine{text: line}
		i, j := l.findIn(b[from:])
		if i < 0 {
			continue
		}
		clear(b[from+i : from+j])
		from += j
	}
}
