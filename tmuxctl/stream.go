package tmuxctl

import "sync"

// DefaultPaneBacklog is how many undelivered output bytes a pane may hold
// before its consumer is declared behind and the backlog is dropped.
const DefaultPaneBacklog = 8 << 20

// PaneStream is the decoded output of one pane, in order, as a byte
// stream. The client's reader appends to it without ever waiting; the
// consumer takes what has accumulated. If more than the backlog bound
// accumulates, the backlog is dropped and the next Take reports Lost: the
// consumer must then reseed its view of the pane from tmux.
type PaneStream struct {
	pane  string
	limit int
	ready chan struct{} // capacity 1: "there is something to Take"

	// dirty is owned by the client's reader goroutine: output was appended
	// and not yet signalled.
	dirty bool

	mu     sync.Mutex // guards the fields below
	buf    []byte
	spare  []byte // the buffer handed out by the previous Take, reused
	lost   bool   // bytes were dropped since the last Take
	paused bool   // tmux paused the pane (%pause) since the last Take
	total  uint64
}

func newPaneStream(pane string, limit int) *PaneStream {
	return &PaneStream{pane: pane, limit: limit, ready: make(chan struct{}, 1)}
}

// Pane returns the pane id, e.g. "%3".
func (p *PaneStream) Pane() string { return p.pane }

// Ready is signalled (it has capacity one) whenever Take has something new
// to report. Consumers select on it; they never poll.
func (p *PaneStream) Ready() <-chan struct{} { return p.ready }

// Chunk is what Take returns.
type Chunk struct {
	Data   []byte // the bytes accumulated since the last Take, in order
	Lost   bool   // output was dropped (backlog bound passed): reseed
	Paused bool   // tmux paused the pane: Continue it and reseed
	Total  uint64 // bytes ever received for the pane, including dropped ones
}

// Take returns and clears what has accumulated. Chunk.Data is valid until
// the next Take (its memory is reused then); a stream has one consumer.
func (p *PaneStream) Take() Chunk {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Chunk{Data: p.buf, Lost: p.lost, Paused: p.paused, Total: p.total}
	p.buf, p.spare = p.spare[:0], p.buf
	p.lost, p.paused = false, false
	return c
}

func (p *PaneStream) signal() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// appendEscaped decodes a %output payload straight into the buffer. The
// reader signals Ready later, once per burst (see clientSink.flush).
func (p *PaneStream) appendEscaped(escaped []byte) {
	p.mu.Lock()
	before := len(p.buf)
	p.buf = AppendDecoded(p.buf, escaped)
	n := len(p.buf) - before
	p.total += uint64(n)
	if len(p.buf) > p.limit {
		p.buf = p.buf[:0]
		p.lost = true
	}
	p.mu.Unlock()
}

func (p *PaneStream) markPaused() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	p.signal()
}

// Total returns how many bytes the pane has sent so far, including any
// dropped ones.
func (p *PaneStream) Total() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Pending reports whether Take has something to return.
func (p *PaneStream) Pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.buf) > 0 || p.lost || p.paused
}

// trimAbove is the buffer capacity Trim keeps.
const trimAbove = 64 << 10

// Trim lets go of the buffers' memory beyond trimAbove while nothing is
// pending, so that a quiet pane holds none of a flood's backlog (up to
// the backlog bound twice: the buffer and the one the last Take handed
// out). The last Take's Data stays valid for whoever holds it; the next
// Take allocates afresh. Its one consumer calls it once it is done with
// that Data.
func (p *PaneStream) Trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) == 0 && cap(p.buf) > trimAbove {
		p.buf = nil
	}
	if cap(p.spare) > trimAbove {
		p.spare = nil
	}
}
