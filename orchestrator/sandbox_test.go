package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A workspace node writes its caches into its own cache directory (Go's
// module cache makes it read-only), which goes when the node is closed;
// its launch keeps the profile and its row shows it.
func TestSandboxPrivateCacheRemovedWithNode(t *testing.T) {
	testenv.LookPath(t, "bwrap", "apt-get install bubblewrap")
	t.Setenv("HOME", t.TempDir())
	o, _ := newTestOrchestrator(t)
	ctx := tctx(t)
	script := "mkdir -p $HOME/go/pkg/mod/x && echo hi > $HOME/go/pkg/mod/x/f && chmod -R a-w $HOME/go/pkg/mod/x && echo cached-ok; exec cat"
	info, err := o.Launch(ctx, LaunchSpec{Command: []string{"sh", "-c", script}, Cwd: t.TempDir(), Sandbox: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	id := info.Terminal
	waitText(t, o, id, "cached-ok")
	if info.Sandbox != "workspace" {
		t.Errorf("launch result: sandbox %q", info.Sandbox)
	}
	cache := o.sandboxCacheDir(id)
	if _, err := os.Stat(filepath.Join(cache, "go", "pkg", "mod", "x", "f")); err != nil {
		t.Fatalf("the node's cache is not in its cache directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("HOME"), "go", "pkg")); err == nil {
		t.Fatal("the node wrote into the user's ~/go")
	}
	rec, err := o.readLaunch(id)
	if err != nil || rec.Spec.Sandbox != "workspace" {
		t.Fatalf("kept launch: %+v %v", rec.Spec, err)
	}
	if err := o.CloseNode(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatalf("the node's cache %s outlived it", cache)
	}
}

// Without bwrap a sandboxed launch is refused before anything is made,
// naming the fix; none goes on.
func TestSandboxMissingBwrap(t *testing.T) {
	t.Setenv("TERMSPRAWL_BWRAP", filepath.Join(t.TempDir(), "no-bwrap"))
	o, _ := newTestOrchestrator(t)
	ctx := tctx(t)
	for _, p := range []string{"workspace", "guard"} {
		_, err := o.Launch(ctx, LaunchSpec{Command: []string{"cat"}, Cwd: t.TempDir(), Sandbox: p})
		if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") || !strings.Contains(err.Error(), "--sandbox none") {
			t.Fatalf("%s without bwrap: %v", p, err)
		}
		if e, ok := err.(*tools.Error); !ok || e.Kind != tools.KindUnavailable {
			t.Errorf("%s: error kind %T %v", p, err, err)
		}
	}
	if n := len(o.List(ctx)); n != 0 {
		t.Fatalf("a refused launch left %d nodes", n)
	}
	info, err := o.Launch(ctx, LaunchSpec{Command: []string{"cat"}, Cwd: t.TempDir(), Sandbox: "none"})
	if err != nil || info.Sandbox != "none" {
		t.Fatalf("none without bwrap: %+v %v", info, err)
	}
}
