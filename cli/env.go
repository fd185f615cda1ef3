package cli

import (
	"fmt"

	"github.com/termsprawl/termsprawl/tools"
)

// envFlags are the environment flags of `new` and `agent` (CONTRACT §26):
// the values reach the node and its kept launch, never a listing.
type envFlags struct {
	Env          []string `name:"env" sep:"none" placeholder:"KEY=VALUE" help:"Add KEY=VALUE to the node's environment (repeatable; A=B=C sets A to B=C). The value is kept for restore, never printed."`
	EnvFromShell []string `name:"env-from-shell" sep:"none" placeholder:"KEY" help:"Add KEY with its value in this shell (repeatable), e.g. --env-from-shell ANTHROPIC_API_KEY."`
}

// env is the launch's env argument, nil when no flag was given. lookup
// reads the calling shell's environment.
func (f envFlags) env(lookup func(string) (string, bool)) (map[string]string, error) {
	if len(f.Env) == 0 && len(f.EnvFromShell) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range f.Env {
		k, v, err := tools.ParseEnvAssignment(kv)
		if err != nil {
			return nil, fmt.Errorf("--env: %w", err)
		}
		out[k] = v
	}
	for _, k := range f.EnvFromShell {
		if err := tools.CheckEnvName(k); err != nil {
			return nil, fmt.Errorf("--env-from-shell: %w", err)
		}
		v, ok := lookup(k)
		if !ok {
			return nil, fmt.Errorf("--env-from-shell %s: %s is not set in this shell: export it first, or give --env %s=VALUE", k, k, k)
		}
		out[k] = v
	}
	return out, nil
}
