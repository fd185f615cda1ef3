package dash

import (
	"encoding/json"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/termsprawl/termsprawl/tools"
)

// s asks for a text, searches every node (fleet_search, either case),
// lists the matches with node and line (a hostile line made visible),
// j moves, enter selects the match's node; a search that finds nothing
// says so; esc goes back.
func TestModelSearch(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.setReply(func(c call) tools.Result {
		if c.op != "fleet_search" {
			return tools.OKResult(json.RawMessage(`{}`))
		}
		r := tools.FleetSearchResult{Matches: []tools.FleetMatch{}, Nodes: 5, Limit: 200}
		if c.args["pattern"] == "boom" {
			r.Matches = []tools.FleetMatch{
				{Node: "w1", Name: "w1", Source: tools.MatchHistory, Line: -420, Text: "boom in w1"},
				{Node: "s1", Name: "s1", Source: tools.MatchScreen, Line: 3, Text: "boom\x1b[31m red"},
			}
			r.Truncated = true
		}
		b, _ := json.Marshal(r)
		return tools.OKResult(json.RawMessage(b))
	})
	tm, _ := start(t, f, fleet(), 120, 30)
	waitModel(t, tm, "on n1", func(m *Model) bool { return m.Selected() == "n1" })
	tm.Send(key("s"))
	waitModel(t, tm, "the prompt", frameHas("search every node:"))
	for _, r := range "boom" {
		tm.Send(key(string(r)))
	}
	tm.Send(key("enter"))
	c := f.nextCall("fleet_search")
	if c.args["pattern"] != "boom" || c.args["ignore_case"] != true {
		t.Fatalf("fleet_search args %v", c.args)
	}
	waitModel(t, tm, "the results", frameHas(`search "boom": 2 matches (more were cut)`))
	waitModel(t, tm, "w1's match", frameHas("w1:-420: boom in w1"))
	inspect(t, tm, func(m *Model) {
		if strings.Contains(m.Render(), "\x1b[31m red") {
			t.Error("a node's escape sequence reached the frame")
		}
	})
	tm.Send(key("j"))
	tm.Send(key("enter"))
	waitModel(t, tm, "s1 selected", func(m *Model) bool { return m.Selected() == "s1" && m.mode == modeNormal })
	waitModel(t, tm, "the match said", frameHas("s1 line 3: boom"))

	tm.Send(key("s"))
	waitModel(t, tm, "the prompt again", func(m *Model) bool { return m.mode == modeSearchPrompt })
	for range "boom" {
		tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	for _, r := range "zzz" {
		tm.Send(key(string(r)))
	}
	tm.Send(key("enter"))
	waitModel(t, tm, "nothing found", frameHas("no line matches in 5 nodes"))
	tm.Send(key("esc"))
	waitModel(t, tm, "back", func(m *Model) bool { return m.mode == modeNormal && m.Selected() == "s1" })
}
