package screen

import "github.com/charmbracelet/x/ansi"

// Point is where input typed now lands: the revision, the end of the
// text log (the text after it is the output that follows the input) and
// the text of the cursor's row left of the cursor (the prompt the input
// follows). Text waits use it to tell the terminal's echo of the input
// from output that merely contains it.
type Point struct {
	Revision uint64
	TextEnd  uint64
	Prefix   string
}

// InputPoint returns the Point of input typed now, taken atomically.
func (s *Screen) InputPoint() Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Point{Revision: s.rev, TextEnd: s.text.end()}
	if y := s.cursor.Y; y >= 0 && y < len(s.lines) {
		p.Prefix = cellPrefix(s.lines[y], s.cursor.X)
	}
	return p
}

// cellPrefix is the part of a published row (trailing spaces trimmed, a
// wide character one string position) in its first cols cells, padded
// with spaces to cols cells when the row is shorter.
func cellPrefix(row string, cols int) string {
	w := 0
	for i, r := range row {
		if w >= cols {
			return row[:i]
		}
		w += max(ansi.StringWidth(string(r)), 1)
	}
	if w < cols {
		pad := make([]byte, cols-w)
		for i := range pad {
			pad[i] = ' '
		}
		return row + string(pad)
	}
	return row
}
