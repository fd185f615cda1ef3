package cli

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

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

// parseFastCtl recognises the hot invocations; ok is false for anything
// kong must handle.
func parseFastCtl(args []string) (f fastCtl, ok bool) {
	if !fastCtlEnabled || os.Getenv("COMP_LINE") != "" {
		return f, false
	}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--session", "--wait", "--retry":
		default:
			return f, false
		}
		if !hasVal {
			if i+1 >= len(args) {
				return f, false
			}
			i++
			val = args[i]
		}
		switch name {
		case "--session":
			f.session = val
		case "--wait":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return f, false
			}
			f.wait = d
		case "--retry":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return f, false
			}
			f.retry = n
		}
	}
	switch {
	case len(pos) == 1 && pos[0] == "doctor":
		f.mode = "doctor"
	case len(pos) >= 2 && len(pos) <= 3 && pos[0] == "call" && pos[1] != "":
		f.mode, f.op = "call", pos[1]
		if len(pos) == 3 {
			f.args = pos[2]
		}
	default:
		return f, false
	}
	return f, true
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
