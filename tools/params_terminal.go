package tools

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Arguments and cross-argument rules of termwright's terminal tools
// (CONTRACT §11): terminal_query, the mouse operations, terminal_write_raw
// and the logs of terminal_launch.

// Limits of the mouse operations and of application logs.
const (
	// MaxWheelDelta bounds terminal_wheel's delta_y (notches either way).
	MaxWheelDelta = 100
	// MaxLogs is how many logs one node may follow.
	MaxLogs = 16
	// MaxLogLines is how many log lines are kept per node.
	MaxLogLines = 1000
	// MaxRawBytes caps terminal_write_raw's bytes after decoding.
	MaxRawBytes = 48 << 10
)

func cellFields(what string) []Param {
	return []Param{
		required(intParam("row", "0-based row of the "+what+" (0 is the top row, as in lines[row]).", intPtr(0), intPtr(MaxRows-1))),
		required(intParam("column", "0-based cell column of the "+what+".", intPtr(0), intPtr(MaxColumns-1))),
	}
}

var (
	paramLogs = Param{Name: "logs", Type: TypeStructArray, NonEmpty: true, MaxItems: MaxLogs,
		Description: fmt.Sprintf("Application log files to follow from their current end (at most %d): terminal_capture_since returns their new lines with label and time. A file that does not exist yet is followed once it appears (terminal_capabilities lists it in logs_missing); a directory or an unreadable file refuses the launch.", MaxLogs),
		Fields: []Param{
			{Name: "path", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 4096, Description: "The log file: absolute, or relative to cwd; its directory must exist."},
			{Name: "label", Type: TypeString, NonEmpty: true, MaxLen: 64, Description: "Name shown with each line (default: the file's base name); unique per node."},
		}}
	paramQueryText    = Param{Name: "text", Type: TypeString, NonEmpty: true, MaxLen: 4096, Description: "Literal text to find (give text or pattern)."}
	paramQueryPattern = Param{Name: "pattern", Type: TypeString, NonEmpty: true, MaxLen: 4096, Description: "Go RE2 regular expression to find, matched against each row (give text or pattern)."}
	paramQueryNth     = intParam("nth", "Return only the nth match (1 is the first, in reading order); default: every match.", intPtr(1), intPtr(MaxRows*MaxColumns))

	paramAt  = Param{Name: "at", Type: TypeStruct, Fields: cellFields("cell"), Description: "The cell {row, column} (0-based). Give at or ref, not both."}
	paramRef = Param{Name: "ref", Type: TypeString, NonEmpty: true, MaxLen: 128,
		Description: "A ref from terminal_query: screen:ROW,COL,LEN@REVISION (its first cell; stale, kind conflict reason stale-ref, when its text is no longer there) or semantic:ID@REVISION (the middle of that node of the semantic tree; stale when the node is gone)."}
	paramFrom        = Param{Name: "from", Type: TypeStruct, Required: true, Fields: cellFields("start cell"), Description: "Where the button goes down: {row, column} (0-based)."}
	paramTo          = Param{Name: "to", Type: TypeStruct, Required: true, Fields: cellFields("end cell"), Description: "Where the button comes up: {row, column} (0-based)."}
	paramButton      = enumParam("button", "Mouse button (default left).", "left", "middle", "right")
	paramClickCount  = intParam("count", "1, 2 or 3 for a single, double or triple click (default 1).", intPtr(1), intPtr(3))
	paramModifiers   = Param{Name: "modifiers", Type: TypeStringArray, Enum: []string{"shift", "alt", "ctrl"}, MaxItems: 3, Description: "Keys held during the action: shift, alt, ctrl."}
	paramDeltaY      = required(intParam("delta_y", fmt.Sprintf("Wheel notches: positive scrolls down, negative up (-%d to %d, not 0).", MaxWheelDelta, MaxWheelDelta), intPtr(-MaxWheelDelta), intPtr(MaxWheelDelta)))
	paramRawText     = Param{Name: "text", Type: TypeString, NonEmpty: true, Description: "The bytes as text, sent verbatim (escape sequences included); give text or base64."}
	paramRawBase64   = Param{Name: "base64", Type: TypeString, NonEmpty: true, Description: "The bytes, base64 (standard alphabet, padded); use it for bytes that are not UTF-8 (give text or base64)."}
	errNotBothTarget = "give exactly one of \"at\" ({row, column}) and \"ref\" (from terminal_query)"
)

func withCheck(op *Operation, check func(op *Operation, fields map[string]json.RawMessage) error) *Operation {
	op.check = check
	return op
}

// mouseOp is a mouse input operation: a mutation with an optional wait
// whose result is a MouseResult.
func mouseOp(name, desc string, extra []Param) *Operation {
	params := append([]Param{paramTerminal}, extra...)
	params = append(params, paramInputWait)
	op := &Operation{Name: name, Description: desc, Topic: TopicTerminal, Params: params, Annotations: annInput, Mutation: true,
		Result: MouseResult{}, State: Snapshot{}}
	if op.Param("at") != nil {
		op.check = checkTarget
	}
	if name == "terminal_wheel" {
		op.check = func(op *Operation, fields map[string]json.RawMessage) error {
			if err := checkTarget(op, fields); err != nil {
				return err
			}
			if n, ok := parseInteger(fields["delta_y"]); ok && n == 0 {
				return op.usageErr("delta_y", "delta_y must not be 0: positive scrolls down, negative up")
			}
			return nil
		}
	}
	return op
}

func checkTarget(op *Operation, fields map[string]json.RawMessage) error {
	_, at := fields["at"]
	ref, hasRef := fields["ref"]
	if at == hasRef {
		return op.usageErr("at", "%s", errNotBothTarget)
	}
	if hasRef {
		var s string
		if json.Unmarshal(ref, &s) == nil && !strings.HasPrefix(s, "semantic:") {
			if _, err := ParseRef(s); err != nil {
				return op.usageErr("ref", "%w; pass a ref exactly as terminal_query returned it", err)
			}
		}
	}
	return nil
}

func checkQuery(op *Operation, fields map[string]json.RawMessage) error {
	_, text := fields["text"]
	pat, hasPat := fields["pattern"]
	if text == hasPat {
		return op.usageErr("text", "give exactly one of \"text\" (literal) and \"pattern\" (Go RE2)")
	}
	if hasPat {
		var p string
		if json.Unmarshal(pat, &p) == nil {
			if _, err := regexp.Compile(p); err != nil {
				return op.usageErr("pattern", "argument \"pattern\" is not a valid Go RE2 regular expression: %w", err)
			}
		}
	}
	return nil
}

func checkRaw(op *Operation, fields map[string]json.RawMessage) error {
	_, text := fields["text"]
	b, hasB64 := fields["base64"]
	if text == hasB64 {
		return op.usageErr("text", "give exactly one of \"text\" and \"base64\"")
	}
	if hasB64 {
		var s string
		if json.Unmarshal(b, &s) == nil {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return op.usageErr("base64", "argument \"base64\" does not decode as standard base64 (%w); encode the bytes with `base64 -w0`", err)
			}
			if len(raw) > MaxRawBytes {
				return op.usageErr("base64", "argument \"base64\" decodes to %d bytes, over the limit of %d; split it into several calls", len(raw), MaxRawBytes)
			}
		}
	}
	return nil
}

// Ref names a match of terminal_query: Length cells from (Row, Column) of
// the screen at Revision. Its text form is screen:ROW,COL,LEN@REVISION.
type Ref struct {
	Row, Column, Length int
	Revision            uint64
}

// String is the ref's text form.
func (r Ref) String() string {
	return fmt.Sprintf("screen:%d,%d,%d@%d", r.Row, r.Column, r.Length, r.Revision)
}

// ParseRef parses screen:ROW,COL,LEN@REVISION.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("ref %q is not screen:ROW,COL,LEN@REVISION (%s)", clip(s, 80), why)
	}
	body, ok := strings.CutPrefix(s, "screen:")
	if !ok {
		return bad("no screen: prefix")
	}
	pos, revText, ok := strings.Cut(body, "@")
	if !ok {
		return bad("no @REVISION")
	}
	f := strings.Split(pos, ",")
	if len(f) != 3 {
		return bad("want three numbers before @")
	}
	var n [3]int
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || v < 0 || v > 1<<20 {
			return bad("not a number: " + clip(x, 20))
		}
		n[i] = v
	}
	if n[2] == 0 {
		return bad("length 0")
	}
	rev, err := strconv.ParseUint(revText, 10, 64)
	if err != nil {
		return bad("revision is not a number")
	}
	return Ref{Row: n[0], Column: n[1], Length: n[2], Revision: rev}, nil
}
