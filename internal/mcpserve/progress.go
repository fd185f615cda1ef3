package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/termsprawl/termsprawl/tools"
)

// ProgressInterval is how often a call that carries a progressToken and
// is still running sends notifications/progress (CONTRACT §10: at least
// every 5 s, so hosts with a 10 s idle timer keep waiting).
var ProgressInterval = 2 * time.Second

func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// startProgress sends notifications/progress for tok every
// ProgressInterval until the returned stop is called (the call answered)
// or ctx ends. Its goroutine is owned by the call and ends with stop;
// stop returns only after the goroutine sent its last notification, so no
// progress follows the result on the wire.
func startProgress(ctx context.Context, o options, tok mcp.ProgressToken, op *tools.Operation, args json.RawMessage) (stop func()) {
	what := waitText(op, args)
	total := waitTotal(op, args)
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			elapsed := time.Since(start)
			params := map[string]any{
				"progressToken": tok,
				"progress":      elapsed.Seconds(),
				"message":       fmt.Sprintf("%s: %s, %d s so far", op.Name, what, int(elapsed.Seconds())),
			}
			if total > 0 {
				params["total"] = total.Seconds()
			}
			sendProgress(ctx, o, params)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func sendProgress(ctx context.Context, o options, params map[string]any) {
	if o.progress != nil {
		o.progress(ctx, params)
		return
	}
	if srv := server.ServerFromContext(ctx); srv != nil {
		if err := srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
			o.log.Debug("progress not sent", "err", err)
		}
	}
}

// waitSpec is the part of a call's args that says what it waits for.
type waitSpec struct {
	Wait      json.RawMessage `json:"wait"`
	Text      string          `json:"text"`
	Pattern   string          `json:"pattern"`
	TimeoutMs int             `json:"timeout_ms"`
	Terminal  string          `json:"terminal"`
}

// waitText says in words what a call waits for.
func waitText(op *tools.Operation, args json.RawMessage) string {
	var a waitSpec
	_ = json.Unmarshal(args, &a)
	mode, inner := a.waitMode()
	where := ""
	if a.Terminal != "" {
		where = " in " + a.Terminal
	}
	switch mode {
	case tools.WaitText:
		return fmt.Sprintf("waiting for the text %q%s", clip(inner.Text, 60), where)
	case tools.WaitRegex:
		return fmt.Sprintf("waiting for /%s/%s", clip(inner.Pattern, 60), where)
	case "":
		return "running"
	}
	return fmt.Sprintf("waiting for %s%s", mode, where)
}

// waitMode returns the wait mode of a flat wait (terminal_wait_for,
// watch_start) or of a nested wait object, and the spec holding its
// fields.
func (a waitSpec) waitMode() (string, waitSpec) {
	var mode string
	if json.Unmarshal(a.Wait, &mode) == nil {
		return mode, a
	}
	var inner waitSpec
	if json.Unmarshal(a.Wait, &inner) == nil {
		if json.Unmarshal(inner.Wait, &mode) == nil {
			return mode, inner
		}
	}
	return "", a
}

// waitTotal is the longest the call may wait, when its args say so.
func waitTotal(op *tools.Operation, args json.RawMessage) time.Duration {
	var a waitSpec
	_ = json.Unmarshal(args, &a)
	mode, inner := a.waitMode()
	if mode == "" && a.TimeoutMs == 0 {
		return 0
	}
	if inner.TimeoutMs > 0 {
		return time.Duration(inner.TimeoutMs) * time.Millisecond
	}
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	return 0
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
