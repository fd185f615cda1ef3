package record

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// refParser is the hand-made model of x/ansi v0.11.7's parser that the
// tracker used before it stepped ansi.Parser itself (vtparse.go): its
// transition table generated the same way, parameters and commands packed
// the same way. It stays as a test's reference: FuzzParserMatchesReference
// shows the switch changed nothing the tracker reads, and
// BenchmarkVTParser measures the two (docs/CHOICES.md).

// Parser states, numbered as in x/ansi/parser.
const (
	rpsGround byte = iota
	rpsCsiEntry
	rpsCsiInter
	rpsCsiParam
	rpsDcsEntry
	rpsDcsInter
	rpsDcsParam
	rpsDcsString
	rpsEsc
	rpsEscInter
	rpsOsc
	rpsSos
	rpsPm
	rpsApc
	rpsUtf8
)

// Parser actions, numbered as in x/ansi/parser.
const (
	rpaNone byte = iota
	rpaClear
	rpaCollect
	rpaPrefix
	rpaDispatch
	rpaExecute
	rpaStart
	rpaPut
	rpaParam
	rpaPrint
)

const (
	rpMissing    = 0x7fffffff           // x/ansi's MissingParam (and MissingCommand)
	rpHasMore    = int(int32(-1 << 31)) // x/ansi's HasMoreFlag (sign-extended)
	rpMask       = ^rpHasMore           // x/ansi's ParamMask
	rpMaxParams  = 32
	roscDataSize = 64 << 10 // orchestrator/screen sets x/vt's parser data buffer to this
)

var refTable = refGenTable()

// refGenTable builds x/ansi's transition table: index state<<8|byte, value
// action<<4|next state. The order of the additions matters (later ones
// win), as in x/ansi's GenerateTransitionTable.
func refGenTable() *[4096]byte {
	var t [4096]byte
	set := func(code int, state, action, next byte) {
		t[int(state)<<8|code] = action<<4 | next
	}
	rng := func(lo, hi int, state, action, next byte) {
		for c := lo; c <= hi; c++ {
			set(c, state, action, next)
		}
	}
	// Every entry starts as "no action, to the ground state": zero.
	for s := rpsGround; s <= rpsUtf8; s++ {
		for _, c := range []int{0x18, 0x1a, 0x99, 0x9a} {
			set(c, s, rpaExecute, rpsGround)
		}
		rng(0x80, 0x8f, s, rpaExecute, rpsGround)
		rng(0x90, 0x97, s, rpaExecute, rpsGround)
		set(0x9c, s, rpaExecute, rpsGround)
		set(0x1b, s, rpaClear, rpsEsc)
		set(0x98, s, rpaStart, rpsSos)
		set(0x9e, s, rpaStart, rpsPm)
		set(0x9f, s, rpaStart, rpsApc)
		set(0x9b, s, rpaClear, rpsCsiEntry)
		set(0x90, s, rpaClear, rpsDcsEntry)
		set(0x9d, s, rpaStart, rpsOsc)
		rng(0xc2, 0xdf, s, rpaCollect, rpsUtf8)
		rng(0xe0, 0xef, s, rpaCollect, rpsUtf8)
		rng(0xf0, 0xf4, s, rpaCollect, rpsUtf8)
	}
	// Ground
	rng(0x00, 0x17, rpsGround, rpaExecute, rpsGround)
	set(0x19, rpsGround, rpaExecute, rpsGround)
	rng(0x1c, 0x1f, rpsGround, rpaExecute, rpsGround)
	rng(0x20, 0x7e, rpsGround, rpaPrint, rpsGround)
	set(0x7f, rpsGround, rpaExecute, rpsGround)
	// EscapeIntermediate
	rng(0x00, 0x17, rpsEscInter, rpaExecute, rpsEscInter)
	set(0x19, rpsEscInter, rpaExecute, rpsEscInter)
	rng(0x1c, 0x1f, rpsEscInter, rpaExecute, rpsEscInter)
	rng(0x20, 0x2f, rpsEscInter, rpaCollect, rpsEscInter)
	set(0x7f, rpsEscInter, rpaNone, rpsEscInter)
	rng(0x30, 0x7e, rpsEscInter, rpaDispatch, rpsGround)
	// Escape
	rng(0x00, 0x17, rpsEsc, rpaExecute, rpsEsc)
	set(0x19, rpsEsc, rpaExecute, rpsEsc)
	rng(0x1c, 0x1f, rpsEsc, rpaExecute, rpsEsc)
	set(0x7f, rpsEsc, rpaNone, rpsEsc)
	rng(0x30, 0x4f, rpsEsc, rpaDispatch, rpsGround)
	rng(0x51, 0x57, rpsEsc, rpaDispatch, rpsGround)
	set(0x59, rpsEsc, rpaDispatch, rpsGround)
	set(0x5a, rpsEsc, rpaDispatch, rpsGround)
	set(0x5c, rpsEsc, rpaDispatch, rpsGround)
	rng(0x60, 0x7e, rpsEsc, rpaDispatch, rpsGround)
	rng(0x20, 0x2f, rpsEsc, rpaCollect, rpsEscInter)
	set('X', rpsEsc, rpaStart, rpsSos)
	set('^', rpsEsc, rpaStart, rpsPm)
	set('_', rpsEsc, rpaStart, rpsApc)
	set('P', rpsEsc, rpaClear, rpsDcsEntry)
	set('[', rpsEsc, rpaClear, rpsCsiEntry)
	set(']', rpsEsc, rpaStart, rpsOsc)
	// Sos/Pm/Apc strings
	for s := rpsSos; s <= rpsApc; s++ {
		rng(0x00, 0x17, s, rpaPut, s)
		set(0x19, s, rpaPut, s)
		rng(0x1c, 0x1f, s, rpaPut, s)
		rng(0x20, 0x7f, s, rpaPut, s)
		set(0x1b, s, rpaDispatch, rpsEsc)
		set(0x9c, s, rpaDispatch, rpsGround)
		set(0x18, s, rpaNone, rpsGround)
		set(0x1a, s, rpaNone, rpsGround)
	}
	// DcsEntry
	rng(0x00, 0x07, rpsDcsEntry, rpaNone, rpsDcsEntry)
	rng(0x0e, 0x17, rpsDcsEntry, rpaNone, rpsDcsEntry)
	set(0x19, rpsDcsEntry, rpaNone, rpsDcsEntry)
	rng(0x1c, 0x1f, rpsDcsEntry, rpaNone, rpsDcsEntry)
	set(0x7f, rpsDcsEntry, rpaNone, rpsDcsEntry)
	rng(0x20, 0x2f, rpsDcsEntry, rpaCollect, rpsDcsInter)
	rng(0x30, 0x3b, rpsDcsEntry, rpaParam, rpsDcsParam)
	rng(0x3c, 0x3f, rpsDcsEntry, rpaPrefix, rpsDcsParam)
	rng(0x08, 0x0d, rpsDcsEntry, rpaPut, rpsDcsString)
	set(0x1b, rpsDcsEntry, rpaPut, rpsDcsString)
	rng(0x40, 0x7e, rpsDcsEntry, rpaStart, rpsDcsString)
	// DcsIntermediate
	rng(0x00, 0x17, rpsDcsInter, rpaNone, rpsDcsInter)
	set(0x19, rpsDcsInter, rpaNone, rpsDcsInter)
	rng(0x1c, 0x1f, rpsDcsInter, rpaNone, rpsDcsInter)
	rng(0x20, 0x2f, rpsDcsInter, rpaCollect, rpsDcsInter)
	set(0x7f, rpsDcsInter, rpaNone, rpsDcsInter)
	rng(0x30, 0x3f, rpsDcsInter, rpaStart, rpsDcsString)
	rng(0x40, 0x7e, rpsDcsInter, rpaStart, rpsDcsString)
	// DcsParam
	rng(0x00, 0x17, rpsDcsParam, rpaNone, rpsDcsParam)
	set(0x19, rpsDcsParam, rpaNone, rpsDcsParam)
	rng(0x1c, 0x1f, rpsDcsParam, rpaNone, rpsDcsParam)
	rng(0x30, 0x3b, rpsDcsParam, rpaParam, rpsDcsParam)
	set(0x7f, rpsDcsParam, rpaNone, rpsDcsParam)
	rng(0x3c, 0x3f, rpsDcsParam, rpaNone, rpsDcsParam)
	rng(0x20, 0x2f, rpsDcsParam, rpaCollect, rpsDcsInter)
	rng(0x40, 0x7e, rpsDcsParam, rpaStart, rpsDcsString)
	// DcsString (passthrough)
	rng(0x00, 0x17, rpsDcsString, rpaPut, rpsDcsString)
	set(0x19, rpsDcsString, rpaPut, rpsDcsString)
	rng(0x1c, 0x1f, rpsDcsString, rpaPut, rpsDcsString)
	rng(0x20, 0x7e, rpsDcsString, rpaPut, rpsDcsString)
	set(0x7f, rpsDcsString, rpaPut, rpsDcsString)
	rng(0x80, 0xff, rpsDcsString, rpaPut, rpsDcsString)
	set(0x1b, rpsDcsString, rpaDispatch, rpsEsc)
	set(0x9c, rpsDcsString, rpaDispatch, rpsGround)
	set(0x18, rpsDcsString, rpaNone, rpsGround)
	set(0x1a, rpsDcsString, rpaNone, rpsGround)
	// CsiParam
	rng(0x00, 0x17, rpsCsiParam, rpaExecute, rpsCsiParam)
	set(0x19, rpsCsiParam, rpaExecute, rpsCsiParam)
	rng(0x1c, 0x1f, rpsCsiParam, rpaExecute, rpsCsiParam)
	rng(0x30, 0x3b, rpsCsiParam, rpaParam, rpsCsiParam)
	set(0x7f, rpsCsiParam, rpaNone, rpsCsiParam)
	rng(0x3c, 0x3f, rpsCsiParam, rpaNone, rpsCsiParam)
	rng(0x40, 0x7e, rpsCsiParam, rpaDispatch, rpsGround)
	rng(0x20, 0x2f, rpsCsiParam, rpaCollect, rpsCsiInter)
	// CsiIntermediate
	rng(0x00, 0x17, rpsCsiInter, rpaExecute, rpsCsiInter)
	set(0x19, rpsCsiInter, rpaExecute, rpsCsiInter)
	rng(0x1c, 0x1f, rpsCsiInter, rpaExecute, rpsCsiInter)
	rng(0x20, 0x2f, rpsCsiInter, rpaCollect, rpsCsiInter)
	set(0x7f, rpsCsiInter, rpaNone, rpsCsiInter)
	rng(0x40, 0x7e, rpsCsiInter, rpaDispatch, rpsGround)
	rng(0x30, 0x3f, rpsCsiInter, rpaNone, rpsGround)
	// CsiEntry
	rng(0x00, 0x17, rpsCsiEntry, rpaExecute, rpsCsiEntry)
	set(0x19, rpsCsiEntry, rpaExecute, rpsCsiEntry)
	rng(0x1c, 0x1f, rpsCsiEntry, rpaExecute, rpsCsiEntry)
	set(0x7f, rpsCsiEntry, rpaNone, rpsCsiEntry)
	rng(0x40, 0x7e, rpsCsiEntry, rpaDispatch, rpsGround)
	rng(0x20, 0x2f, rpsCsiEntry, rpaCollect, rpsCsiInter)
	rng(0x30, 0x3b, rpsCsiEntry, rpaParam, rpsCsiParam)
	rng(0x3c, 0x3f, rpsCsiEntry, rpaPrefix, rpsCsiParam)
	// OscString
	rng(0x00, 0x06, rpsOsc, rpaNone, rpsOsc)
	rng(0x08, 0x17, rpsOsc, rpaNone, rpsOsc)
	set(0x19, rpsOsc, rpaNone, rpsOsc)
	rng(0x1c, 0x1f, rpsOsc, rpaNone, rpsOsc)
	rng(0x20, 0xff, rpsOsc, rpaPut, rpsOsc)
	set(0x1b, rpsOsc, rpaDispatch, rpsEsc)
	set(0x07, rpsOsc, rpaDispatch, rpsGround)
	set(0x9c, rpsOsc, rpaDispatch, rpsGround)
	set(0x18, rpsOsc, rpaNone, rpsGround)
	set(0x1a, rpsOsc, rpaNone, rpsGround)
	return &t
}

// refParser mirrors x/ansi's Parser.
type refParser struct {
	state     byte
	params    [rpMaxParams]int
	paramsLen int
	cmd       int
	data      []byte // OSC data only (cap roscDataSize)
	utf8      [utf8.UTFMax]byte
	utf8n     int
	// Outputs of the last step.
	r      rune
	ctl    byte
	oscCmd int
}

func (p *refParser) clear() {
	p.params[0] = rpMissing
	p.paramsLen = 0
	p.cmd = 0
}

// step advances the parser by one byte and reports what it did.
func (p *refParser) step(b byte) int {
	if p.state == rpsUtf8 {
		if p.utf8n < utf8.UTFMax {
			p.utf8[p.utf8n] = b
			p.utf8n++
		}
		if p.utf8n < refUtf8Len(p.utf8[0]) {
			return evNone
		}
		p.r, _ = utf8.DecodeRune(p.utf8[:p.utf8n])
		p.state = rpsGround
		p.utf8n = 0
		p.paramsLen = 0
		return evPrint
	}
	v := refTable[int(p.state)<<8|int(b)]
	next, action := v&15, v>>4
	if p.state != next && p.state == rpsEsc {
		p.clear()
	}
	ev := evNone
	if b == 0x1b && p.state == rpsEsc {
		p.ctl, p.cmd = b, int(b) // as for any control (see perform)
		ev = evExecute
	} else {
		ev = p.perform(action, next, b)
	}
	p.state = next
	return ev
}

func refUtf8Len(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b >= 0xc0 && b <= 0xdf:
		return 2
	case b >= 0xe0 && b <= 0xef:
		return 3
	case b >= 0xf0 && b <= 0xf7:
		return 4
	}
	return 1
}

func (p *refParser) perform(action, next, b byte) int {
	switch action {
	case rpaClear:
		p.clear()
	case rpaPrint:
		p.r = rune(b)
		return evPrint
	case rpaExecute:
		p.ctl = b
		// x/ansi also sets the command to the control (cmd = b), which
		// drops a sequence's prefix and intermediate when a control comes
		// inside it. The former table missed that (the one difference
		// FuzzParserMatchesReference found; TestControlInsideASequence
		// shows what it broke); the reference has it so the fuzz goes on
		// looking for others.
		p.cmd = int(b)
		return evExecute
	case rpaPrefix:
		p.cmd = p.cmd&^(0xff<<8) | int(b)<<8
	case rpaCollect:
		if next == rpsUtf8 {
			p.utf8[0] = b
			p.utf8n = 1
		} else {
			p.cmd = p.cmd&^(0xff<<16) | int(b)<<16
		}
	case rpaParam:
		if p.paramsLen >= rpMaxParams {
			break
		}
		if b >= '0' && b <= '9' {
			if p.params[p.paramsLen] == rpMissing {
				p.params[p.paramsLen] = 0
			}
			p.params[p.paramsLen] = p.params[p.paramsLen]*10 + int(b-'0')
		}
		if b == ':' {
			p.params[p.paramsLen] |= rpHasMore
		}
		if b == ';' || b == ':' {
			p.paramsLen++
			if p.paramsLen < rpMaxParams {
				p.params[p.paramsLen] = rpMissing
			}
		}
	case rpaStart:
		p.data = p.data[:0]
		if p.state >= rpsDcsEntry && p.state <= rpsDcsString {
			p.cmd |= int(b)
		} else {
			p.cmd = rpMissing
		}
	case rpaPut:
		if p.state == rpsOsc {
			if b == ';' && p.cmd == rpMissing {
				p.parseOscCmd()
			}
			if len(p.data) < roscDataSize {
				p.data = append(p.data, b)
			}
		}
	case rpaDispatch:
		if p.paramsLen > 0 && p.paramsLen < rpMaxParams-1 || p.paramsLen == 0 && p.params[0] != rpMissing {
			p.paramsLen++
		}
		switch p.state {
		case rpsCsiEntry, rpsCsiParam, rpsCsiInter:
			p.cmd |= int(b)
			return evCsi
		case rpsEsc, rpsEscInter:
			p.cmd |= int(b)
			return evEsc
		case rpsOsc:
			if p.cmd == rpMissing {
				p.parseOscCmd()
			}
			p.oscCmd = p.cmd
			return evOsc
		case rpsDcsEntry, rpsDcsParam, rpsDcsInter, rpsDcsString, rpsSos, rpsPm, rpsApc:
			return evString
		}
	}
	return evNone
}

// parseOscCmd is x/ansi's parseStringCmd: the leading digits of the data.
func (p *refParser) parseOscCmd() {
	for _, d := range p.data {
		if d < '0' || d > '9' {
			break
		}
		if p.cmd == rpMissing {
			p.cmd = 0
		}
		p.cmd = p.cmd*10 + int(d-'0')
	}
}

// Command bytes of a dispatched CSI or ESC sequence.
func (p *refParser) final() byte  { return byte(p.cmd) }
func (p *refParser) prefix() byte { return byte(p.cmd >> 8) }
func (p *refParser) inter() byte  { return byte(p.cmd >> 16) }

// stepBoth feeds b to both parsers and reports the first difference in
// what the tracker reads.
func stepBoth(t testing.TB, got *vtParser, want *refParser, b byte, at int) {
	evG, evW := got.step(b), want.step(b)
	if evG != evW || got.state() != want.state {
		t.Fatalf("byte %d (%#x): event %d state %d, the reference %d state %d", at, b, evG, got.state(), evW, want.state)
	}
	switch evG {
	case evPrint:
		if got.r != want.r {
			t.Fatalf("byte %d: printed %q, the reference %q", at, got.r, want.r)
		}
	case evExecute:
		if got.ctl != want.ctl {
			t.Fatalf("byte %d: executed %#x, the reference %#x", at, got.ctl, want.ctl)
		}
	case evCsi, evEsc:
		if got.final() != want.final() || got.prefix() != want.prefix() || got.inter() != want.inter() {
			t.Fatalf("byte %d: command %#x, the reference %#x", at, got.cmd, want.cmd)
		}
		if evG == evCsi {
			if got.paramsLen != want.paramsLen || !slices.Equal(got.params[:got.paramsLen], want.params[:want.paramsLen]) {
				t.Fatalf("byte %d: params %v, the reference %v", at, got.params[:got.paramsLen], want.params[:want.paramsLen])
			}
		}
	case evOsc:
		if got.oscCmd != want.oscCmd || string(got.data) != string(want.data) {
			t.Fatalf("byte %d: OSC %d %q, the reference %d %q", at, got.oscCmd, got.data, want.oscCmd, want.data)
		}
	}
}

func newRefParser() *refParser {
	p := &refParser{data: make([]byte, 0, 256)}
	p.clear()
	return p
}

// Whatever the bytes, x/ansi's parser does at each one what the former
// hand-made table did: the same event, state, rune, control, command,
// parameters and OSC data.
func FuzzParserMatchesReference(f *testing.F) {
	for _, s := range []string{
		"plain \x1b[1;31mred\x1b[0m \x1b[?1049h\x1b[2J\x1b[?1049l",
		"\x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
		"\x1bP1$r0m\x1b\\\x1b_apc\x1b\\\x1b^pm\x9c\x1bXsos\x1b\\",
		"\x1b\x1b[A\x1b(0lqk\x1b(B\x1b7\x1b8\x1b#8\x1b[3 q",
		"é漢😀\xc2A\xe0\x80\xff\x9b1;2H\x9d2;t\x07\x90q\x9c",
		"\x1b[38:2:1:2:3m\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33;34m",
		"\x1b[1\x18\x1b[2\x1a\x1b[<0;1;2M\x1b[>c\x1b[?25$p\x1b[4!p\x7f\x00\x0e\x0f",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := newVTParser(), newRefParser()
		for i, b := range data {
			stepBoth(t, &got, want, b, i)
		}
	})
}

// The flood of BenchmarkRecorderOutput goes through both alike.
func TestParserMatchesReferenceOnFlood(t *testing.T) {
	t.Parallel()
	got, want := newVTParser(), newRefParser()
	i := 0
	for _, c := range floodChunks(1 << 20) {
		for _, b := range c {
			stepBoth(t, &got, want, b, i)
			i++
		}
	}
}

// BenchmarkVTParser compares x/ansi's parser (what the tracker steps now)
// with the former hand-made table on 40 MB of flood-like coloured log
// output (floodChunks): "every-byte" steps each byte; "feeder" skips runs
// of printable ASCII in the ground state as feeder.scan does, so only
// escape sequences, controls and UTF-8 reach the parser.
func BenchmarkVTParser(b *testing.B) {
	const size = 40 << 20
	chunks := floodChunks(size)
	for _, mode := range []string{"every-byte", "feeder"} {
		skip := mode == "feeder"
		b.Run(mode+"/ansi", func(b *testing.B) {
			b.SetBytes(size)
			p := newVTParser()
			n := 0
			for b.Loop() {
				for _, c := range chunks {
					for _, x := range c {
						if skip && x >= 0x20 && x < 0x7f && p.state() == psGround {
							continue
						}
						n += p.step(x)
					}
				}
			}
			if n == 0 {
				b.Fatal("no events")
			}
		})
		b.Run(mode+"/table", func(b *testing.B) {
			b.SetBytes(size)
			p := newRefParser()
			n := 0
			for b.Loop() {
				for _, c := range chunks {
					for _, x := range c {
						if skip && x >= 0x20 && x < 0x7f && p.state == rpsGround {
							continue
						}
						n += p.step(x)
					}
				}
			}
			if n == 0 {
				b.Fatal("no events")
			}
		})
	}
}
