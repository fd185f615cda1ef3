package screen_test

import (
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// A seed carries the exact mouse modes: tracking level and every encoding.
func TestSeedMouseModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		st   screen.SeedState
		want screen.Modes
	}{
		{screen.SeedState{MouseTracking: 1002, MouseUTF8: true}, screen.Modes{Mouse: true, MouseTracking: 1002, MouseUTF8: true}},
		{screen.SeedState{MouseTracking: 9, MouseURXVT: true}, screen.Modes{Mouse: true, MouseTracking: 9, MouseURXVT: true}},
		{screen.SeedState{MouseTracking: 1003, MouseSGR: true}, screen.Modes{Mouse: true, MouseTracking: 1003, MouseSGR: true}},
		{screen.SeedState{Mouse: true}, screen.Modes{Mouse: true, MouseTracking: 1000}},
		{screen.SeedState{}, screen.Modes{}},
	} {
		s := screen.New(10, 3)
		// Modes from the stream first: the seed replaces all of them.
		if err := s.Write([]byte("\x1b[?1000h\x1b[?1005h\x1b[?1015h\x1b[?1006h")); err != nil {
			t.Fatal(err)
		}
		st := tc.st
		st.Columns, st.Rows, st.CursorVisible = 10, 3, true
		if err := s.Seed(st); err != nil {
			t.Fatal(err)
		}
		if got := s.Modes(); got != tc.want {
			t.Errorf("seed %+v: modes %+v, want %+v", tc.st, got, tc.want)
		}
		s.Close()
	}
}
