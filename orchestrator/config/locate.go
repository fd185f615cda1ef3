package config

import (
	"fmt"
	"regexp"
	"strings"
)

// locate maps each dotted key of the file to the line that set it, so a
// refused value names its line: the TOML library reports lines only for
// syntax errors. Keys of arrays of tables carry their index
// ("budget[1].cost_usd") and are also entered without it
// ("budget.cost_usd", the first such line), which is how the library
// names an undecoded key. Table headers are entered too
// ("policy.kind.codex", "budget[1]").
//
// It reads the text line by line, skipping the continuation lines of
// multi-line arrays and strings; that is enough for the files people
// write, and a key it cannot place gets line 0, never a wrong line.
func locate(data []byte) map[string]int {
	at := map[string]int{}
	put := func(key string, line int) {
		if _, ok := at[key]; !ok {
			at[key] = line
		}
		if plain := indexRE.ReplaceAllString(key, ""); plain != key {
			if _, ok := at[plain]; !ok {
				at[plain] = line
			}
		}
	}
	prefix := ""
	arrays := map[string]int{} // array-of-tables path → count so far
	depth := 0                 // open [ of a multi-line array value
	inString := ""             // the open """ or ''' of a multi-line string
	for i, raw := range strings.Split(string(data), "\n") {
		line := i + 1
		s := strings.TrimSpace(raw)
		if inString != "" {
			if strings.Contains(s, inString) {
				inString = ""
			}
			continue
		}
		if depth > 0 {
			depth = max(depth+bracketDelta(s), 0)
			continue
		}
		s = stripComment(s)
		switch {
		case s == "":
		case strings.HasPrefix(s, "[["):
			path := normKey(strings.TrimSuffix(strings.TrimPrefix(s, "[["), "]]"))
			n := arrays[path]
			arrays[path] = n + 1
			prefix = fmt.Sprintf("%s[%d]", path, n)
			put(prefix, line)
		case strings.HasPrefix(s, "["):
			prefix = normKey(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
			put(prefix, line)
		default:
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				continue
			}
			key := normKey(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			put(key, line)
			v = strings.TrimSpace(v)
			for _, q := range []string{`"""`, `'''`} {
				if strings.HasPrefix(v, q) && !strings.Contains(v[len(q):], q) {
					inString = q
				}
			}
			if inString == "" {
				depth = max(bracketDelta(v), 0)
			}
		}
	}
	return at
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// normKey turns `a . "b" . c` into a.b.c.
func normKey(k string) string {
	parts := strings.Split(strings.TrimSpace(k), ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// stripComment drops a # comment outside quotes.
func stripComment(s string) string {
	var q rune
	for i, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q == 0 && (r == '"' || r == '\''):
			q = r
		case q == 0 && r == '#':
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

// bracketDelta counts [ minus ] outside quotes (a value's open arrays).
func bracketDelta(s string) int {
	s = stripComment(s)
	var q rune
	d := 0
	esc := false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case q == '"' && r == '\\':
			esc = true
		case q != 0 && r == q:
			q = 0
		case q == 0 && (r == '"' || r == '\''):
			q = r
		case q == 0 && r == '[':
			d++
		case q == 0 && r == ']':
			d--
		}
	}
	return d
}
