// Package mcpserve serves termsprawl's operations over MCP, built with
// mcp-go from the one operation table (tools.Operations): the stdio
// bridge that `termsprawlctl mcp` runs (CONTRACT §6, §10) and the
// protocol engine behind the orchestrator's Streamable HTTP endpoint /mcp
// (§15, mounted and guarded by orchestrator/toolserver).
//
// The stdio transport's own answers: a failed handshake is JSON-RPC error
// -32000 whose data is the unavailable envelope; an over-long line is
// -32600 carrying the id found in its first 256 KiB (or null); a batch is
// -32600 except under protocol 2025-03-26. An image result keeps its text
// block, with value.image replaced by a short note instead of repeating
// the base64.
//
// Only the termsprawl binary links this package (and with it mcp-go's
// server package): `termsprawlctl mcp` executes `termsprawl mcp-bridge`,
// so termsprawlctl's call and doctor do not pay mcp-go's start-up
// (docs/PERFORMANCE.md, "A lean termsprawlctl").
package mcpserve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/termsprawl/termsprawl/tools"
)

// CallFunc runs one operation whose args passed op.Validate (and
// CanonicalArgs): the stdio bridge calls the orchestrator with tools.Call,
// /mcp hands it to the backend with the identity of the request's bearer.
type CallFunc func(ctx context.Context, op *tools.Operation, args json.RawMessage) tools.Result

// ClientInjectedArgs are arguments that well-known MCP hosts add to every
// tool call on their own. The bridge drops them before validation
// (CONTRACT §10); every other unknown argument stays a usage error.
// docs/CHOICES.md lists them with the reason.
var ClientInjectedArgs = map[string]string{
	// gemini-cli (0.61) adds it to every tool's schema and tells the
	// model to set it on dependent calls; it schedules calls, it is not an
	// argument of the tool.
	"wait_for_previous": "gemini-cli",
}

// ClientInjectedNames lists ClientInjectedArgs sorted.
func ClientInjectedNames() []string {
	names := make([]string, 0, len(ClientInjectedArgs))
	for n := range ClientInjectedArgs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// options configure the MCP server of one transport.
type options struct {
	call CallFunc
	log  *slog.Logger
	// progress sends one notifications/progress for a request (nil: through
	// mcp-go's SendNotificationToClient).
	progress func(ctx context.Context, params map[string]any)
	// structured decides whether outputSchema/structuredContent go out for
	// the request in ctx (protocol 2025-06-18 and later).
	structured func(ctx context.Context) bool
}

// Instructions is what initialize advertises: the overview guide, which
// fits the 2,048 characters hosts keep (CONTRACT §10).
func Instructions() string {
	overview, _ := tools.Guide(tools.TopicOverview)
	return overview
}

// newMCPServer builds the mcp-go server with one tool per operation.
func newMCPServer(version string, o options, extra ...server.ServerOption) *server.MCPServer {
	opts := []server.ServerOption{
		server.WithInstructions(Instructions()),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		// Hosts on a protocol before 2025-06-18 get no outputSchema.
		server.WithToolFilter(func(ctx context.Context, ts []mcp.Tool) []mcp.Tool {
			if o.structured(ctx) {
				return ts
			}
			out := make([]mcp.Tool, len(ts))
			for i, t := range ts {
				t.RawOutputSchema = nil
				out[i] = t
			}
			return out
		}),
	}
	srv := server.NewMCPServer("termsprawl", version, append(opts, extra...)...)
	for _, op := range tools.Operations() {
		srv.AddTool(Tool(op), handler(op, o))
	}
	return srv
}

// Tool describes op for tools/list: the table's name, description, strict
// input schema, output schema, and all four annotations set explicitly.
func Tool(op *tools.Operation) mcp.Tool {
	a := op.Annotations
	return mcp.Tool{
		Name:            op.Name,
		Description:     op.Description,
		RawInputSchema:  op.InputSchemaJSON(),
		RawOutputSchema: op.OutputSchemaJSON(),
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(a.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(a.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(a.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(a.OpenWorld),
		},
	}
}

// handler validates a tools/call against the table and runs it.
func handler(op *tools.Operation, o options) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, res, ok := prepareArgs(op, req)
		if !ok {
			return toolResult(res, false), nil
		}
		if res, refused := refuseOverMCP(op, args); refused {
			o.log.Warn("refused over MCP", "operation", op.Name, "kind", res.Kind)
			return toolResult(res, false), nil
		}
		if tok := progressToken(req); tok != nil {
			stop := startProgress(ctx, o, tok, op, args)
			defer stop()
		}
		res = o.call(ctx, op, args)
		if ctx.Err() != nil {
			// Cancelled by the client: nobody reads this result (the stdio
			// transport drops it), and it is not an outage.
			o.log.Debug("call cancelled", "operation", op.Name)
			return toolResult(res, false), nil
		}
		if !res.OK && res.Kind == tools.KindUnavailable {
			o.log.Warn("termsprawl unreachable", "operation", op.Name, "error", res.Error)
		}
		return toolResult(res, o.structured(ctx)), nil
	}
}

// prepareArgs turns the request's arguments into the args the table
// validates: client-injected arguments dropped, then Validate, then
// integers in canonical form. On failure res is the usage error.
func prepareArgs(op *tools.Operation, req mcp.CallToolRequest) (json.RawMessage, tools.Result, bool) {
	args := req.Params.RawArguments
	if len(bytes.TrimSpace(args)) == 0 && req.Params.Arguments != nil {
		raw, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, tools.ErrResult(tools.Errorf(tools.KindUsage, "%s: arguments cannot be encoded: %v", op.Name, err)), false
		}
		args = raw
	}
	args = dropInjected(op, tools.NormalizeArgs(args))
	if err := op.Validate(args); err != nil {
		return nil, tools.ErrResult(err), false
	}
	return op.CanonicalArgs(args), tools.Result{}, true
}

// dropInjected removes ClientInjectedArgs that op does not itself take
// from a top-level JSON object; anything else is returned as it is.
func dropInjected(op *tools.Operation, args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || t[0] != '{' {
		return args
	}
	// A key may be written with escapes (\u005f): then look closer.
	hit := bytes.IndexByte(t, '\\') >= 0
	for name := range ClientInjectedArgs {
		if op.Param(name) == nil && bytes.Contains(t, []byte(`"`+name+`"`)) {
			hit = true
		}
	}
	if !hit {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return args
	}
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return args
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return args
		}
		name, _ := key.(string)
		if _, injected := ClientInjectedArgs[name]; injected && op.Param(name) == nil {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		out.Write(k)
		out.WriteByte(':')
		out.Write(val)
		n++
	}
	out.WriteByte('}')
	return out.Bytes()
}

// refuseOverMCP applies the MCP-only rules before any call is made:
// dialog_answer may only deny, or pick a selection for a question
// (CONTRACT §8.4); the orchestrator also refuses a permission approved by
// anyone but the operator, so a selection cannot smuggle an approval.
func refuseOverMCP(op *tools.Operation, args json.RawMessage) (tools.Result, bool) {
	if op.Name != "dialog_answer" {
		return tools.Result{}, false
	}
	var a struct {
		Mode      string `json:"mode"`
		Selection string `json:"selection"`
	}
	_ = json.Unmarshal(args, &a)
	if a.Mode == "deny" || a.Selection != "" {
		return tools.Result{}, false
	}
	e := tools.Errorf(tools.KindNotRun, "dialog_answer with mode %q was not run: %s; over MCP only mode \"deny\" is possible (the human answers with `termsprawl answer ID %s`)", a.Mode, tools.DialogMCPRefusal, a.Mode).
		WithDetails("operation", op.Name).WithDetails("mode", a.Mode)
	return tools.ErrResult(e), true
}

// toolResult turns an envelope into an MCP result: a value carrying a
// base64 PNG "image" becomes an image block plus the envelope as text
// (with the image replaced by a note); anything else is one text block
// with the raw envelope. isError is !ok. With structured, a successful
// value also goes out as structuredContent (what outputSchema describes).
func toolResult(res tools.Result, structured bool) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: !res.OK}
	if res.OK {
		if img, rest, ok := splitImage(res.Value); ok {
			res.Value = rest
			text, _ := json.Marshal(res)
			out.Content = []mcp.Content{mcp.NewImageContent(img, "image/png"), mcp.NewTextContent(string(text))}
			if structured {
				out.RawStructuredContent = rest
			}
			return out
		}
	}
	text, err := json.Marshal(res)
	if err != nil {
		text, _ = json.Marshal(tools.ErrResult(tools.Errorf(tools.KindInternal, "encode result: %v", err)))
		out.IsError = true
	}
	out.Content = []mcp.Content{mcp.NewTextContent(string(text))}
	if structured && res.OK && !out.IsError && isObject(res.Value) {
		out.RawStructuredContent = res.Value
	}
	return out
}

func isObject(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) > 0 && t[0] == '{'
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// splitImage finds value.image holding a base64 PNG and returns it and the
// value with the image replaced by a short note.
func splitImage(value json.RawMessage) (string, json.RawMessage, bool) {
	t := bytes.TrimSpace(value)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"image"`)) {
		return "", nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return "", nil, false
	}
	var img string
	if err := json.Unmarshal(m["image"], &img); err != nil || img == "" {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(img)
	if err != nil || !bytes.HasPrefix(data, pngMagic) {
		return "", nil, false
	}
	note, _ := json.Marshal(fmt.Sprintf("PNG image, %d bytes: sent as MCP image content", len(data)))
	m["image"] = note
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, false
	}
	return img, rest, true
}

// structuredFor reports whether a protocol version carries outputSchema
// and structuredContent (2025-06-18 and later; "" means unknown, and then
// they go out: newer clients require them, older ones ignore them).
func structuredFor(version string) bool {
	return version == "" || strings.Compare(version, mcp.ProtocolVersion20250618) >= 0
}
