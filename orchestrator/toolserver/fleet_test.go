package toolserver

import (
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// fleetWait waits until node's output holds text (history included).
func fleetWait(t *testing.T, sess, node, text string) {
	t.Helper()
	apiOK(t, sess, "terminal_wait_for", apiM{"terminal": node, "wait": "text", "text": text, "after": 0, "timeout_ms": 30000}, nil)
}

func fleetSearchOK(t *testing.T, sess string, args apiM) tools.FleetSearchResult {
	t.Helper()
	var r tools.FleetSearchResult
	apiOK(t, sess, "fleet_search", args, &r)
	return r
}

// A marker scrolled far off one node's screen (thousands of lines into
// its history) and another on a second node's screen are both found,
// each with its node and the line terminal_scrollback reads it at;
// regex, ignore_case, a pattern in no node, the limit's cut, a bad
// regular expression and the recordings.
func TestFleetSearch(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	hist := apiLaunch(t, op, "sh", "-c", "echo 'far MARKER-hist-1 away'; seq 1 3000; echo seq-done; exec sleep 600")
	scr := apiLaunch(t, op, "sh", "-c", "echo 'here MARKER-screen-2'; echo shown; exec sleep 600")
	fleetWait(t, op, hist, "seq-done")
	fleetWait(t, op, scr, "shown")

	r := fleetSearchOK(t, op, apiM{"pattern": "MARKER-"})
	if len(r.Matches) != 2 || r.Truncated || r.Nodes != 2 {
		t.Fatalf("MARKER-: %+v, want 2 matches of 2 nodes", r)
	}
	byNode := map[string]tools.FleetMatch{}
	for _, m := range r.Matches {
		byNode[m.Node] = m
	}
	h, sc := byNode[hist], byNode[scr]
	if h.Source != tools.MatchHistory || h.Line > -2900 || h.Text != "far MARKER-hist-1 away" {
		t.Fatalf("the history marker: %+v, want history, line about -3000", h)
	}
	if sc.Source != tools.MatchScreen || sc.Line != 0 || sc.Text != "here MARKER-screen-2" {
		t.Fatalf("the screen marker: %+v, want screen line 0", sc)
	}
	// The line is terminal_scrollback's: reading it there gives the marker.
	var sb tools.ScrollbackResult
	apiOK(t, op, "terminal_scrollback", apiM{"terminal": hist, "from": h.Line, "to": h.Line}, &sb)
	if len(sb.Lines) != 1 || !strings.Contains(sb.Lines[0].Text, "MARKER-hist-1") {
		t.Fatalf("terminal_scrollback at line %d: %+v", h.Line, sb.Lines)
	}

	cases := []struct {
		name string
		args apiM
		want int
	}{
		{"regex", apiM{"pattern": `MARKER-(hist|screen)-[0-9]$`, "regex": true}, 1},
		{"regex-i", apiM{"pattern": `marker-[a-z]+-[12]`, "regex": true, "ignore_case": true}, 2},
		{"regex-case", apiM{"pattern": `marker-[a-z]+-[12]`, "regex": true}, 0},
		{"literal-i", apiM{"pattern": "marker-hist", "ignore_case": true}, 1},
		{"literal-dot", apiM{"pattern": "MARKER.hist"}, 0},
		{"nowhere", apiM{"pattern": "NO-SUCH-TEXT-ANYWHERE"}, 0},
		{"one-node", apiM{"pattern": "MARKER-", "nodes": []string{scr}}, 1},
	}
	for _, c := range cases {
		r := fleetSearchOK(t, op, c.args)
		if len(r.Matches) != c.want || r.Truncated {
			t.Errorf("%s: %d matches (truncated %v), want %d: %+v", c.name, len(r.Matches), r.Truncated, c.want, r.Matches)
		}
	}

	// The limit's cut is said; the matches kept are the first ones.
	r = fleetSearchOK(t, op, apiM{"pattern": "7", "nodes": []string{hist}, "limit": 5})
	if len(r.Matches) != 5 || !r.Truncated || r.Limit != 5 || r.Matches[0].Text != "7" {
		t.Fatalf("limit 5: %+v", r)
	}
	r = fleetSearchOK(t, op, apiM{"pattern": "seq-done"})
	if r.Truncated || r.Limit != tools.DefaultSearchLimit {
		t.Fatalf("default limit: %+v", r)
	}

	res := apiFail(t, op, "fleet_search", apiM{"pattern": "(", "regex": true}, tools.KindUsage)
	if !strings.Contains(res.Error, "regular expression") {
		t.Fatalf("bad regex: %s", res.Error)
	}
	apiFail(t, op, "fleet_search", apiM{"pattern": "x", "since": "yesterday"}, tools.KindUsage)
	apiFail(t, op, "fleet_search", apiM{"pattern": "x", "nodes": []string{"nobody"}}, tools.KindNotFound)

	// Recordings: a recorded node's output is found with its time, from
	// the cast, once the recording is stopped (and while the node lives
	// its screen too).
	rec := apiLaunch(t, op, "sh", "-c", "sleep 0.5; echo 'in the REC-MARK-7 cast'; exec sleep 600")
	apiMutate(t, op, "terminal_record", apiM{"terminal": rec, "on": true})
	fleetWait(t, op, rec, "REC-MARK-7")
	apiMutate(t, op, "terminal_record", apiM{"terminal": rec, "on": false})
	r = fleetSearchOK(t, op, apiM{"pattern": "REC-MARK-7", "recordings": true})
	var got []string
	for _, m := range r.Matches {
		got = append(got, m.Source)
		if m.Source == tools.MatchRecording && (m.Node != rec || m.Time == "" || m.Recording == "" || m.Text != "in the REC-MARK-7 cast") {
			t.Fatalf("recording match %+v %q (node %s)", m, m.Text, rec)
		}
	}
	if strings.Join(got, ",") != "screen,recording" || r.Recordings != 1 {
		t.Fatalf("REC-MARK-7 with recordings: %+v", r)
	}
	r = fleetSearchOK(t, op, apiM{"pattern": "REC-MARK-7", "recordings": true, "since": "2026-01-01T00:00:00Z"})
	if len(r.Matches) != 2 {
		t.Fatalf("since long ago: %+v", r)
	}
	r = fleetSearchOK(t, op, apiM{"pattern": "REC-MARK-7", "recordings": true, "since": "0s"})
	if len(r.Matches) != 1 {
		t.Fatalf("since now: the recorded line is older, want the screen's only: %+v", r)
	}
}

// A node on a host is searched through its host's mirror connection,
// its history included; an agent on that host (kept to it) searches its
// host's nodes only: this machine's nodes and recordings are not its to
// read, and naming one is refused.
func TestFleetSearchRemoteAndRealm(t *testing.T) {
	t.Parallel()
	s := realmServe(t, false)
	op := s.op()
	local := realmLaunch(t, op, apiM{"command": []string{"sh", "-c", "echo REALM-local-1; exec sleep 600"}, "cwd": t.TempDir()})
	rem := realmLaunch(t, op, apiM{"command": []string{"sh", "-c", "echo REALM-rem-far; seq 1 500; echo rem-done; exec sleep 600"}, "host": "rem"})
	fleetWait(t, op, local.Terminal, "REALM-local-1")
	fleetWait(t, op, rem.Terminal, "rem-done")
	apiMutate(t, op, "terminal_record", apiM{"terminal": local.Terminal, "on": true})
	apiOK(t, op, "terminal_type", apiM{"terminal": local.Terminal, "text": "x"}, nil)
	apiMutate(t, op, "terminal_record", apiM{"terminal": local.Terminal, "on": false})

	r := fleetSearchOK(t, op, apiM{"pattern": "REALM-"})
	if len(r.Matches) != 2 || r.Nodes != 2 {
		t.Fatalf("the operator's search: %+v", r)
	}
	for _, m := range r.Matches {
		if m.Node == rem.Terminal && (m.Source != tools.MatchHistory || m.Line > -400 || m.Text != "REALM-rem-far") {
			t.Fatalf("the remote node's history marker: %+v", m)
		}
	}

	agent := s.session(rem.Terminal)
	r = fleetSearchOK(t, agent, apiM{"pattern": "REALM-", "recordings": true})
	if len(r.Matches) != 1 || r.Matches[0].Node != rem.Terminal || r.Nodes != 1 || r.Recordings != 0 {
		t.Fatalf("the agent on rem searched outside its host: %+v", r)
	}
	apiFail(t, agent, "fleet_search", apiM{"pattern": "REALM-", "nodes": []string{local.Terminal}}, tools.KindForbidden)
}
