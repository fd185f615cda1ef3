package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Environment for agents (CONTRACT §26): `--env KEY=VALUE`,
// `--env-from-shell KEY` and the env argument of terminal_launch and
// agent_launch. The values reach the node and its kept launch (0600, for
// a restore); every listing, log and metadata shows the names only
// (EnvNames).

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvName refuses a name a node's environment cannot carry, and the
// TERMSPRAWL_ names termsprawl sets itself.
func CheckEnvName(name string) error {
	switch {
	case name == "":
		return errors.New("an environment variable needs a name before the = (KEY=VALUE)")
	case !envNameRE.MatchString(name):
		return fmt.Errorf("%q is not an environment variable name: use letters, digits and _, not starting with a digit", clip(name, 64))
	case strings.HasPrefix(name, "TERMSPRAWL_"):
		return fmt.Errorf("%s: termsprawl sets its TERMSPRAWL_ variables itself; give the variable another name", name)
	}
	return nil
}

// ParseEnvAssignment splits KEY=VALUE at its first =: A=B=C is name A
// and value B=C. The name is checked (CheckEnvName).
func ParseEnvAssignment(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		if envNameRE.MatchString(s) {
			return "", "", fmt.Errorf("%s has no =VALUE: give %s=VALUE, or --env-from-shell %s to take the value from this shell", s, s, s)
		}
		// Not echoed: it may be the value itself, a secret.
		return "", "", errors.New("the argument has no =: give KEY=VALUE")
	}
	if err := CheckEnvName(name); err != nil {
		return "", "", err
	}
	return name, value, nil
}

// EnvNames are the names of an environment, sorted: what listings and
// logs show of it (never the values).
func EnvNames(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k := range env {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkEnvArg checks the names of an operation's env argument.
func checkEnvArg(op *Operation, fields map[string]json.RawMessage) error {
	raw, ok := fields["env"]
	if !ok {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil // the type check says it
	}
	for _, k := range sortedKeys(m) {
		if err := CheckEnvName(k); err != nil {
			return op.usageErr("env", "env: %v", err)
		}
	}
	return nil
}

// paramEnv is the env argument of terminal_launch and agent_launch.
var paramEnv = Param{Name: "env", Type: TypeObject, Description: "Extra environment variables (name to value), e.g. the agent's API key: kept (0600) for a restore, never echoed back; listings and logs show the names only."}
