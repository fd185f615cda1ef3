package screen

import "testing"

func TestInputPoint(t *testing.T) {
	t.Parallel()
	s := New(20, 4)
	defer s.Close()
	if err := s.Write([]byte("out\r\n日本$ ")); err != nil {
		t.Fatal(err)
	}
	pt := s.InputPoint()
	if pt.Prefix != "日本$ " || pt.Revision != s.Revision() {
		t.Fatalf("point %+v", pt)
	}
	_, _, end := s.AppendTextFrom(nil, 0, true)
	if pt.TextEnd != end {
		t.Fatalf("text end %d, the log ends at %d", pt.TextEnd, end)
	}
	if err := s.Write([]byte("\x1b[4;7H")); err != nil { // past the end of a blank row
		t.Fatal(err)
	}
	if got := s.InputPoint().Prefix; got != "      " {
		t.Fatalf("prefix on a blank row %q", got)
	}
}

// Text read in ranges, cut anywhere, is the text read at once, invalid
// bytes and all.
func TestAppendTextRangeJoins(t *testing.T) {
	t.Parallel()
	s := New(20, 4)
	defer s.Close()
	s.LogText([]byte("ab\xff\xfecd日本\xffe"))
	whole, _, end := s.AppendTextFrom(nil, 0, true)
	for cut := uint64(0); cut <= end; cut++ {
		b, _, mid := s.AppendTextRange(nil, 0, cut, true)
		b, _, _ = s.AppendTextRange(b, mid, end, len(b) == 0)
		if string(b) != string(whole) {
			t.Fatalf("cut at %d: %q, whole %q", cut, b, whole)
		}
	}
}
