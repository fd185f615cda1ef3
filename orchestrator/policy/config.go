package policy

import (
	"fmt"
	"sort"

	"github.com/termsprawl/termsprawl/orchestrator/config"
)

// CheckConfig is config.toml's check of every rule's syntax (a
// config.Check): `Bash(` is refused at `up` and at reload with its line.
func CheckConfig(c *config.Config) []*config.Error {
	var errs []*config.Error
	check := func(prefix string, r config.Rules) {
		for _, l := range []struct {
			name  string
			rules []string
		}{{"allow", r.Allow}, {"ask", r.Ask}, {"deny", r.Deny}} {
			for _, s := range l.rules {
				if _, err := ParseRule(s); err != nil {
					errs = append(errs, c.Errorf(prefix+l.name, `write Tool or Tool(pattern) in Claude Code's syntax, e.g. "Bash(git status)", "Bash(npm run test:*)", "Edit(src/**)"`, "%v", err))
				}
			}
		}
	}
	check("policy.", c.Policy.Rules)
	for _, k := range sortedKeys(c.Policy.Kind) {
		check(fmt.Sprintf("policy.kind.%s.", k), c.Policy.Kind[k])
	}
	for _, k := range sortedKeys(c.Policy.Named) {
		check(fmt.Sprintf("policy.named.%s.", k), c.Policy.Named[k])
	}
	return errs
}

func sortedKeys(m map[string]config.Rules) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FromConfig is a config.toml scope's rules.
func FromConfig(r config.Rules) Rules { return Rules{Allow: r.Allow, Ask: r.Ask, Deny: r.Deny} }
