package record

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// The open traces share a memory budget: opening one that does not fit
// closes the coldest others (named in evicted), the total stays within
// the budget, and Close frees a trace's share.
func TestRegistryMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"a", "b", "c"} {
		sub := filepath.Join(dir, name)
		os.Mkdir(sub, 0o700)
		paths = append(paths, writeBenchCast(t, sub, "scroll", 1<<20, 10*time.Second))
	}
	one, err := Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	per := one.MemoryBytes()
	one.Close()
	if per < 1<<20 {
		t.Fatalf("a 1 MB trace is estimated at %d bytes", per)
	}
	budget := per*5/2 + per/4 // two fit with room for keyframes, three do not
	reg := NewRegistryBudget(budget)
	defer reg.CloseAll()
	for i, p := range paths[:2] {
		if _, _, ev, err := reg.Open(p); err != nil || len(ev) != 0 {
			t.Fatalf("open %d: evicted %v %v", i, ev, err)
		}
	}
	if _, err := reg.Get("trace-1"); err != nil { // trace-2 is now the coldest
		t.Fatal(err)
	}
	id, _, ev, err := reg.Open(paths[2])
	if err != nil || id != "trace-3" || strings.Join(ev, ",") != "trace-2" {
		t.Fatalf("the third: %s evicted %v %v", id, ev, err)
	}
	if m := reg.MemoryBytes(); m > budget {
		t.Fatalf("open traces hold %d bytes, over the budget %d", m, budget)
	}
	if _, err := reg.Get("trace-2"); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("the evicted trace: %v", err)
	}
	before := reg.MemoryBytes()
	if err := reg.Close("trace-3"); err != nil {
		t.Fatal(err)
	}
	if after := reg.MemoryBytes(); after >= before {
		t.Fatalf("close freed nothing: %d then %d", before, after)
	}
}

// The default budget holds the live heap of many open traces: twelve
// 4 MB traces opened and replayed one after another leave at most the
// budget's worth (checked with a small budget standing for the default).
func TestRegistryBudgetBoundsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and replays 48 MB of casts")
	}
	dir := t.TempDir()
	const budget = 24 << 20
	reg := NewRegistryBudget(budget)
	defer reg.CloseAll()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range 12 {
		sub := filepath.Join(dir, string(rune('a'+i)))
		os.Mkdir(sub, 0o700)
		p := writeBenchCast(t, sub, "scroll", 4<<20, time.Minute)
		_, tr, _, err := reg.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tr.Warm()
		if _, err := reg.Get(reg.IDs()[len(reg.IDs())-1]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	live := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	if est := reg.MemoryBytes(); est > budget {
		t.Fatalf("estimated %d MB, over the %d MB budget", est>>20, budget>>20)
	}
	if live > budget*3/2 {
		t.Fatalf("12 traces of 4 MB left %d MB live, over 1.5 times the %d MB budget", live>>20, budget>>20)
	}
	t.Logf("%d traces open, %d MB estimated, %d MB live", len(reg.IDs()), reg.MemoryBytes()>>20, live>>20)
}

// Past the budget an open is refused, not queued (CONTRACT §31): a trace
// larger than the whole budget is refused without closing any other, and
// one that does not fit beside an open under way (which cannot be
// closed) is refused with the figures; both unavailable, retryable,
// reason memory. Nothing stays held.
func TestRegistryRefusesPastBudget(t *testing.T) {
	dir := t.TempDir()
	p := writeBenchCast(t, dir, "scroll", 1<<20, 10*time.Second)
	one, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	per := one.MemoryBytes()
	one.Close()

	check := func(err error, what string) {
		t.Helper()
		var te *tools.Error
		if !errors.As(err, &te) || te.Kind != tools.KindUnavailable || !te.Retryable || te.Details["reason"] != "memory" || te.Details["budget"] != "open traces" {
			t.Fatalf("%s: %v, want unavailable, retryable, reason memory", what, err)
		}
	}
	small := NewRegistryBudget(per / 2)
	_, _, ev, err := small.Open(p)
	check(err, "a trace larger than the budget")
	if len(ev) != 0 || small.mem.InUse() != 0 {
		t.Fatalf("evicted %v, %d bytes held", ev, small.mem.InUse())
	}

	reg := NewRegistryBudget(per * 3 / 2)
	defer reg.CloseAll()
	under, err := reg.mem.Take(per, "an open under way")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = reg.Open(p)
	check(err, "beside an open under way")
	under.Release()
	if reg.mem.InUse() != 0 {
		t.Fatalf("%d bytes held after a refused open", reg.mem.InUse())
	}
	if _, _, _, err := reg.Open(p); err != nil {
		t.Fatalf("once the other open ended: %v", err)
	}
}

// The estimate counts the memory an open trace really holds: for scrolling
// output, full-screen redraws and one-character events, the live heap
// after opening and replaying a trace is within 0.5–1.25 of
// MemoryBytes (the rest of the process's growth is the collector's
// headroom, BenchmarkTraceMemory).
func TestTraceMemoryEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and replays 24 MB of casts")
	}
	for _, kind := range []string{"scroll", "tui", "tiny"} {
		dir := t.TempDir()
		var p string
		if kind == "tiny" {
			p = writeTinyCast(t, dir, 8<<20)
		} else {
			p = writeBenchCast(t, dir, kind, 8<<20, time.Minute)
		}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		tr, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tr.Warm()
		at := tr.DurationMS() / 2
		if _, _, err := tr.FrameAt(&at, ""); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		live := float64(int64(m1.HeapAlloc) - int64(m0.HeapAlloc))
		est := float64(tr.MemoryBytes())
		t.Logf("%s: %.1f MB live, %.1f MB estimated", kind, live/(1<<20), est/(1<<20))
		if live < est*0.5 || live > est*1.25 {
			t.Errorf("%s: %.1f MB live against %.1f MB estimated", kind, live/(1<<20), est/(1<<20))
		}
		runtime.KeepAlive(tr)
		tr.Close()
	}
}
