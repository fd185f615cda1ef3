package tools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// `termsprawlctl call OP --help` (CONTRACT §18): one operation's
// arguments — name, type, enum values, required or not, default — and an
// example, all generated from the operation table.

// OperationUsage is the help of one operation for `call OP --help`.
func OperationUsage(op *Operation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: termsprawlctl call %s [JSON_ARGS]\n\n%s\n", op.Name, op.Description)
	var hints []string
	if op.Annotations.ReadOnly {
		hints = append(hints, "read-only")
	}
	if op.Annotations.Destructive {
		hints = append(hints, "destructive")
	}
	if op.Annotations.Idempotent {
		hints = append(hints, "idempotent")
	}
	if op.Mutation {
		hints = append(hints, "returns a receipt {action, result, idempotency_key, state}")
	}
	if len(hints) > 0 {
		fmt.Fprintf(&b, "(%s)\n", strings.Join(hints, ", "))
	}
	b.WriteString("\nArguments:\n")
	if len(op.Params) == 0 {
		b.WriteString("  none: pass {} or nothing\n")
	}
	for _, p := range op.Params {
		writeParamUsage(&b, "  ", "", p)
	}
	fmt.Fprintf(&b, "\nExample:\n  termsprawlctl call %s '%s'\n", op.Name, OperationExample(op))
	b.WriteString("\nExit codes: 0 ok, 1 termsprawl said no (ok:false), 2 usage (nothing was sent), 3 termsprawl is not running, 4 an input's wait timed out (the input was sent).\n")
	return b.String()
}

func writeParamUsage(b *strings.Builder, indent, prefix string, p Param) {
	req := "optional"
	if p.Required {
		req = "required"
	}
	line := fmt.Sprintf("%s%s%s (%s, %s", indent, prefix, p.Name, p.typeText(), req)
	if d := ParamDefault(p); d != "" && !p.Required {
		line += ", default " + d
	}
	fmt.Fprintf(b, "%s): %s\n", line, p.Description)
	sub := p.Fields
	if p.Type == TypeWaitObject {
		sub = waitObjectParams
	}
	for _, f := range sub {
		writeParamUsage(b, indent+"    ", prefix+p.Name+".", f)
	}
}

// defaultInText finds "(default X)", "(default: X)", "(default X, …)" or
// "X (default)" in a description.
var (
	defaultInText = regexp.MustCompile(`\(default:? ([^),;]+)`)
	defaultAfter  = regexp.MustCompile(`(\w+) \(default\)`)
	defaultAndMax = regexp.MustCompile(`\(default and max ([^),;]+)`)
	defaultTail   = regexp.MustCompile(`; default:? ([^),;.]+)`)
)

// ParamDefault is the default the table's description states for p ("" when
// it states none: absent means nothing).
func ParamDefault(p Param) string {
	d := p.Description
	for _, re := range []*regexp.Regexp{defaultAndMax, defaultInText, defaultTail} {
		if m := re.FindStringSubmatch(d); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	if m := defaultAfter.FindStringSubmatch(d); m != nil {
		return m[1]
	}
	if p.Type == TypeBoolean {
		return "false"
	}
	return ""
}

// exampleStrings are example values of string arguments by name.
var exampleStrings = map[string]string{
	"terminal": "build", "node": "build", "text": "make test", "pattern": "^(ok|FAIL)",
	"keys": "C-c", "dialog": "dialog-1", "task": "task-1", "watch": "watch-1",
	"message_id": "msg-1", "title": "Run rm -rf build/?", "label": "before-deploy",
	"name": "tests", "cwd": "/home/me/src/app", "path": "/home/me/.local/state/termsprawl/traces/build-20261201T101500Z",
	"trace": "trace-1", "topic": "terminal", "selection": "yes", "reason": "use the staging database",
	"message": "running the tests", "ref": "screen:0,0,4@12", "host": "big", "base64": "G1tB",
	"idempotency_key": "deploy-42", "marker": "before-deploy",
}

// OperationExample is a JSON args object for op that the table accepts:
// every required argument, plus, when the cross-argument rules want more,
// optional ones in table order until they hold.
func OperationExample(op *Operation) string {
	args := map[string]any{}
	for _, p := range op.Params {
		if p.Required {
			args[p.Name] = exampleValue(p)
		}
	}
	if !exampleValid(op, args) {
		for _, p := range op.Params {
			if _, ok := args[p.Name]; ok || p.Name == "idempotency_key" {
				continue
			}
			args[p.Name] = exampleValue(p)
			if exampleValid(op, args) {
				break
			}
		}
	}
	data, _ := json.Marshal(args)
	return string(data)
}

func exampleValid(op *Operation, args map[string]any) bool {
	data, err := json.Marshal(args)
	return err == nil && op.Validate(data) == nil
}

func exampleValue(p Param) any {
	switch p.Type {
	case TypeString:
		if len(p.Enum) > 0 {
			return p.Enum[0]
		}
		if s, ok := exampleStrings[p.Name]; ok {
			return s
		}
		return "example"
	case TypeInteger:
		v := 1
		if p.Min != nil && *p.Min > v {
			v = *p.Min
		}
		if p.Max != nil && *p.Max < v {
			v = *p.Max
		}
		switch p.Name {
		case "timeout_ms", "wait_ms":
			v = 20000
		case "columns":
			v = 120
		case "rows":
			v = 40
		}
		return v
	case TypeBoolean:
		return true
	case TypeObject:
		return map[string]string{"DEBUG": "1"}
	case TypeStringArray:
		if len(p.Enum) > 0 {
			return []string{p.Enum[0]}
		}
		if p.Name == "command" {
			return []string{"bash"}
		}
		return []string{"example"}
	case TypeWaitObject:
		return map[string]any{"wait": WaitText, "text": "done", "timeout_ms": 20000}
	case TypeRawObject:
		return map[string]any{"id": "root", "role": "window", "bounds": map[string]int{"row": 0, "column": 0, "width": 80, "height": 24}}
	case TypeStruct, TypeStructArray:
		if p.Name == "locator" {
			return map[string]any{"role": "button", "name": "OK"}
		}
		obj := map[string]any{}
		for _, f := range p.Fields {
			if f.Required {
				obj[f.Name] = exampleValue(f)
			}
		}
		if p.Type == TypeStructArray {
			return []any{obj}
		}
		return obj
	}
	return nil
}
