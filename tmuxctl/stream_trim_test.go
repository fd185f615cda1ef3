package tmuxctl

import (
	"bytes"
	"testing"
)

// A flood grows both buffers of a pane stream up to the backlog bound;
// Trim lets go of them once nothing is pending, the last Take's data
// stays intact and the stream goes on working.
func TestPaneStreamTrim(t *testing.T) {
	t.Parallel()
	p := newPaneStream("%1", DefaultPaneBacklog)
	big := bytes.Repeat([]byte("x"), 1<<20)
	p.appendEscaped(big)
	first := p.Take()
	p.appendEscaped(big)
	last := p.Take()
	if len(first.Data) != len(big) || len(last.Data) != len(big) {
		t.Fatalf("took %d and %d bytes", len(first.Data), len(last.Data))
	}
	p.Trim()
	p.mu.Lock()
	bufCap, spareCap := cap(p.buf), cap(p.spare)
	p.mu.Unlock()
	if bufCap > trimAbove || spareCap > trimAbove {
		t.Errorf("after Trim the buffers keep %d and %d bytes of capacity", bufCap, spareCap)
	}
	if !bytes.Equal(last.Data, big) {
		t.Error("Trim changed the data the last Take handed out")
	}
	p.appendEscaped([]byte("after"))
	if c := p.Take(); string(c.Data) != "after" || c.Total != uint64(2*len(big)+5) {
		t.Errorf("after Trim: took %q, total %d", c.Data, c.Total)
	}
	// Pending output is never dropped.
	p.appendEscaped(big)
	p.Trim()
	if c := p.Take(); len(c.Data) != len(big) {
		t.Errorf("Trim with output pending: took %d bytes, want %d", len(c.Data), len(big))
	}
}
