package orchestrator

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Errors keep their cause: callers branch with errors.Is, never on text.
func TestErrorsKeepTheirCause(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "sleep 60")
	n := o.node(id)
	err := n.TmuxErr("read", tmuxctl.ErrClosed)
	if !errors.Is(err, tmuxctl.ErrClosed) || tools.KindOf(err) != tools.KindUnavailable {
		t.Fatalf("tmuxErr lost its cause: %v", err)
	}
	if err := n.TmuxErr("read", nil); !errors.Is(err, node.ErrUnexpectedReply) {
		t.Fatalf("tmuxErr without a cause: %v", err)
	}
	// No preferences file: the known emulators are tried (the error, if
	// none is installed, is not_run); a broken one is usage, cause kept.
	if _, err := o.ExternalArgv(id); err != nil && tools.KindOf(err) != tools.KindNotRun {
		t.Fatalf("external without preferences: %v", err)
	}
	prefs := tools.PreferencesPath(o.StateDir())
	if err := os.MkdirAll(prefs, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	_, err = o.ExternalArgv(id)
	if tools.KindOf(err) != tools.KindUsage || errors.Is(err, fs.ErrNotExist) || errors.Unwrap(err) == nil {
		t.Fatalf("external with a directory as preferences: %v", err)
	}
	if _, err := o.Press(tctx(t), id, "NoSuchKey", nil); tools.KindOf(err) != tools.KindUsage || errors.Unwrap(err) == nil {
		t.Fatalf("bad key: %v", err)
	}
}
