package statefile

import (
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// LaunchSpec is a terminal_launch (or agent_launch) request.
type LaunchSpec struct {
	Command []string          `json:"command,omitempty"`
	Name    string            `json:"name,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	EnvMode string            `json:"env_mode,omitempty"`
	Columns int               `json:"columns,omitempty"`
	Rows    int               `json:"rows,omitempty"`
	Logs    []tools.LogSpec   `json:"logs,omitempty"`
	// Host runs the node on a machine of the engine's Config.Hosts.
	Host string `json:"host,omitempty"`
	// Record records the node from its start (CONTRACT §13).
	Record bool `json:"record,omitempty"`
	// Worktree starts the node in a git worktree (CONTRACT §21); the tool
	// server makes it and fills in its path before the launch.
	Worktree *tools.WorktreeLaunch `json:"worktree,omitempty"`
	// Sandbox is the profile the program runs under (CONTRACT §27:
	// workspace, guard, none; "" is none). The tool server decides it;
	// kept with the launch, so a restore keeps it.
	Sandbox string `json:"sandbox,omitempty"`
	// Policy names the config.toml table of permission rules the node
	// adds (`--policy NAME`, CONTRACT §28).
	Policy string `json:"policy,omitempty"`

	Owner string `json:"-"` // launching node id, or "operator"
	// Ancestors are the incarnations that may drive the node besides the
	// operator (the launching node's and its own ancestors).
	Ancestors []string `json:"-"`
	Parent    string   `json:"-"` // launching node id (agents)
	Agent     string   `json:"-"` // agent kind
	// ExtraEnv is added after Env (TERMSPRAWL_* for agents).
	ExtraEnv map[string]string `json:"-"`
}

// LaunchRecord is what a node's launch was: the request as launched (every
// field of LaunchSpec, so a field added to it rides along) and the
// engine-side parts the request does not carry on the wire, and the
// agent's own conversation id once its hooks reported one.
type LaunchRecord struct {
	Spec      LaunchSpec        `json:"spec"`
	Owner     string            `json:"owner,omitempty"`
	Parent    string            `json:"parent,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	ExtraEnv  map[string]string `json:"extra_env,omitempty"`
	Launched  time.Time         `json:"launched"`
	Socket    string            `json:"socket,omitempty"`
	Recording bool              `json:"recording,omitempty"`
	// Conversation is the agent's own session id from its hooks (Claude
	// Code's and Gemini CLI's session_id, codex's thread-id).
	Conversation string `json:"conversation,omitempty"`
}

// Launch is the record's spec with its engine-side parts put back.
func (r LaunchRecord) Launch() LaunchSpec {
	s := r.Spec
	s.Agent, s.ExtraEnv = r.Agent, r.ExtraEnv
	return s
}

// NewLaunchRecord is the record of a launch of spec on socket, now.
func NewLaunchRecord(spec LaunchSpec, socket string) LaunchRecord {
	return LaunchRecord{Spec: spec, Owner: spec.Owner, Parent: spec.Parent, Agent: spec.Agent, ExtraEnv: spec.ExtraEnv,
		Launched: time.Now().UTC(), Socket: socket, Recording: spec.Record}
}

// WriteLaunch keeps node id's launch (nodes/<id>.launch.json), atomically.
func WriteLaunch(stateDir, id string, rec LaunchRecord) error {
	return tools.WriteJSONAtomic(Path(stateDir, id, Launch), rec)
}

// ReadLaunch reads node id's kept launch.
func ReadLaunch(stateDir, id string) (LaunchRecord, error) {
	var r LaunchRecord
	err := ReadJSON(Path(stateDir, id, Launch), &r)
	return r, err
}
