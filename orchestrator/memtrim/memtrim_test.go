package memtrim

import "testing"

// The meter returns memory once after enough output, and only once the
// output has calmed; a trickle never triggers it.
func TestOutputMeterFreesOnceCalm(t *testing.T) {
	t.Parallel()
	frees := 0
	m := Meter{FreeOS: func() { frees++ }}
	m.Quiet()
	if m.armed {
		t.Fatal("armed without output")
	}
	m.Add(FreeOSEvery)
	m.Quiet()
	if !m.armed {
		t.Fatal("not armed after a flood")
	}
	m.timer.Stop() // fire by hand, deterministically
	m.Quiet()      // armed already: nothing more
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
	m.Quiet()
	if m.armed {
		t.Error("armed again for less than FreeOSEvery of output")
	}
	m.Stop()
}
