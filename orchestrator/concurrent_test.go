package orchestrator_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// TestConcurrentNodes launches, drives and closes many nodes at once:
// every wait sees its own node's output and nothing is left. (An id may be
// given again once its node is closed.)
func TestConcurrentNodes(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "starts 16 nodes")
	o, srv := orchestrator.NewTestOrchestrator(t)
	const n = 16 // nodes at once
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			info, err := o.Launch(orchestrator.TestContext(t), orchestrator.LaunchSpec{Command: orchestrator.BashArgv(), Name: "c", Cwd: t.TempDir(), Columns: 60, Rows: 10})
			if err != nil {
				errs <- err
				return
			}
			want := fmt.Sprintf("node-%d-2k", i)
			r, err := o.Submit(orchestrator.TestContext(t), info.Terminal, fmt.Sprintf("echo node-%d-$((1+1))k", i), &tools.WaitSpec{Wait: tools.WaitText, Text: want, TimeoutMS: 30000})
			if err != nil || r.Wait == nil || !r.Wait.Matched {
				errs <- fmt.Errorf("node %s: %+v %v", info.Terminal, r.Wait, err)
				return
			}
			if err := o.CloseNode(orchestrator.TestContext(t), info.Terminal); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if left := o.List(orchestrator.TestContext(t)); len(left) != 0 {
		t.Fatalf("%d nodes left after closing all", len(left))
	}
	if out, _ := srv.Cmd("list-sessions", "-F", "#{session_name}"); out != "termsprawl-admin\ntermsprawl-mirror\n" { // the admin and mirror sessions only
		t.Fatalf("sessions left: %q", out)
	}
}
