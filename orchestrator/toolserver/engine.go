package toolserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/tools"
)

// The engine as the tool server's domains see it: each domain file
// depends on one small interface naming only the engine methods it uses,
// as orchestrator/monitor's Engine does. *orchestrator.Orchestrator
// satisfies every one (checked below); only the wiring (server.go,
// serve.go) holds the concrete engine, and TestDomainsUseTheirEngine
// keeps each file to its own interface.

// nodeDirectory names the engine's nodes: every domain reads it.
type nodeDirectory interface {
	Meta(id string) (orchestrator.NodeMeta, bool)
	Nodes() []orchestrator.NodeMeta
	Resolve(word string) (string, error)
}

// terminalEngine is what terminal.go and terminal_tools.go drive: a
// node's screen, input, waits and lifecycle.
type terminalEngine interface {
	nodeDirectory
	Launch(ctx context.Context, spec orchestrator.LaunchSpec) (tools.NodeInfo, error)
	CloseNode(ctx context.Context, id string) error
	List(ctx context.Context) []tools.NodeInfo
	Peek() []tools.NodeInfo
	CheckLogs(specs []tools.LogSpec, cwd string) error
	CurrentPath(ctx context.Context, id string) string
	External(id string) (tools.ExternalResult, error)
	Focus(ctx context.Context, id string) (tools.FocusResult, error)
	Signal(id string, sig string) (tools.SignalResult, error)

	Snapshot(ctx context.Context, id string) (tools.Snapshot, error)
	CaptureSince(ctx context.Context, id string, cursor uint64) (tools.Changes, error)
	Read(ctx context.Context, id string, maxChars int) (tools.ReadResult, error)
	Scrollback(ctx context.Context, id string, from *int, to *int, search string) (tools.ScrollbackResult, error)
	Screenshot(ctx context.Context, id string, scale int, theme string) ([]byte, tools.ScreenshotFacts, error)
	Resize(ctx context.Context, id string, columns int, rows int) (tools.Snapshot, error)
	Capabilities(ctx context.Context, id string) (tools.Capabilities, error)
	Query(ctx context.Context, id string, q orchestrator.QuerySpec) (tools.QueryResult, error)

	Type(ctx context.Context, id string, text string, wait *tools.WaitSpec) (tools.InputResult, error)
	Submit(ctx context.Context, id string, text string, wait *tools.WaitSpec) (tools.InputResult, error)
	Paste(ctx context.Context, id string, text string, wait *tools.WaitSpec) (tools.InputResult, error)
	Press(ctx context.Context, id string, keys string, wait *tools.WaitSpec) (tools.InputResult, error)
	Interrupt(ctx context.Context, id string, wait *tools.WaitSpec) (tools.InputResult, error)
	Mouse(ctx context.Context, id string, spec orchestrator.MouseSpec, wait *tools.WaitSpec) (tools.MouseResult, error)
	WriteRaw(ctx context.Context, id string, data []byte, wait *tools.WaitSpec) (tools.InputResult, error)
	WaitFor(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error)
	WaitSemantic(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error)
}

// semanticEngine is what semantic.go drives: published trees and
// actions on them.
type semanticEngine interface {
	nodeDirectory
	ActSemantic(ctx context.Context, id string, a orchestrator.SemanticAction) (tools.SemanticActionResult, error)
	PublishSemantic(id string, raw json.RawMessage) (tools.SemanticPublished, error)
}

// traceEngine is what traces.go drives: recordings, marks and traces.
type traceEngine interface {
	Record(ctx context.Context, id string, on bool) (tools.RecordResult, error)
	Mark(id string, label string) (tools.MarkResult, error)
	TraceOpen(path string) (tools.TraceOpened, error)
	TraceClose(id string) (tools.TraceClosed, error)
	TraceOverview(id string) (tools.TraceOverview, error)
	TraceDiff(id string, fromMS int64, toMS int64) (tools.Changes, error)
	TraceFrameAt(id string, spec orchestrator.FrameSpec) (tools.TraceFrame, error)
	TraceSemanticAt(id string, ms int64) []string
}

// hostEngine is what hosts.go and realm.go read and drive of the ssh
// hosts.
type hostEngine interface {
	nodeDirectory
	HostList(ctx context.Context) []tools.HostInfo
	RemoveHost(ctx context.Context, name string, closeNodes bool) (tools.HostRemoved, error)
	HostGrantsElsewhere(host string) bool
}

// lostEngine is what restore.go and fork.go use: the lost nodes' launch
// records, restoring and forgetting them, and forks of live ones.
type lostEngine interface {
	nodeDirectory
	LostIDs() []string
	LostLaunch(id string) (orchestrator.NodeMeta, orchestrator.LaunchRecord, error)
	Restore(ctx context.Context, id string, opts orchestrator.RestoreOptions) (tools.NodeInfo, error)
	Forget(id string) error
	NodeLaunch(id string) (orchestrator.NodeMeta, orchestrator.LaunchRecord, error)
	CurrentPath(ctx context.Context, id string) string
}

// agentEngine is what the agents' domain uses (agents.go, agentstate.go,
// agentrules.go, waiting.go): evidence from the screen and the process,
// submits, conversations, and the hosts' agent wiring.
type agentEngine interface {
	nodeDirectory
	Info(ctx context.Context, id string) (tools.NodeInfo, error)
	List(ctx context.Context) []tools.NodeInfo
	Snapshot(ctx context.Context, id string) (tools.Snapshot, error)
	PrepareWait(id string, spec tools.WaitSpec, lifetime time.Duration) (*orchestrator.PendingWait, error)
	Submit(ctx context.Context, id string, text string, wait *tools.WaitSpec) (tools.InputResult, error)
	SetConversation(id string, conv tools.ConversationID) error
	HostAgentConfig(ctx context.Context, host string) (ctl string, mcpConfig string, err error)
	HostCtlMissing(host string) string
	Keys() (detach string, answer string)
	NotifyHumans(ctx context.Context, msg string) (int, error)
}

// identityEngine is what identity.go reads: launches under way, lost
// nodes' errors and the engine's health.
type identityEngine interface {
	nodeDirectory
	AwaitLaunch(ctx context.Context, id string, timeout time.Duration) bool
	LostError(id string) error
	MirrorCounts() (reseeds int, heals int)
	ServerHealth() (deaths int, last string)
	Socket() string
}

// notifyEngine is what notify.go hands the notifier: the tmux and
// terminal targets.
type notifyEngine interface {
	NotifyHumans(ctx context.Context, msg string) (int, error)
	NotifyTerminals(ctx context.Context, seq []byte) (int, error)
}

// fleetEngine is what fleet.go searches.
type fleetEngine interface {
	nodeDirectory
	Search(ctx context.Context, spec orchestrator.SearchSpec) (tools.FleetSearchResult, error)
}

// budgetEngine is what budget.go does when a budget is crossed.
type budgetEngine interface {
	nodeDirectory
	Press(ctx context.Context, id string, keys string, wait *tools.WaitSpec) (tools.InputResult, error)
	CloseNode(ctx context.Context, id string) error
}

// worktreeEngine is what worktree.go uses of the nodes in worktrees.
type worktreeEngine interface {
	nodeDirectory
	CloseNode(ctx context.Context, id string) error
}

// watchEngine is what watches.go arms.
type watchEngine interface {
	PrepareWait(id string, spec tools.WaitSpec, lifetime time.Duration) (*orchestrator.PendingWait, error)
}

// sandboxEngine is what sandbox.go reads.
type sandboxEngine interface {
	nodeDirectory
	SandboxSettings() config.Sandbox
}

// monitorSource is what the web monitor reads through monitorEngine
// (monitor.go).
type monitorSource interface {
	Peek() []tools.NodeInfo
	Show(ctx context.Context, id string) (*orchestrator.Showing, error)
	SemanticTree(id string) (uint64, []tools.SemanticMatch, bool)
}

// engines are the domains' views of one engine.
type engines struct {
	nodes     nodeDirectory
	terminals terminalEngine
	semantic  semanticEngine
	traces    traceEngine
	hosts     hostEngine
	lost      lostEngine
	agents    agentEngine
	identity  identityEngine
	notify    notifyEngine
	fleet     fleetEngine
	budget    budgetEngine
	worktrees worktreeEngine
	watches   watchEngine
	sandbox   sandboxEngine
	monitor   monitorSource
}

// enginesOf gives every domain its view of o.
func enginesOf(o *orchestrator.Orchestrator) engines {
	return engines{nodes: o, terminals: o, semantic: o, traces: o, hosts: o, lost: o, agents: o,
		identity: o, notify: o, fleet: o, budget: o, worktrees: o, watches: o, sandbox: o, monitor: o}
}
