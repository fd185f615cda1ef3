package toolserver

import (
	"fmt"
	"math"
	"testing"

	"github.com/termsprawl/termsprawl/internal/browsertest"
	"github.com/termsprawl/termsprawl/internal/testenv"
)

// The monitor shows the semantic tree beside the screen, and hovering a
// node's line outlines its bounds on the screen (headless Chromium).
func TestMonitorSemanticInBrowser(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "starts Chromium")
	bin := semdemoBin(t)
	b := browsertest.Start(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	url := monitorURL(t, op)
	id := apiLaunch(t, op, bin)
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"role": "dialog"}, "state": "visible", "after": 0, "timeout_ms": 15000}, nil)
	ok := semQuery(t, op, id, apiM{"test_id": "ok-btn"}).Nodes[0]

	b.Do("open", apiM{"url": url + "#node=" + id})
	b.Do("waitShown", apiM{"node": id})
	got := b.Do("eval", apiM{"expr": fmt.Sprintf(`(async () => {
		for (let i = 0; i < 300; i++) {
			const lines = [...document.querySelectorAll('#semantic .sem-node')];
			const line = lines.find((l) => l.textContent.includes('button "OK"'));
			const rows = document.querySelectorAll('#screen .row');
			if (line && rows.length > %d) {
				line.dispatchEvent(new MouseEvent('mouseenter'));
				const o = document.querySelector('#screen .sem-outline');
				const s = document.getElementById('screen').getBoundingClientRect();
				const r = o.getBoundingClientRect();
				const row = rows[%d].getBoundingClientRect();
				const res = [lines.length, r.left - s.left, r.top - s.top, r.width, r.height, row.top - s.top, row.height, s.width / 80, o.dataset.ref];
				line.dispatchEvent(new MouseEvent('mouseleave'));
				res.push(document.querySelectorAll('#screen .sem-outline').length);
				return res;
			}
			await new Promise((r) => setTimeout(r, 50));
		}
		return null;
	})()`, ok.Bounds.Row, ok.Bounds.Row)})["value"]
	v, isList := got.([]any)
	if !isList {
		t.Fatalf("the page never listed the tree's OK button: %v", got)
	}
	num := func(i int) float64 { f, _ := v[i].(float64); return f }
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1.5 }
	cell := num(7)
	if int(num(0)) != len(apiSnapshot(t, op, id).Semantic) {
		t.Errorf("the page lists %v nodes", v[0])
	}
	if !near(num(1), float64(ok.Bounds.Column)*cell) || !near(num(2), num(5)) || !near(num(3), float64(ok.Bounds.Width)*cell) || !near(num(4), num(6)) {
		t.Errorf("outline at left %.1f top %.1f size %.1fx%.1f; want left %.1f top %.1f size %.1fx%.1f", num(1), num(2), num(3), num(4),
			float64(ok.Bounds.Column)*cell, num(5), float64(ok.Bounds.Width)*cell, num(6))
	}
	if v[8] != ok.Ref || num(9) != 0 {
		t.Errorf("outline ref %v (want %s), outlines left after mouseleave %v", v[8], ok.Ref, v[9])
	}
}
