package cli

import (
	"io"
	"net/http"
	"time"

	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/tools"
)

// The hot path of termsprawlctl: `call OP [JSON_ARGS]` and `doctor` with
// only --session, --wait and --retry are recognised without building the
// kong grammar, whose first parse costs a fresh process milliseconds
// (docs/PERFORMANCE.md, "A lean termsprawlctl"). Anything else (help,
// --help, other flags, a missing or extra argument, a bad flag value,
// shell completion) goes to kong, which also gives every error message.
// TestFastCtlMatchesKong runs both paths on the same argv.

// fastCtlEnabled is false only in the test that compares both paths.
var fastCtlEnabled = true

// fastCtl is a recognised hot invocation.
type fastCtl struct {
	session  string
	wait     time.Duration
	retry    int
	mode     string // "call" or "doctor"
	op, args string
}

// parseFastCtl recognises the hot invocations (the lite binary's parser,
// internal/ctllite); ok is false for anything kong must handle.
func parseFastCtl(args []string) (f fastCtl, ok bool) {
	if !fastCtlEnabled {
		return f, false
	}
	inv, ok := ctllite.Parse(args)
	if !ok || (inv.Mode != "call" && inv.Mode != "doctor") {
		return f, false
	}
	return fastCtl{session: inv.Session, wait: inv.Wait, retry: inv.Retry, mode: inv.Mode, op: inv.Op, args: inv.Args}, true
}

func (f fastCtl) run(stdout, stderr io.Writer) int {
	opName, callArgs := "session_info", []byte("{}")
	if f.mode == "call" {
		a, code, ok := validateCtlCall(f.op, f.args, stderr)
		if !ok {
			return code
		}
		opName, callArgs = f.op, a
	}
	return runCtlCall(f.session, opName, callArgs, ctlCallOptions(f.wait, f.retry), stdout, stderr)
}

// ctlCallOptions are the options of call and doctor: one call per
// process, so the one-shot transport (no pool, no transport goroutines).
func ctlCallOptions(wait time.Duration, retry int) tools.CallOptions {
	return tools.CallOptions{Wait: wait, Retry: retry, HTTPClient: &http.Client{Transport: tools.OneShotTransport}}
}
