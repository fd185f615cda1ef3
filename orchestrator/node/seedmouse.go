package node

import "github.com/termsprawl/termsprawl/orchestrator/screen"

// keepStreamMouse keeps, across a seed, the mouse modes tmux cannot
// report: X10 tracking when tmux sees no tracking, and urxvt encoding.
func keepStreamMouse(st *screen.SeedState, m screen.Modes) {
	if st.MouseTracking == 0 && m.MouseTracking == 9 {
		st.MouseTracking = 9
		st.Mouse = true
	}
	st.MouseURXVT = m.MouseURXVT
}
