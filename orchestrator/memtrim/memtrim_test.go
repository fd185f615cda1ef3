package memtrim

import "testing"

// The meter returns memory once after enough output, and only once the
// output has calmed; a trickle never triggers it.
func TestOutputMeterFreesOnceCalm(t *testing.T) {
	t.Parallel()
	frees := 0
	m := Meter{FreeOS: func() { frees++ }}
	m.Quiet(0)
	if m.armed {
		t.Fatal("armed without output")
	}
	m.Add(FreeOSEvery)
	m.Quiet(0)
	if !m.armed {
		t.Fatal("not armed after a flood")
	}
	m.timer.Stop() // fire by hand, deterministically
	m.Quiet(0)     // armed already: nothing more
	m.Add(FreeOSCalm)
	m.fire() // still flowing: looks again later
	if frees != 0 || !m.armed {
		t.Fatalf("freed %d times while the output flowed (armed %v)", frees, m.armed)
	}
	m.timer.Stop()
	m.fire() // calm
	if frees != 1 || m.armed {
		t.Fatalf("after the flood calmed: freed %d times, armed %v", frees, m.armed)
	}
	m.Add(FreeOSEvery - 1)
	m.Quiet(0)
	if m.armed {
		t.Error("armed again for less than FreeOSEvery of output")
	}
	// A node whose own flood ended after that return (its buffers were
	// let go only at its trim) arms it again, though the engine's output
	// since the return is small.
	m.Quiet(FreeOSEvery)
	if !m.armed {
		t.Error("not armed by a node that took in FreeOSEvery since its last trim")
	}
	m.timer.Stop()
	m.fire()
	if frees != 2 {
		t.Errorf("freed %d times, want 2", frees)
	}
	m.Stop()
}
