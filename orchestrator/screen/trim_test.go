package screen

import (
	"bytes"
	"fmt"
	"testing"
)

// clip keeps exactly the last max bytes of the text log, at their
// absolute offsets, and gives back the capacity a burst left.
func TestTextLogClip(t *testing.T) {
	t.Parallel()
	l := textLog{max: 100 << 10}
	var all bytes.Buffer
	for i := 0; all.Len() < 120<<10; i++ {
		line := fmt.Sprintf("line %06d\n", i)
		all.WriteString(line)
		l.write([]byte(line))
	}
	end := l.end()
	if uint64(all.Len()) != end {
		t.Fatalf("end %d, wrote %d", end, all.Len())
	}
	l.clip()
	if l.end() != end || len(l.buf) != l.max || cap(l.buf) != len(l.buf) {
		t.Fatalf("after clip: end %d (want %d), len %d (max %d), cap %d", l.end(), end, len(l.buf), l.max, cap(l.buf))
	}
	off := end - uint64(l.max)
	got, ok := l.since(off)
	if !ok || got != all.String()[off:] {
		t.Errorf("since(%d) after clip: ok %v, %d bytes, want the last %d written", off, ok, len(got), l.max)
	}
	if _, ok := l.since(off - 1); ok {
		t.Error("an offset before the kept text is still readable")
	}
	l.write([]byte("more\n"))
	if got, _ := l.since(end); got != "more\n" {
		t.Errorf("after clip, new text reads %q", got)
	}
}
