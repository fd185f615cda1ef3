package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func doCounting(t *testing.T, s *ReceiptStore, caller, key string, runs *int) (json.RawMessage, error) {
	t.Helper()
	receipt, _, err := s.Do(context.Background(), caller, key, "terminal_type", json.RawMessage(`{"terminal":"a","text":"echo ONE"}`), func() (json.RawMessage, error) {
		*runs++
		return Receipt{Action: "terminal_type", Result: map[string]int{"run": *runs}, State: map[string]any{}}.Encode()
	})
	return receipt, err
}

// A store that cannot record the intent refuses the call: nothing runs.
func TestReceiptIntentUnrecordableRefuses(t *testing.T) {
	s, err := OpenReceiptStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.hookWrite = func(storedReceipt) error { return syscall.ENOSPC }
	runs := 0
	_, err = doCounting(t, s, "n1", "k", &runs)
	if KindOf(err) != KindNotRun || runs != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("unrecordable key: err %v (kind %s), runs %d; want not_run and no run", err, KindOf(err), runs)
	}
}

// A call whose receipt was never stored (it crashed, or the disk filled
// after the intent) is not run again by a repeat of its key.
func TestReceiptPendingIntentIsNotRunAgain(t *testing.T) {
	t.Parallel()
	s, err := OpenReceiptStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"terminal":"a","text":"echo ONE"}`)
	if err := s.putIntent("n1", "k", "terminal_type", args); err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, err = doCounting(t, s, "n1", "k", &runs)
	if KindOf(err) != KindInProgress || runs != 0 {
		t.Fatalf("repeat of an unrecorded call: %v, runs %d", err, runs)
	}
	// A failed run drops its intent: the key may be used again.
	_, _, err = s.Do(context.Background(), "n1", "k2", "terminal_type", args, func() (json.RawMessage, error) {
		return nil, Errorf(KindNotFound, "no terminal")
	})
	if KindOf(err) != KindNotFound {
		t.Fatal(err)
	}
	if _, err := doCounting(t, s, "n1", "k2", &runs); err != nil || runs != 1 {
		t.Fatalf("after a failed run: %v, runs %d", err, runs)
	}
}

// Each node has its own receipt quota; forgetting a node frees it.
func TestReceiptQuotaPerCaller(t *testing.T) {
	t.Parallel()
	s, err := OpenReceiptStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for i := range MaxReceiptsPerCaller {
		if _, err := doCounting(t, s, "greedy", fmt.Sprint("k", i), &runs); err != nil {
			t.Fatal(err)
		}
	}
	_, err = doCounting(t, s, "greedy", "one-more", &runs)
	if KindOf(err) != KindRejected || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("over the quota: %v", err)
	}
	if _, err := doCounting(t, s, "other", "k0", &runs); err != nil {
		t.Fatalf("another node is held by the greedy one's quota: %v", err)
	}
	if err := s.ForgetCaller("greedy"); err != nil {
		t.Fatal(err)
	}
	if _, err := doCounting(t, s, "greedy", "one-more", &runs); err != nil {
		t.Fatalf("after forgetting: %v", err)
	}
}

// On a full disk (a small tmpfs) a key never runs twice: either nothing
// was recorded and nothing ran, or the repeat is refused.
func TestReceiptDiskFullNoDoubleExecution(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root to mount a tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot mount a tmpfs here: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	s, err := OpenReceiptStore(filepath.Join(dir, "receipts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fill := range []int{0, 1} {
		// Fill the disk, leaving (fill=1) room for about one small file.
		filler := filepath.Join(dir, "filler")
		os.Remove(filler)
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		f.Close()
		if fill == 1 {
			os.Truncate(filler, mustSize(t, filler)-8192)
		}
		runs := 0
		key := fmt.Sprint("key-", fill)
		doCounting(t, s, "n1", key, &runs)
		doCounting(t, s, "n1", key, &runs)
		if runs > 1 {
			t.Fatalf("disk full (fill %d): the same key ran %d times", fill, runs)
		}
	}
}

func mustSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// skipOrFail skips, or fails under TERMSPRAWL_REQUIRE_ALL (CI), where
// every test must run.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	testenv.SkipOrFail(t, "%s", why)
}

// The receipt, not the intent, fails to store: the call ran once and its
// repeat is refused instead of run again.
func TestReceiptUnstorableAfterRunIsNotRunAgain(t *testing.T) {
	s, err := OpenReceiptStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.hookWrite = func(st storedReceipt) error {
		if !st.Pending {
			return syscall.ENOSPC
		}
		return nil
	}
	runs := 0
	if receipt, err := doCounting(t, s, "n1", "k", &runs); receipt == nil || err == nil {
		t.Fatalf("first call: receipt %s, err %v; want the receipt and the store's error", receipt, err)
	}
	if _, err := doCounting(t, s, "n1", "k", &runs); KindOf(err) != KindInProgress || runs != 1 {
		t.Fatalf("repeat: %v, runs %d; want in_progress after one run", err, runs)
	}
}
