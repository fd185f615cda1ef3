package record

import "unicode/utf8"

// A byte-for-byte model of the escape-sequence parser that x/vt v0.1.0
// uses (github.com/charmbracelet/x/ansi v0.11.7: its DEC ANSI transition
// table with a UTF-8 state, parameters and commands packed the same way).
// The replay needs to know, at any byte, what the emulator's parser is
// doing (to cut writes only where that changes nothing, and to see the
// sequences that change state the snapshot does not show). Importing the
// parser would put x/ansi among this package's dependencies; the table is
// small, so it is generated here the same way. The replay tests compare
// every shortcut built on it against a plain replay.

// Parser states, numbered as in x/ansi/parser.
const (
	psGround byte = iota
	psCsiEntry
	psCsiInter
	psCsiParam
	psDcsEntry
	psDcsInter
	psDcsParam
	psDcsString
	psEsc
	psEscInter
	psOsc
	psSos
	psPm
	psApc
	psUtf8
)

// Parser actions, numbered as in x/ansi/parser.
const (
	paNone byte = iota
	paClear
	paCollect
	paPrefix
	paDispatch
	paExecute
	paStart
	paPut
	paParam
	paPrint
)

const (
	pMissing    = 0x7fffffff           // x/ansi's MissingParam (and MissingCommand)
	pHasMore    = int(int32(-1 << 31)) // x/ansi's HasMoreFlag (sign-extended)
	pMask       = ^pHasMore            // x/ansi's ParamMask
	pMaxParams  = 32
	oscDataSize = 64 << 10 // orchestrator/screen sets x/vt's parser data buffer to this
)

var vtTable = genTable()

// genTable builds x/ansi's transition table: index state<<8|byte, value
// action<<4|next state. The order of the additions matters (later ones
// win), as in x/ansi's GenerateTransitionTable.
func genTable() *[4096]byte {
	var t [4096]byte
	set := func(code int, state, action, next byte) {
		t[int(state)<<8|code] = action<<4 | next
	}
	rng := func(lo, hi int, state, action, next byte) {
		for c := lo; c <= hi; c++ {
			set(c, state, action, next)
		}
	}
	for i := range t {
		//lint:ignore SA4016 psGround is state 0 on purpose: by default a byte does nothing and returns to ground
		t[i] = paNone<<4 | psGround
	}
	for s := psGround; s <= psUtf8; s++ {
		for _, c := range []int{0x18, 0x1a, 0x99, 0x9a} {
			set(c, s, paExecute, psGround)
		}
		rng(0x80, 0x8f, s, paExecute, psGround)
		rng(0x90, 0x97, s, paExecute, psGround)
		set(0x9c, s, paExecute, psGround)
		set(0x1b, s, paClear, psEsc)
		set(0x98, s, paStart, psSos)
		set(0x9e, s, paStart, psPm)
		set(0x9f, s, paStart, psApc)
		set(0x9b, s, paClear, psCsiEntry)
		set(0x90, s, paClear, psDcsEntry)
		set(0x9d, s, paStart, psOsc)
		rng(0xc2, 0xdf, s, paCollect, psUtf8)
		rng(0xe0, 0xef, s, paCollect, psUtf8)
		rng(0xf0, 0xf4, s, paCollect, psUtf8)
	}
	// Ground
	rng(0x00, 0x17, psGround, paExecute, psGround)
	set(0x19, psGround, paExecute, psGround)
	rng(0x1c, 0x1f, psGround, paExecute, psGround)
	rng(0x20, 0x7e, psGround, paPrint, psGround)
	set(0x7f, psGround, paExecute, psGround)
	// EscapeIntermediate
	rng(0x00, 0x17, psEscInter, paExecute, psEscInter)
	set(0x19, psEscInter, paExecute, psEscInter)
	rng(0x1c, 0x1f, psEscInter, paExecute, psEscInter)
	rng(0x20, 0x2f, psEscInter, paCollect, psEscInter)
	set(0x7f, psEscInter, paNone, psEscInter)
	rng(0x30, 0x7e, psEscInter, paDispatch, psGround)
	// Escape
	rng(0x00, 0x17, psEsc, paExecute, psEsc)
	set(0x19, psEsc, paExecute, psEsc)
	rng(0x1c, 0x1f, psEsc, paExecute, psEsc)
	set(0x7f, psEsc, paNone, psEsc)
	rng(0x30, 0x4f, psEsc, paDispatch, psGround)
	rng(0x51, 0x57, psEsc, paDispatch, psGround)
	set(0x59, psEsc, paDispatch, psGround)
	set(0x5a, psEsc, paDispatch, psGround)
	set(0x5c, psEsc, paDispatch, psGround)
	rng(0x60, 0x7e, psEsc, paDispatch, psGround)
	rng(0x20, 0x2f, psEsc, paCollect, psEscInter)
	set('X', psEsc, paStart, psSos)
	set('^', psEsc, paStart, psPm)
	set('_', psEsc, paStart, psApc)
	set('P', psEsc, paClear, psDcsEntry)
	set('[', psEsc, paClear, psCsiEntry)
	set(']', psEsc, paStart, psOsc)
	// Sos/Pm/Apc strings
	for s := psSos; s <= psApc; s++ {
		rng(0x00, 0x17, s, paPut, s)
		set(0x19, s, paPut, s)
		rng(0x1c, 0x1f, s, paPut, s)
		rng(0x20, 0x7f, s, paPut, s)
		set(0x1b, s, paDispatch, psEsc)
		set(0x9c, s, paDispatch, psGround)
		set(0x18, s, paNone, psGround)
		set(0x1a, s, paNone, psGround)
	}
	// DcsEntry
	rng(0x00, 0x07, psDcsEntry, paNone, psDcsEntry)
	rng(0x0e, 0x17, psDcsEntry, paNone, psDcsEntry)
	set(0x19, psDcsEntry, paNone, psDcsEntry)
	rng(0x1c, 0x1f, psDcsEntry, paNone, psDcsEntry)
	set(0x7f, psDcsEntry, paNone, psDcsEntry)
	rng(0x20, 0x2f, psDcsEntry, paCollect, psDcsInter)
	rng(0x30, 0x3b, psDcsEntry, paParam, psDcsParam)
	rng(0x3c, 0x3f, psDcsEntry, paPrefix, psDcsParam)
	rng(0x08, 0x0d, psDcsEntry, paPut, psDcsString)
	set(0x1b, psDcsEntry, paPut, psDcsString)
	rng(0x40, 0x7e, psDcsEntry, paStart, psDcsString)
	// DcsIntermediate
	rng(0x00, 0x17, psDcsInter, paNone, psDcsInter)
	set(0x19, psDcsInter, paNone, psDcsInter)
	rng(0x1c, 0x1f, psDcsInter, paNone, psDcsInter)
	rng(0x20, 0x2f, psDcsInter, paCollect, psDcsInter)
	set(0x7f, psDcsInter, paNone, psDcsInter)
	rng(0x30, 0x3f, psDcsInter, paStart, psDcsString)
	rng(0x40, 0x7e, psDcsInter, paStart, psDcsString)
	// DcsParam
	rng(0x00, 0x17, psDcsParam, paNone, psDcsParam)
	set(0x19, psDcsParam, paNone, psDcsParam)
	rng(0x1c, 0x1f, psDcsParam, paNone, psDcsParam)
	rng(0x30, 0x3b, psDcsParam, paParam, psDcsParam)
	set(0x7f, psDcsParam, paNone, psDcsParam)
	rng(0x3c, 0x3f, psDcsParam, paNone, psDcsParam)
	rng(0x20, 0x2f, psDcsParam, paCollect, psDcsInter)
	rng(0x40, 0x7e, psDcsParam, paStart, psDcsString)
	// DcsString (passthrough)
	rng(0x00, 0x17, psDcsString, paPut, psDcsString)
	set(0x19, psDcsString, paPut, psDcsString)
	rng(0x1c, 0x1f, psDcsString, paPut, psDcsString)
	rng(0x20, 0x7e, psDcsString, paPut, psDcsString)
	set(0x7f, psDcsString, paPut, psDcsString)
	rng(0x80, 0xff, psDcsString, paPut, psDcsString)
	set(0x1b, psDcsString, paDispatch, psEsc)
	set(0x9c, psDcsString, paDispatch, psGround)
	set(0x18, psDcsString, paNone, psGround)
	set(0x1a, psDcsString, paNone, psGround)
	// CsiParam
	rng(0x00, 0x17, psCsiParam, paExecute, psCsiParam)
	set(0x19, psCsiParam, paExecute, psCsiParam)
	rng(0x1c, 0x1f, psCsiParam, paExecute, psCsiParam)
	rng(0x30, 0x3b, psCsiParam, paParam, psCsiParam)
	set(0x7f, psCsiParam, paNone, psCsiParam)
	rng(0x3c, 0x3f, psCsiParam, paNone, psCsiParam)
	rng(0x40, 0x7e, psCsiParam, paDispatch, psGround)
	rng(0x20, 0x2f, psCsiParam, paCollect, psCsiInter)
	// CsiIntermediate
	rng(0x00, 0x17, psCsiInter, paExecute, psCsiInter)
	set(0x19, psCsiInter, paExecute, psCsiInter)
	rng(0x1c, 0x1f, psCsiInter, paExecute, psCsiInter)
	rng(0x20, 0x2f, psCsiInter, paCollect, psCsiInter)
	set(0x7f, psCsiInter, paNone, psCsiInter)
	rng(0x40, 0x7e, psCsiInter, paDispatch, psGround)
	rng(0x30, 0x3f, psCsiInter, paNone, psGround)
	// CsiEntry
	rng(0x00, 0x17, psCsiEntry, paExecute, psCsiEntry)
	set(0x19, psCsiEntry, paExecute, psCsiEntry)
	rng(0x1c, 0x1f, psCsiEntry, paExecute, psCsiEntry)
	set(0x7f, psCsiEntry, paNone, psCsiEntry)
	rng(0x40, 0x7e, psCsiEntry, paDispatch, psGround)
	rng(0x20, 0x2f, psCsiEntry, paCollect, psCsiInter)
	rng(0x30, 0x3b, psCsiEntry, paParam, psCsiParam)
	rng(0x3c, 0x3f, psCsiEntry, paPrefix, psCsiParam)
	// OscString
	rng(0x00, 0x06, psOsc, paNone, psOsc)
	rng(0x08, 0x17, psOsc, paNone, psOsc)
	set(0x19, psOsc, paNone, psOsc)
	rng(0x1c, 0x1f, psOsc, paNone, psOsc)
	rng(0x20, 0xff, psOsc, paPut, psOsc)
	set(0x1b, psOsc, paDispatch, psEsc)
	set(0x07, psOsc, paDispatch, psGround)
	set(0x9c, psOsc, paDispatch, psGround)
	set(0x18, psOsc, paNone, psGround)
	set(0x1a, psOsc, paNone, psGround)
	return &t
}

// What one byte did, for the tracker.
const (
	evNone    = iota // collected, ignored, or a sequence still going on
	evPrint          // a rune was printed (vp.r)
	evExecute        // a control was executed (vp.ctl)
	evCsi            // a CSI sequence was dispatched (vp.cmd, vp.params())
	evEsc            // an ESC sequence was dispatched (vp.cmd)
	evOsc            // an OSC sequence was dispatched (vp.oscCmd, vp.data)
	evString         // a DCS, SOS, PM or APC sequence was dispatched
)

// vtParser mirrors x/ansi's Parser.
type vtParser struct {
	state     byte
	params    [pMaxParams]int
	paramsLen int
	cmd       int
	data      []byte // OSC data only (cap oscDataSize)
	utf8      [utf8.UTFMax]byte
	utf8n     int
	// Outputs of the last step.
	r      rune
	ctl    byte
	oscCmd int
}

func (p *vtParser) clear() {
	p.params[0] = pMissing
	p.paramsLen = 0
	p.cmd = 0
}

// step advances the parser by one byte and reports what it did.
func (p *vtParser) step(b byte) int {
	if p.state == psUtf8 {
		if p.utf8n < utf8.UTFMax {
			p.utf8[p.utf8n] = b
			p.utf8n++
		}
		if p.utf8n < utf8Len(p.utf8[0]) {
			return evNone
		}
		p.r, _ = utf8.DecodeRune(p.utf8[:p.utf8n])
		p.state = psGround
		p.utf8n = 0
		p.paramsLen = 0
		return evPrint
	}
	v := vtTable[int(p.state)<<8|int(b)]
	next, action := v&15, v>>4
	if p.state != next && p.state == psEsc {
		p.clear()
	}
	ev := evNone
	if b == 0x1b && p.state == psEsc {
		p.ctl = b
		ev = evExecute
	} else {
		ev = p.perform(action, next, b)
	}
	p.state = next
	return ev
}

func utf8Len(b byte) int {
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

func (p *vtParser) perform(action, next, b byte) int {
	switch action {
	case paClear:
		p.clear()
	case paPrint:
		p.r = rune(b)
		return evPrint
	case paExecute:
		p.ctl = b
		return evExecute
	case paPrefix:
		p.cmd = p.cmd&^(0xff<<8) | int(b)<<8
	case paCollect:
		if next == psUtf8 {
			p.utf8[0] = b
			p.utf8n = 1
		} else {
			p.cmd = p.cmd&^(0xff<<16) | int(b)<<16
		}
	case paParam:
		if p.paramsLen >= pMaxParams {
			break
		}
		if b >= '0' && b <= '9' {
			if p.params[p.paramsLen] == pMissing {
				p.params[p.paramsLen] = 0
			}
			p.params[p.paramsLen] = p.params[p.paramsLen]*10 + int(b-'0')
		}
		if b == ':' {
			p.params[p.paramsLen] |= pHasMore
		}
		if b == ';' || b == ':' {
			p.paramsLen++
			if p.paramsLen < pMaxParams {
				p.params[p.paramsLen] = pMissing
			}
		}
	case paStart:
		p.data = p.data[:0]
		if p.state >= psDcsEntry && p.state <= psDcsString {
			p.cmd |= int(b)
		} else {
			p.cmd = pMissing
		}
	case paPut:
		if p.state == psOsc {
			if b == ';' && p.cmd == pMissing {
				p.parseOscCmd()
			}
			if len(p.data) < oscDataSize {
				p.data = append(p.data, b)
			}
		}
	case paDispatch:
		if p.paramsLen > 0 && p.paramsLen < pMaxParams-1 || p.paramsLen == 0 && p.params[0] != pMissing {
			p.paramsLen++
		}
		switch p.state {
		case psCsiEntry, psCsiParam, psCsiInter:
			p.cmd |= int(b)
			return evCsi
		case psEsc, psEscInter:
			p.cmd |= int(b)
			return evEsc
		case psOsc:
			if p.cmd == pMissing {
				p.parseOscCmd()
			}
			p.oscCmd = p.cmd
			return evOsc
		case psDcsEntry, psDcsParam, psDcsInter, psDcsString, psSos, psPm, psApc:
			return evString
		}
	}
	return evNone
}

// parseOscCmd is x/ansi's parseStringCmd: the leading digits of the data.
func (p *vtParser) parseOscCmd() {
	for _, d := range p.data {
		if d < '0' || d > '9' {
			break
		}
		if p.cmd == pMissing {
			p.cmd = 0
		}
		p.cmd = p.cmd*10 + int(d-'0')
	}
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
func (p *vtParser) prefix() byte { return byte(p.cmd >> 8) }
func (p *vtParser) inter() byte  { return byte(p.cmd >> 16) }
