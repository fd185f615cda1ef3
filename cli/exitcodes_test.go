package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// An input operation whose wait timed out answers ok:true (the input was
// sent) and termsprawlctl exits 4, so scripts can tell; a matched wait
// exits 0.
func TestCtlExitsFourWhenTheWaitTimedOut(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	timedOut := false
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		r := tools.Receipt{Action: op, Result: tools.InputResult{Terminal: "t1", Revision: 3,
			Wait: &tools.WaitResult{Wait: "regex", TimedOut: timedOut, Matched: !timedOut}}, State: tools.Snapshot{Terminal: "t1"}}
		return tools.OKResult(r)
	})
	args := `{"terminal":"t1","text":"make","wait":{"wait":"regex","pattern":"^ok"}}`
	if code, out, errb := runCtl(t, "--session", fs.Agent, "call", "terminal_submit", args); code != ExitOK {
		t.Fatalf("matched wait: exit %d\n%s%s", code, out, errb)
	}
	timedOut = true
	code, out, _ := runCtl(t, "--session", fs.Agent, "call", "terminal_submit", args)
	if code != ExitWaitTimeout {
		t.Fatalf("timed-out wait: exit %d, want %d\n%s", code, ExitWaitTimeout, out)
	}
	if env := decodeEnvelope(t, out); env["ok"] != true {
		t.Fatalf("timed-out wait printed %v, want the ok:true receipt", env)
	}
}
