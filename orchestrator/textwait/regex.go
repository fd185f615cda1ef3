package textwait

import (
	"regexp/syntax"
	"strings"
)

// lineLocal reports whether every match of the pattern lies within one
// line: nothing in it matches a line end, and it does not use \A or \z,
// whose meaning depends on where the searched text starts and ends.
func lineLocal(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	var local func(*syntax.Regexp) bool
	local = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
			return false
		case syntax.OpLiteral:
			if strings.ContainsRune(string(re.Rune), '\n') {
				return false
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
					return false
				}
			}
		}
		for _, sub := range re.Sub {
			if !local(sub) {
				return false
			}
		}
		return true
	}
	return local(re)
}

// requiredLiteral returns the longest literal string that every match of
// the pattern contains, or "" (case-folded literals do not count).
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	var best func(*syntax.Regexp) string
	best = func(re *syntax.Regexp) string {
		switch re.Op {
		case syntax.OpLiteral:
			if re.Flags&syntax.FoldCase != 0 {
				return ""
			}
			return string(re.Rune)
		case syntax.OpCapture:
			return best(re.Sub[0])
		case syntax.OpPlus:
			return best(re.Sub[0]) // at least once
		case syntax.OpRepeat:
			if re.Min >= 1 {
				return best(re.Sub[0])
			}
		case syntax.OpConcat:
			var out string
			for _, sub := range re.Sub {
				if l := best(sub); len(l) > len(out) {
					out = l
				}
			}
			return out
		}
		return "" // alternations, optional parts, classes: nothing certain
	}
	return best(re)
}
