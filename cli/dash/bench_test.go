package dash

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// scaleState is n nodes: agents in every state and shells.
func scaleState(n int) tools.StreamState {
	st := tools.StreamState{}
	states := []string{tools.AgentWorking, tools.AgentIdle, tools.AgentWaiting, tools.AgentStarting}
	for i := range n {
		id := fmt.Sprintf("node-%03d", i)
		if i%3 == 0 {
			st.Nodes = append(st.Nodes, shell(id))
			continue
		}
		st.Nodes = append(st.Nodes, agent(id, states[i%len(states)], i%4 == 2))
	}
	return st
}

// styledScreen is a 40×120 screen of coloured runs.
func styledScreen(node string, rev uint64) *tools.StreamScreen {
	s := &tools.StreamScreen{Node: node, Rev: rev, Cols: 120, Rows: 40, Full: true, Cursor: tools.StreamCursor{X: 3, Y: 39, Visible: true}}
	for y := range 40 {
		s.Lines = append(s.Lines, tools.StreamLine{Y: y, R: []tools.StreamRun{
			{T: fmt.Sprintf("%04d ", rev%10000), F: "#5fd75f"},
			{T: "some output of a busy program ", A: tools.RunBold},
			{T: "with colours", F: "#ff5f5f", B: "#303030"},
		}})
	}
	return s
}

// BenchmarkKeyToFrame is the model's key → frame time at 200 nodes while
// the shown node prints: each iteration applies a screen event of the
// shown node and a state event (as 20 printing nodes cause), then one
// key (j or k) and the frame it draws. It reports the p99 of key+frame.
func BenchmarkKeyToFrame(b *testing.B) {
	m := New(context.Background(), Options{Now: time.Now})
	m.width, m.height = 200, 50
	st := scaleState(200)
	m.onStream(tools.StreamEvent{Frame: &tools.StreamFrame{State: st}})
	keys := []string{"j", "k"}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m.onStream(tools.StreamEvent{Screen: styledScreen(m.Selected(), uint64(i+1)), At: time.Now()})
		if i%4 == 0 {
			m.onStream(tools.StreamEvent{State: &st})
		}
		start := time.Now()
		m.onKey(key(keys[i%2]))
		_ = m.Render()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}
