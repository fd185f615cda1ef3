package orchestrator

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// fillDisk writes a file in dir until the file system is full, and
// removes it at cleanup.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	f.Close()
}

// A recording stopped by a full disk — the whole state dir full, so no
// temporary file can be made — leaves nodes/<id>.json no longer naming it
// and meta.json saying why (both rewritten in place).
func TestRecordingStateDirFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to mount a small tmpfs (mount -t tmpfs -o size=4m)")
	}
	dir := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(dir, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	o := openOrchestrator(t, tmuxtest.New(t), dir)
	id, recDir := launchRecorded(t, o)
	fillDisk(t, dir)
	// Typed and entered as keys: a submit would be refused here, since its
	// intent file cannot be written on the full disk (interrupted.go).
	if _, err := o.Type(tctx(t), id, "seq -f 'fill-%07g-yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' 1 20000; echo fill-done-$((1+2))", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Press(tctx(t), id, "Enter", &tools.WaitSpec{Wait: tools.WaitText, Text: "fill-done-3", TimeoutMS: 40000}); err != nil {
		t.Fatal(err)
	}
	// The node's metadata stops naming the recording (on a condition,
	// not a clock: the deadline only ends a failing test).
	var meta NodeMeta
	var b []byte
	if !testenv.Until(30*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(o.metaPath(id))
		return err == nil && json.Unmarshal(b, &meta) == nil && meta.Recording == "" && o.node(id).Rec.Load() == nil
	}) {
		t.Fatalf("nodes/%s.json still names the recording on a full disk: %s", id, b)
	}
	raw, err := os.ReadFile(filepath.Join(recDir, record.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var rm record.Meta
	if err := json.Unmarshal(raw, &rm); err != nil {
		t.Fatalf("meta.json after the full disk does not parse: %v: %s", err, raw)
	}
	if rm.Error == "" || !strings.Contains(rm.Error, "no space") {
		t.Fatalf("meta.json does not say why the recording stopped: %s", raw)
	}
}
