package toolserver

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mountSmallTmpfs mounts a tmpfs of a few hundred KiB at dir (made
// first), for a full disk; unmounted at the end of the test.
func mountSmallTmpfs(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to mount a small tmpfs (mount -t tmpfs -o size=256k)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
}

// fillDisk writes a file in dir until the file system is full; the
// returned func frees the space.
func fillDisk(t *testing.T, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	return func() { os.Remove(path) }
}

// A dialog that cannot be saved is refused (not_run), never handed out:
// after a restart the counter would hand its id out again, and a hook
// still waiting on the old id would take the new dialog's answer (a
// human's allow of "Bash: ls" ran "rm -rf /important"). Ids never repeat
// across restarts, also when dialogs.json cannot be read at start.
func TestDialogIDsNeverRepeat(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	tsDir := filepath.Join(dir, persistDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mountSmallTmpfs(t, tsDir)
	s := apiStart(t, tmux, dir)
	op := s.op()
	node := apiLaunch(t, op, "cat")
	sess := s.session(node)
	seen := map[string]bool{}
	open := func(sess, title string) string {
		t.Helper()
		res := apiFail(t, sess, "dialog_request", apiM{"kind": "permission", "title": title, "tool": "Bash",
			"input": `{"command":"` + title + `"}`, "timeout_ms": 60000, "wait_ms": 1}, tools.KindTimeout)
		id, _ := res.Details["dialog"].(string)
		if id == "" || seen[id] {
			t.Fatalf("dialog id %q handed out again (seen %v)", id, seen)
		}
		seen[id] = true
		return id
	}
	first := open(sess, "ls")
	apiMutate(t, op, "dialog_answer", apiM{"dialog": first, "mode": "deny"})

	free := fillDisk(t, tsDir)
	res := apiFail(t, sess, "dialog_request", apiM{"kind": "permission", "title": "rm -rf /important", "tool": "Bash",
		"input": `{"command":"rm -rf /important"}`, "timeout_ms": 60000, "wait_ms": 1}, tools.KindNotRun)
	if res.Details["dialog"] != nil || !strings.Contains(res.Error, "cannot save") {
		t.Fatalf("a dialog that could not be saved was handed out: %s", apiRes(res))
	}
	var l tools.DialogList
	apiOK(t, op, "dialog_list", nil, &l)
	if len(l.Dialogs) != 0 {
		t.Fatalf("the refused dialog is listed: %+v", l)
	}
	free()

	// A restart: the next ids are new.
	s.stop()
	s = apiStart(t, tmux, dir)
	sess = s.session(node)
	open(sess, "pwd")

	// dialogs.json unreadable at start: still no id from before.
	s.stop()
	if err := os.WriteFile(filepath.Join(tsDir, dialogsFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = apiStart(t, tmux, dir)
	sess = s.session(node)
	for range 3 {
		open(sess, "id")
	}
}

// "always" is remembered by the exact tool and canonical input, never by
// the title (which the hook squeezes and cuts at 200 characters):
// "always" for `echo ok rm -rf X` does not allow `echo ok⏎rm -rf X`, and
// two long commands sharing their first 200 characters are two requests.
// dialog_list carries the full input for the human to read.
func TestDialogAlwaysByExactInput(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	sess := s.session(apiLaunch(t, op, "cat"))
	ask := func(title, command string) tools.Result {
		t.Helper()
		return apiCall(t, sess, "dialog_request", apiM{"kind": "permission", "title": title, "tool": "Bash",
			"input": string(apiArgs(t, apiM{"command": command, "description": "d"})), "timeout_ms": 60000, "wait_ms": 1})
	}
	always := func(title, command string) {
		t.Helper()
		res := ask(title, command)
		id, _ := res.Details["dialog"].(string)
		if res.OK || id == "" {
			t.Fatalf("no dialog opened: %s", apiRes(res))
		}
		var l tools.DialogList
		apiOK(t, op, "dialog_list", nil, &l)
		want := string(apiArgs(t, apiM{"command": command, "description": "d"}))
		found := false
		for _, d := range l.Dialogs {
			found = found || (d.ID == id && d.Tool == "Bash" && d.Input == want && d.Title == title)
		}
		if !found {
			t.Fatalf("dialog_list lacks the full input %s: %+v", want, l)
		}
		apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "always"})
	}
	remembered := func(title, command string) bool {
		t.Helper()
		res := ask(title, command)
		if !res.OK {
			if id, _ := res.Details["dialog"].(string); id != "" {
				apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "deny"})
			}
			return false
		}
		var out tools.DialogOutcome
		if err := tools.DecodeValue(res.Value, &out); err != nil || !out.Remembered || out.Input == "" {
			t.Fatalf("not a remembered allow: %s", apiRes(res))
		}
		return true
	}

	always("Bash: echo ok rm -rf X", "echo ok rm -rf X")
	if !remembered("Bash: echo ok rm -rf X", "echo ok rm -rf X") {
		t.Fatal("the same request was not remembered")
	}
	if remembered("Bash: echo ok rm -rf X", "echo ok\nrm -rf X") {
		t.Fatal(`"always" for "echo ok rm -rf X" allowed "echo ok⏎rm -rf X"`)
	}
	prefix := "echo " + strings.Repeat("harmless ", 30)
	title := "Bash: " + prefix[:199] + "…"
	always(title, prefix+"done")
	if remembered(title, prefix+"; rm -rf ~") {
		t.Fatal(`"always" for a long command allowed another sharing its first 200 characters`)
	}
	// Keys written in another order are the same input.
	res := apiCall(t, sess, "dialog_request", apiM{"kind": "permission", "title": "x", "tool": "Bash",
		"input": `{ "description":"d", "command":"echo ok rm -rf X" }`, "wait_ms": 1})
	if !res.OK {
		t.Fatalf("the same input in another key order was not remembered: %s", apiRes(res))
	}
	// Not JSON: usage.
	apiFail(t, sess, "dialog_request", apiM{"kind": "permission", "title": "x", "tool": "Bash", "input": "{nope", "wait_ms": 1}, tools.KindUsage)
}
