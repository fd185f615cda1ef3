package termquery

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func TestLines(t *testing.T) {
	t.Parallel()
	lines := []string{"[ OK ]  [ Cancel ]", "日本 OK", "", "okOKok"}
	got := Lines(lines, 7, "OK", nil)
	want := []tools.QueryMatch{
		{Row: 0, Column: 2, Length: 2, Text: "OK", Ref: "screen:0,2,2@7"},
		// two wide characters and a space before it: cell 5
		{Row: 1, Column: 5, Length: 2, Text: "OK", Ref: "screen:1,5,2@7"},
		{Row: 3, Column: 2, Length: 2, Text: "OK", Ref: "screen:3,2,2@7"},
	}
	if a, b := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); a != b {
		t.Fatalf("text query:\n got %s\nwant %s", a, b)
	}
	re := regexp.MustCompile(`\[ *(\w+) *\]`)
	got = Lines(lines, 7, "", re)
	if len(got) != 2 || got[1].Text != "[ Cancel ]" || got[1].Column != 8 || got[1].Length != 10 {
		t.Fatalf("regex query: %+v", got)
	}
	// A match over a wide character counts its two cells.
	got = Lines(lines, 1, "本", nil)
	if len(got) != 1 || got[0].Column != 2 || got[0].Length != 2 {
		t.Fatalf("wide match: %+v", got)
	}
	if CellText(lines, 1, 5, 2) != "OK" || CellText(lines, 1, 2, 2) != "本" || CellText(lines, 9, 0, 1) != "" {
		t.Fatal("CellText")
	}
	// Zero-length regex matches are no matches.
	if got := Lines(lines, 1, "", regexp.MustCompile(`x*`)); len(got) != 0 {
		t.Fatalf("empty matches: %+v", got)
	}
}
