package record

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// The replay needs to know, at any byte, what the emulator's parser is
// doing (to cut writes only where that changes nothing, and to see the
// sequences that change state the snapshot does not show). It steps the
// very parser x/vt v0.1.0 runs — x/ansi's ansi.Parser, with the data
// buffer orchestrator/screen gives it — one byte at a time, and reads
// what each byte did from the action it returns and the state before it.
// The replay tests compare every shortcut built on it against a plain
// replay; docs/CHOICES.md has the measurement against the hand-made copy
// of the table this replaced.

// Parser states (x/ansi/parser's).
const (
	psGround   = parser.GroundState
	psCsiEntry = parser.CsiEntryState
	psCsiInter = parser.CsiIntermediateState
	psCsiParam = parser.CsiParamState
	psDcsEntry = parser.DcsEntryState
	psDcsInter = parser.DcsIntermediateState
	psDcsParam = parser.DcsParamState
	psDcsStr   = parser.DcsStringState
	psEsc      = parser.EscapeState
	psEscInter = parser.EscapeIntermediateState
	psOsc      = parser.OscStringState
	psSos      = parser.SosStringState
	psPm       = parser.PmStringState
	psApc      = parser.ApcStringState
	psUtf8     = parser.Utf8State
)

const (
	pMissing    = parser.MissingParam
	pHasMore    = parser.HasMoreFlag
	pMask       = parser.ParamMask
	pMaxParams  = parser.MaxParamsSize
	oscDataSize = 64 << 10 // orchestrator/screen sets x/vt's parser data buffer to this
)

// What one byte did, for the tracker.
const (
	evNone    = iota // collected, ignored, or a sequence still going on
	evPrint          // a rune was printed (vp.r)
	evExecute        // a control was executed (vp.ctl)
	evCsi            // a CSI sequence was dispatched (vp.cmd, vp.params)
	evEsc            // an ESC sequence was dispatched (vp.cmd)
	evOsc            // an OSC sequence was dispatched (vp.oscCmd, vp.data)
	evString         // a DCS, SOS, PM or APC sequence was dispatched
)

// vtParser is x/ansi's parser and what its last byte did. A tracker's
// copy (a keyframe) shares the parser: it is taken only in the ground
// state, where a new parser is the same, and restore gives it one.
type vtParser struct {
	ap *ansi.Parser
	// Outputs of the last step.
	params    [pMaxParams]int // a dispatched CSI's parameters, packed as x/ansi packs them
	paramsLen int
	cmd       int    // a dispatched CSI's or ESC's command: final, prefix<<8, intermediate<<16
	data      []byte // a dispatched OSC's data (the parser's buffer: valid until the next step)
	r         rune
	ctl       byte
	oscCmd    int
}

func newVTParser() vtParser {
	ap := ansi.NewParser()
	ap.SetParamsSize(pMaxParams)
	ap.SetDataSize(oscDataSize)
	return vtParser{ap: ap}
}

// state is the parser's state (psGround, …).
func (p *vtParser) state() byte { return p.ap.State() }

// step advances the parser by one byte and reports what it did.
func (p *vtParser) step(b byte) int {
	old := p.ap.State()
	switch p.ap.Advance(b) {
	case parser.PrintAction:
		p.r = p.ap.Rune()
		return evPrint
	case parser.ExecuteAction:
		p.ctl = b
		return evExecute
	case parser.DispatchAction:
		switch old {
		case psCsiEntry, psCsiParam, psCsiInter:
			ps := p.ap.Params()
			p.paramsLen = len(ps)
			for i, v := range ps {
				p.params[i] = int(v)
			}
			p.cmd = p.ap.Command()
			return evCsi
		case psEsc, psEscInter:
			p.cmd = p.ap.Command()
			return evEsc
		case psOsc:
			p.oscCmd = p.ap.Command()
			p.data = p.ap.Data()
			return evOsc
		}
		return evString
	}
	if b == 0x1b && old == psEsc {
		// Two ESCs: the table says "clear", the parser executes the
		// first one (and returns the table's action).
		p.ctl = b
		return evExecute
	}
	return evNone
}

// param returns parameter i as x/ansi's Params.Param(i, def) does.
func (p *vtParser) param(i, def int) int {
	if i < 0 || i >= p.paramsLen {
		return def
	}
	v := p.params[i] & pMask
	if v == pMissing {
		return def
	}
	return v
}

// clampParam applies orchestrator/screen's clampParams to parameter i: a
// parameter above max becomes max (a missing one stays missing).
func (p *vtParser) clampParam(i, maxV int) {
	if i >= p.paramsLen {
		return
	}
	v := p.params[i] & pMask
	if v == pMissing {
		return
	}
	if v > maxV {
		p.params[i] = maxV
	}
}

// Command bytes of a dispatched CSI or ESC sequence.
func (p *vtParser) final() byte  { return byte(p.cmd) }
func (p *vtParser) prefix() byte { return byte(p.cmd >> parser.PrefixShift) }
func (p *vtParser) inter() byte  { return byte(p.cmd >> parser.IntermedShift) }
