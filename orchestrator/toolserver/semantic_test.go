package toolserver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/tools"
)

var semdemo struct {
	once sync.Once
	bin  string
	err  error
}

// semdemoBin builds testdata/semdemo (a Bubble Tea v2 program using
// probe) once per test binary.
func semdemoBin(t *testing.T) string {
	t.Helper()
	semdemo.once.Do(func() {
		dir, err := os.MkdirTemp("", "semdemo-")
		if err != nil {
			semdemo.err = err
			return
		}
		semdemo.bin = filepath.Join(dir, "semdemo")
		out, err := exec.Command("go", "build", "-o", semdemo.bin, "./testdata/semdemo").CombinedOutput()
		if err != nil {
			semdemo.err = fmt.Errorf("go build semdemo: %v\n%s", err, out)
		}
	})
	if semdemo.err != nil {
		t.Fatal(semdemo.err)
	}
	return semdemo.bin
}

func TestSemanticRolesMatchTheTable(t *testing.T) {
	t.Parallel()
	if !slices.Equal(semantic.Roles, tools.SemanticRoles) || !slices.Equal(semantic.States, tools.SemanticStates) {
		t.Fatalf("roles or states differ: %v / %v", semantic.Roles, tools.SemanticRoles)
	}
}

// lastShown is what the demo says it got: "last: click ROW,COL ok".
var lastShown = regexp.MustCompile(`last: (click|hover|wheel) (\d+),(\d+)(.*)`)

func semWaitLast(t *testing.T, sess, id, kind string, r apiReceipt, b tools.SemanticBounds) (rest string) {
	t.Helper()
	var mr tools.MouseResult
	json.Unmarshal(r.Result, &mr)
	scr := apiWaitScreen(t, sess, id, fmt.Sprintf("last: %s %d,%d", kind, mr.At.Row, mr.At.Column))
	m := lastShown.FindStringSubmatch(scr)
	row, _ := strconv.Atoi(m[2])
	col, _ := strconv.Atoi(m[3])
	if row < b.Row || row >= b.Row+b.Height || col < b.Column || col >= b.Column+b.Width {
		t.Fatalf("%s at %d,%d is outside the bounds %+v", kind, row, col, b)
	}
	return m[4]
}

func semQuery(t *testing.T, sess, id string, loc apiM) tools.QueryResult {
	t.Helper()
	var q tools.QueryResult
	apiOK(t, sess, "terminal_query", apiM{"terminal": id, "locator": loc}, &q)
	return q
}

func semNames(q tools.QueryResult) string {
	var out []string
	for _, n := range q.Nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ",")
}

// The semantic tree end to end: a Bubble Tea v2 program publishes with
// probe from inside a real tmux node; agents query, click, hover, fill,
// check and wait by locator through the tool server.
func TestAPISemanticTree(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	bin := semdemoBin(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()

	id := apiLaunch(t, op, bin, "-wait")
	bare := apiLaunch(t, op, bin, "-noprobe")
	apiWaitScreen(t, op, id, "probe off")
	apiWaitScreen(t, op, bare, "Settings")
	rr, _ := apiMutate(t, op, "terminal_record", apiM{"terminal": id, "on": true})
	var rec tools.RecordResult
	json.Unmarshal(rr.Result, &rec)

	// No tree yet: unavailable, and targeting by role is refused.
	for _, term := range []string{id, bare} {
		var caps tools.Capabilities
		apiOK(t, op, "terminal_capabilities", apiM{"terminal": term}, &caps)
		if caps.SemanticTree != "unavailable" {
			t.Fatalf("%s before a commit: %+v", term, caps)
		}
		if snap := apiSnapshot(t, op, term); snap.Semantic != nil {
			t.Fatalf("semantic lines without a tree: %v", snap.Semantic)
		}
	}
	res := apiFail(t, op, "terminal_click", apiM{"terminal": bare, "locator": apiM{"role": "button"}}, tools.KindNotRun)
	if res.Details["semantic_tree"] != "unavailable" || !strings.Contains(res.Error, "screen text") {
		t.Fatalf("no probe: %s %v", res.Error, res.Details)
	}
	apiFail(t, op, "terminal_query", apiM{"terminal": bare, "locator": apiM{"role": "button"}}, tools.KindNotRun)

	// The program starts publishing; a semantic wait sees the commit.
	pr, _ := apiMutate(t, op, "terminal_type", apiM{"terminal": id, "text": "P"})
	var in tools.InputResult
	json.Unmarshal(pr.Result, &in)
	var w tools.WaitResult
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"role": "dialog"}, "state": "visible", "after": in.Revision, "timeout_ms": 15000}, &w)
	if !w.Matched || !strings.Contains(w.Match, `dialog "Settings"`) {
		t.Fatalf("wait %+v", w)
	}
	var caps tools.Capabilities
	apiOK(t, op, "terminal_capabilities", apiM{"terminal": id}, &caps)
	if caps.SemanticTree != "available" {
		t.Fatalf("after a commit: %+v", caps)
	}
	snap := apiSnapshot(t, op, id)
	joined := strings.Join(snap.Semantic, "\n")
	if !regexp.MustCompile(`(?m)^  button "OK" test_id="ok-btn" ref=semantic:ok@\d+ bounds=\(\d+,0,6,1\)$`).MatchString(joined) {
		t.Fatalf("snapshot semantic:\n%s", joined)
	}

	// Queries by role, name, /regex/, test id, nth.
	// A locator names one node (CONTRACT §22): two buttons are a conflict
	// that lists both.
	if res := apiFail(t, op, "terminal_query", apiM{"terminal": id, "locator": apiM{"role": "button"}}, tools.KindConflict); res.Details["reason"] != "ambiguous-locator" ||
		!strings.Contains(fmt.Sprint(res.Details["matches"]), "OK") || !strings.Contains(fmt.Sprint(res.Details["matches"]), "Cancel") {
		t.Fatalf("by role, two buttons: %s %v", res.Error, res.Details)
	}
	if q := semQuery(t, op, id, apiM{"role": "button", "nth": 1}); semNames(q) != "OK" || len(q.Matches) != 0 {
		t.Fatalf("by role, nth 1: %+v", q)
	}
	if q := semQuery(t, op, id, apiM{"name": "Cancel"}); semNames(q) != "Cancel" {
		t.Fatalf("by name: %+v", q)
	}
	if res := apiFail(t, op, "terminal_query", apiM{"terminal": id, "locator": apiM{"role": "listitem", "name": "/^BANANA/i"}}, tools.KindConflict); !strings.Contains(fmt.Sprint(res.Details["matches"]), "banana split") {
		t.Fatalf("by regex, two items: %s %v", res.Error, res.Details)
	}
	if q := semQuery(t, op, id, apiM{"role": "listitem", "name": "/^BANANA SPLIT/i"}); semNames(q) != "banana split" {
		t.Fatalf("by regex: %+v", q)
	}
	if q := semQuery(t, op, id, apiM{"test_id": "agree-box"}); semNames(q) != "I agree" {
		t.Fatalf("by test id: %+v", q)
	}
	if q := semQuery(t, op, id, apiM{"role": "listitem", "name": "/banana/", "nth": 2}); semNames(q) != "banana split" {
		t.Fatalf("nth: %+v", q)
	}
	okNode := semQuery(t, op, id, apiM{"test_id": "ok-btn"}).Nodes[0]

	// Ambiguous locators are refused unless nth.
	res = apiFail(t, op, "terminal_click", apiM{"terminal": id, "locator": apiM{"role": "button"}}, tools.KindConflict)
	if res.Details["reason"] != "ambiguous-locator" {
		t.Fatalf("ambiguous: %v", res.Details)
	}

	// Click and hover by locator: real mouse reports inside the bounds.
	cr, _ := apiMutate(t, op, "terminal_click", apiM{"terminal": id, "locator": apiM{"role": "button", "name": "OK"}})
	if rest := semWaitLast(t, op, id, "click", cr, okNode.Bounds); !strings.Contains(rest, "ok") {
		t.Fatalf("click shown %q", rest)
	}
	cancel := semQuery(t, op, id, apiM{"role": "button", "nth": 2}).Nodes[0]
	cr, _ = apiMutate(t, op, "terminal_click", apiM{"terminal": id, "locator": apiM{"role": "button", "nth": 2}})
	if rest := semWaitLast(t, op, id, "click", cr, cancel.Bounds); !strings.Contains(rest, "cancel") {
		t.Fatalf("nth click: %q", rest)
	}
	agree := semQuery(t, op, id, apiM{"test_id": "agree-box"}).Nodes[0]
	cr, _ = apiMutate(t, op, "terminal_hover", apiM{"terminal": id, "locator": apiM{"test_id": "agree-box"}})
	semWaitLast(t, op, id, "hover", cr, agree.Bounds)
	list := semQuery(t, op, id, apiM{"role": "list"}).Nodes[0]
	cr, _ = apiMutate(t, op, "terminal_wheel", apiM{"terminal": id, "locator": apiM{"role": "list"}, "delta_y": 1})
	semWaitLast(t, op, id, "wheel", cr, list.Bounds)
	var mr tools.MouseResult

	// A semantic wait is satisfied only by a commit after the baseline:
	// the checkbox is unchecked already, so waiting for that times out.
	res = apiFail(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"test_id": "agree-box"}, "state": "unchecked", "timeout_ms": 300}, tools.KindTimeout)
	cr, _ = apiMutate(t, op, "terminal_click", apiM{"terminal": id, "ref": agree.Ref})
	json.Unmarshal(cr.Result, &mr)
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"test_id": "agree-box"}, "state": "checked", "after": mr.Revision, "timeout_ms": 15000}, &w)
	if !w.Matched || !strings.HasSuffix(w.Match, "checked") {
		t.Fatalf("checked wait %+v", w)
	}

	// check / uncheck, verified; checking a checked box sends nothing.
	var ar tools.SemanticActionResult
	r, _ := apiMutate(t, op, "terminal_check", apiM{"terminal": id, "locator": apiM{"role": "checkbox"}})
	json.Unmarshal(r.Result, &ar)
	if ar.Sent || ar.Checked == nil || !*ar.Checked || ar.Verified == "" {
		t.Fatalf("check of a checked box: %s", r.Result)
	}
	r, _ = apiMutate(t, op, "terminal_uncheck", apiM{"terminal": id, "locator": apiM{"role": "checkbox"}})
	json.Unmarshal(r.Result, &ar)
	if !ar.Sent || ar.Checked == nil || *ar.Checked || !strings.HasPrefix(ar.Verified, "semantic:agree@") {
		t.Fatalf("uncheck: %s", r.Result)
	}
	if q := semQuery(t, op, id, apiM{"role": "checkbox"}); q.Nodes[0].State.Checked {
		t.Fatalf("still checked: %+v", q.Nodes[0])
	}
	r, _ = apiMutate(t, op, "terminal_check", apiM{"terminal": id, "locator": apiM{"role": "checkbox"}})
	json.Unmarshal(r.Result, &ar)
	if !ar.Sent || !*ar.Checked || !semQuery(t, op, id, apiM{"role": "checkbox"}).Nodes[0].State.Checked {
		t.Fatalf("check: %s", r.Result)
	}

	// fill focuses through a real click, replaces the value, verifies it.
	for _, v := range []string{"alice", "bob"} {
		r, _ = apiMutate(t, op, "terminal_fill", apiM{"terminal": id, "locator": apiM{"role": "textbox", "name": "Name"}, "text": v})
		json.Unmarshal(r.Result, &ar)
		if !ar.Sent || ar.Value != v || ar.Verified == "" {
			t.Fatalf("fill %s: %s", v, r.Result)
		}
		if q := semQuery(t, op, id, apiM{"role": "textbox"}); q.Nodes[0].Value != v || !q.Nodes[0].State.Focused {
			t.Fatalf("after fill %s: %+v", v, q.Nodes[0])
		}
	}
	apiWaitScreen(t, op, id, "Name: bob_")
	r, _ = apiMutate(t, op, "terminal_fill", apiM{"terminal": id, "locator": apiM{"role": "textbox"}, "text": "bob"})
	json.Unmarshal(r.Result, &ar)
	if ar.Sent || ar.Value != "bob" || ar.Verified == "" {
		t.Fatalf("fill with the value it has: %s", r.Result)
	}
	apiFail(t, op, "terminal_fill", apiM{"terminal": id, "locator": apiM{"role": "checkbox"}, "text": "x"}, tools.KindUsage)

	// Refs: a node still in a later commit keeps working; a gone one is stale.
	last := semQuery(t, op, id, apiM{"role": "listitem", "name": "banana split"}).Nodes[0]
	apiMutate(t, op, "terminal_click", apiM{"terminal": id, "ref": okNode.Ref}) // from an older commit, still there; unfocuses the field
	apiWaitScreen(t, op, id, " ok\nprobe on")
	dr, _ := apiMutate(t, op, "terminal_type", apiM{"terminal": id, "text": "d"})
	json.Unmarshal(dr.Result, &in)
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"name": "banana split"}, "state": "hidden", "after": in.Revision, "timeout_ms": 15000}, nil)
	res = apiFail(t, op, "terminal_click", apiM{"terminal": id, "ref": last.Ref}, tools.KindConflict)
	if res.Details["reason"] != "stale-ref" {
		t.Fatalf("stale: %v", res.Details)
	}
	var ch tools.Changes
	apiOK(t, op, "terminal_capture_since", apiM{"terminal": id, "cursor": in.Revision}, &ch)
	if ch.Semantic == nil || len(ch.Semantic.Removed) != 1 || !strings.Contains(ch.Semantic.Removed[0], `listitem "banana split"`) {
		t.Fatalf("capture_since semantic: %+v", ch.Semantic)
	}

	semanticBadPublishes(t, s, id, bare)

	// The recording kept the commits: the frame at the end has the tree.
	apiMutate(t, op, "terminal_record", apiM{"terminal": id, "on": false})
	var opened struct {
		Trace string `json:"trace"`
	}
	apiOK(t, op, "trace_open", apiM{"path": rec.Path}, &opened)
	var frame tools.TraceFrame
	apiOK(t, op, "trace_frame_at", apiM{"trace": opened.Trace}, &frame)
	if !slices.ContainsFunc(frame.Semantic, func(l string) bool { return strings.Contains(l, `textbox "Name" value="bob"`) }) {
		t.Fatalf("frame semantic: %v", frame.Semantic)
	}
	var early tools.TraceFrame
	apiOK(t, op, "trace_frame_at", apiM{"trace": opened.Trace, "time_ms": 0}, &early)
	if early.Semantic != nil {
		t.Fatalf("a tree before the first commit: %v", early.Semantic)
	}
}

// semanticBadPublishes: refused trees change nothing; only a node's own
// session publishes, and only for itself.
func semanticBadPublishes(t *testing.T, s *apiServe, id, bare string) {
	op := s.op()
	before := apiSnapshot(t, op, id).Semantic
	node := func(extra string) string {
		return `{"id":"root","role":"window","bounds":{"row":0,"column":0,"width":80,"height":24}` + extra + `}`
	}
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"n%d","role":"text","bounds":{"row":0,"column":0,"width":1,"height":1}}`, i)
	}
	for _, c := range []struct {
		name, tree, reason string
	}{
		{"unknown role", `{"id":"a","role":"slider","bounds":{"row":0,"column":0,"width":1,"height":1}}`, "unknown-role"},
		{"5000 nodes", node(`,"children":[` + strings.Join(many, ",") + `]`), "too-many-nodes"},
		{"bounds off the screen", `{"id":"a","role":"button","bounds":{"row":23,"column":75,"width":10,"height":1}}`, "bounds-off-screen"},
		{"invalid utf-8", node(`,"name":"` + "ok\xff" + `"`), "invalid-utf8"},
	} {
		res := apiCall(t, s.session(id), "semantic_publish", json.RawMessage(`{"tree":`+c.tree+`}`))
		if res.OK || res.Kind != tools.KindUsage || res.Details["reason"] != c.reason {
			t.Fatalf("%s: %+v", c.name, res)
		}
	}
	// Over 1 MiB: refused before it is sent (the request's limit).
	big := node(`,"name":"` + strings.Repeat("x", tools.MaxSemanticTreeBytes) + `"`)
	if res := apiCall(t, s.session(id), "semantic_publish", json.RawMessage(`{"tree":`+big+`}`)); res.OK || res.Kind != tools.KindUsage || !strings.Contains(res.Error, "limit") {
		t.Fatalf("over 1 MiB: %+v", res)
	}
	if res := apiCall(t, op, "semantic_publish", apiM{"tree": json.RawMessage(node(""))}); res.OK || res.Kind != tools.KindForbidden {
		t.Fatalf("operator publish: %+v", res)
	}
	if after := apiSnapshot(t, op, id).Semantic; !slices.Equal(before, after) {
		t.Fatalf("a refused publish changed the tree:\n%v\n%v", before, after)
	}
	// Another node's token publishes for that node only.
	var pub tools.SemanticPublished
	apiOK(t, s.session(bare), "semantic_publish", apiM{"tree": json.RawMessage(node(`,"name":"bare"`))}, &pub)
	if pub.Terminal != bare || pub.Commit != 1 || pub.Nodes != 1 {
		t.Fatalf("publish for itself: %+v", pub)
	}
	if after := apiSnapshot(t, op, id).Semantic; !slices.Equal(before, after) {
		t.Fatalf("another node's publish changed this tree")
	}
	if l := apiSnapshot(t, op, bare).Semantic; len(l) != 1 || !strings.HasPrefix(l[0], `window "bare" ref=semantic:root@`) {
		t.Fatalf("bare's tree: %v", l)
	}
}

// Across an orchestrator restart: the probe finds the new orchestrator
// with the same session and publishes its tree again.
func TestAPISemanticAcrossRestart(t *testing.T) {
	t.Parallel()
	bin := semdemoBin(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	id := apiLaunch(t, s.op(), bin)
	wait := apiM{"terminal": id, "wait": "semantic", "locator": apiM{"role": "button", "name": "OK"}, "state": "visible", "after": 0, "timeout_ms": 15000}
	apiOK(t, s.op(), "terminal_wait_for", wait, nil)
	s.stop()
	s2 := apiStart(t, tmux, dir)
	var w tools.WaitResult
	apiOK(t, s2.op(), "terminal_wait_for", wait, &w)
	if !w.Matched {
		t.Fatalf("after the restart: %+v", w)
	}
}
