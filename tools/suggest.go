package tools

import (
	"fmt"
	"sort"
	"strings"
)

// MaxSuggestEdits is how far a misspelt name may be from what it meant
// for "did you mean …?" (CONTRACT §18: within two edits).
const MaxSuggestEdits = 2

// Suggest returns the candidates nearest to word within MaxSuggestEdits
// edits (insertions, deletions, substitutions, swaps of neighbours), nearest
// first, ties in candidate order; nil when none is that near. foldCase
// compares case-insensitively. A candidate equal to word is not a
// suggestion.
func Suggest(word string, candidates []string, foldCase bool) []string {
	w := word
	if foldCase {
		w = strings.ToLower(w)
	}
	type hit struct {
		name string
		d, i int
	}
	var hits []hit
	seen := map[string]bool{}
	for i, c := range candidates {
		if c == "" || c == word || seen[c] {
			continue
		}
		seen[c] = true
		cc := c
		if foldCase {
			cc = strings.ToLower(c)
		}
		if d := editDistance(w, cc, MaxSuggestEdits); d <= MaxSuggestEdits {
			hits = append(hits, hit{c, d, i})
		}
	}
	if len(hits) == 0 {
		return nil
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].d < hits[b].d })
	out := make([]string, 0, len(hits))
	for _, h := range hits {
		if h.d == hits[0].d {
			out = append(out, h.name)
		}
	}
	return out
}

// DidYouMean is " (did you mean a?)" or " (did you mean a or b?)" for
// names, "" for none.
func DidYouMean(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (did you mean %s?)", names[0])
	}
	if len(names) > 3 {
		names = names[:3]
	}
	return fmt.Sprintf(" (did you mean %s or %s?)", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// SuggestOperation is the operations an unknown name probably meant: the
// nearest within two edits, else the ones it is a prefix of (at most
// three: terminal_snap → terminal_snapshot).
func SuggestOperation(name string) []string {
	names := OperationNames()
	if s := Suggest(name, names, true); s != nil {
		return s
	}
	if len(name) < 3 {
		return nil
	}
	var pre []string
	for _, n := range names {
		if strings.HasPrefix(n, strings.ToLower(name)) {
			pre = append(pre, n)
		}
	}
	if len(pre) > 3 {
		return nil
	}
	return pre
}

// editDistance is the optimal-string-alignment distance of a and b in
// runes (insertions, deletions, substitutions and swaps of two adjacent
// characters count one each), or max+1 once it is known to exceed max.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	rows := make([][]int, len(ra)+1)
	for i := range rows {
		rows[i] = make([]int, len(rb)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		best := rows[i][0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
			best = min(best, d)
		}
		if best > max {
			return max + 1
		}
	}
	return rows[len(ra)][len(rb)]
}

// Named is a terminal as a terminal argument may name it.
type Named struct{ ID, Name string }

// ResolveTerminal names a terminal the way every terminal argument does
// (CONTRACT §10), among terms: an exact id, else an exact name when
// unique, else a unique id prefix. Ambiguity is a usage error listing the
// candidates; no match is not_found, suggesting a near id or name.
func ResolveTerminal(word string, terms []Named) (string, error) {
	var byName, byPrefix, known []string
	for _, t := range terms {
		if t.ID == word {
			return word, nil
		}
		known = append(known, t.ID, t.Name)
		if t.Name == word {
			byName = append(byName, t.ID)
		}
		if strings.HasPrefix(t.ID, word) {
			byPrefix = append(byPrefix, t.ID)
		}
	}
	for _, ids := range [][]string{byName, byPrefix} {
		switch {
		case len(ids) == 1:
			return ids[0], nil
		case len(ids) > 1:
			return "", Errorf(KindUsage, "%q names %d terminals (%s): use one of their ids", word, len(ids), strings.Join(ids, ", ")).
				WithDetails("candidates", ids)
		}
	}
	// A near id or name (CONTRACT §18: within two edits) is suggested.
	near := Suggest(word, known, false)
	e := Errorf(KindNotFound, "no terminal %q%s: call terminal_list to see the terminals", word, DidYouMean(near))
	if len(near) > 0 {
		e = e.WithDetails("suggestions", near)
	}
	return "", e
}
