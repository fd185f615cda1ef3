package toolserver

import (
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// Fleet tools (CONTRACT §30): fleet_search here, agent_fork in fork.go.
// The engine searches (orchestrator/search.go); here the caller's realm
// picks what it may read: an agent kept to its host searches that host's
// nodes and their recordings only (realm.go).

func fleetHandlers() map[string]handler {
	return map[string]handler{
		"fleet_search": reader(fleetSearch),
		"agent_fork":   mutator(agentFork),
	}
}

type fleetSearchArgs struct {
	Pattern    string   `json:"pattern"`
	Regex      bool     `json:"regex"`
	IgnoreCase bool     `json:"ignore_case"`
	Nodes      []string `json:"nodes"`
	Recordings bool     `json:"recordings"`
	Since      string   `json:"since"`
	Limit      int      `json:"limit"`
}

func fleetSearch(c *call, a fleetSearchArgs) (tools.FleetSearchResult, error) {
	spec := orchestrator.SearchSpec{Pattern: a.Pattern, Regex: a.Regex, IgnoreCase: a.IgnoreCase, Recordings: a.Recordings, Limit: a.Limit}
	if a.Since != "" {
		t, err := tools.ParseSince(a.Since, time.Now())
		if err != nil {
			return tools.FleetSearchResult{}, tools.Errorf(tools.KindUsage, "%v", err)
		}
		spec.Since = t
	}
	if len(a.Nodes) > 0 {
		spec.OnlyNodes = true
		seen := map[string]bool{}
		for _, word := range a.Nodes {
			id, err := c.s.eng.fleet.Resolve(word)
			if err != nil {
				return tools.FleetSearchResult{}, err
			}
			if err := c.inRealm(id); err != nil {
				return tools.FleetSearchResult{}, err
			}
			if !seen[id] {
				seen[id] = true
				spec.Nodes = append(spec.Nodes, id)
			}
		}
	} else {
		host, confined := c.realm()
		for _, m := range c.s.eng.fleet.Nodes() {
			if !confined || m.Host == host {
				spec.Nodes = append(spec.Nodes, m.ID)
			}
		}
	}
	if host, confined := c.realm(); confined {
		// A recording belongs to its node's realm: a node still known
		// on the caller's host (the recordings of gone nodes and of
		// other machines are not the caller's to read).
		spec.MayReadRecording = func(m tools.TraceMeta) bool {
			nm, ok := c.s.eng.fleet.Meta(m.Node)
			return ok && nm.Host == host
		}
	}
	return c.s.eng.fleet.Search(c.ctx, spec)
}
