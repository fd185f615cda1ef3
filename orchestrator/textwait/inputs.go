package textwait

import "sync"

// MaxInputs bounds the inputs kept per terminal for echo masking.
const MaxInputs = 64

// Inputs are the inputs typed into one terminal, kept so a text wait is
// never satisfied by the terminal's echo of them: each with the
// terminal's revision just before it was sent. Safe for concurrent use;
// its lock is its own (taken inside a scan's turn, never across one).
type Inputs struct {
	mu   sync.Mutex // guards list and seq
	list []revInput
	seq  uint64 // the Seq of the last input recorded
}

type revInput struct {
	rev uint64
	Input
}

// Record keeps text typed at text-log offset at, with prefix the cursor
// row's text left of the cursor, sent when the terminal was at revision
// rev. Empty text is not kept.
func (in *Inputs) Record(rev, at uint64, prefix, text string) {
	if text == "" {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seq++
	in.list = append(in.list, revInput{rev: rev, Input: Input{Seq: in.seq, At: at, Prefix: prefix, Text: text}})
	if len(in.list) > MaxInputs {
		in.list = append([]revInput(nil), in.list[len(in.list)-MaxInputs:]...)
	}
}

// After returns the inputs sent at or after revision rev whose Seq is
// above seq, and the Seq of the last input recorded (Source.InputsAfter).
func (in *Inputs) After(rev, seq uint64) ([]Input, uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []Input
	for _, i := range in.list {
		if i.rev >= rev && i.Seq > seq {
			out = append(out, i.Input)
		}
	}
	return out, in.seq
}
