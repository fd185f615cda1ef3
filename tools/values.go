package tools

import (
	"encoding/json"
	"time"
)

// The value types of the operations: what the engine returns, what the
// tool server encodes, what the CLI and MCP decode, and what the output
// schemas are generated from (see OutputSchema). One definition each, so
// no side guesses a key name.

// Node status values (terminal_list, terminal_snapshot, waits).
const (
	StatusRunning = "running"
	StatusExited  = "exited"
	// StatusUnreachable: the node's host cannot be reached over ssh; its
	// program keeps running there (CONTRACT §17).
	StatusUnreachable = "unreachable"
	// StatusLost: the node's tmux server went away (a reboot, a killed or
	// crashed tmux, at start or while termsprawl ran): listed with its last screen until it is
	// restored or forgotten (CONTRACT §25).
	StatusLost = "lost"
	// StatusClosing: a close was issued while the node's host could not
	// be reached; its program may still run there, and the close
	// finishes when the host answers again (CONTRACT §31).
	StatusClosing = "closing"
)

// NodeInfo is one row of terminal_list.
type NodeInfo struct {
	Terminal string   `json:"terminal"`
	Name     string   `json:"name"`
	Command  []string `json:"command"`
	Owner    string   `json:"owner"`
	Parent   string   `json:"parent,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	Status   string   `json:"status"`
	ExitCode *int     `json:"exit_code,omitempty"`
	// ExitReason says why the program ended when it did not end by itself
	// (its tmux server died).
	ExitReason string `json:"exit_reason,omitempty"`
	Columns    int    `json:"columns"`
	Rows       int    `json:"rows"`
	Revision   uint64 `json:"revision"`
	Clients    int    `json:"clients"`
	// TmuxSocket is the private tmux server the node is on (tmux -L):
	// nodes are spread over shards of a few nodes per server.
	TmuxSocket string `json:"tmux_socket"`
	// Exited is set in a launch's result when the program exited within
	// a second of its start.
	Exited *EarlyExit `json:"exited,omitempty"`
	// NameTaken, in a launch's receipt only: the name asked for already
	// named other nodes (their ids), so this node got another id
	// (terminal) and is reached by that.
	NameTaken []string `json:"name_taken,omitempty"`
	// Ready is set in a launch's result: whether the program showed that
	// it reads (it printed, then its output was quiet for 250 ms) within
	// the launch (CONTRACT §18). Input sent before that point is held
	// until it, at most 2 s after the launch.
	Ready *bool `json:"ready,omitempty"`
	// Crash is set once the program ended on its own with a non-zero
	// code or a signal (CONTRACT §11).
	Crash *Crash `json:"crash,omitempty"`
	// Recording is set while the node is being recorded (CONTRACT §13).
	Recording *RecordingStatus `json:"recording,omitempty"`
	// Host is the machine the node runs on: empty for this one, else a
	// name from `termsprawl up --host NAME=DEST` (CONTRACT §17).
	Host string `json:"host,omitempty"`
	// Kind is what the node is (terminal_list, CONTRACT §18): KindShell,
	// or the agent kind (claude, codex, gemini, opencode, custom).
	Kind string `json:"kind,omitempty"`
	// State is, in terminal_list, the agent's state for agents (CONTRACT
	// §20, as agent_status reports it; AgentExited once its program
	// ended), else the process status. Since and NeedsHuman go with an
	// agent's state (see AgentInfo); for other nodes Since is when the
	// node was launched, and NeedsHuman is always there (false for them).
	State      string `json:"state,omitempty"`
	Since      string `json:"since,omitempty"`
	NeedsHuman bool   `json:"needs_human"`
	// Usage is, for agents in terminal_list, their tokens and cost
	// (CONTRACT §28; known false: none sent).
	Usage *Usage `json:"usage,omitempty"`
	// Worktree is the node's git worktree (CONTRACT §21).
	Worktree *WorktreeState `json:"worktree,omitempty"`
	// Sandbox is the profile the node's program runs under (CONTRACT
	// §27): workspace, guard or none (shown as unsandboxed).
	Sandbox string `json:"sandbox,omitempty"`
	// SavedAt is, for a lost node, when its last screen was saved (RFC
	// 3339; CONTRACT §25).
	SavedAt string `json:"saved_at,omitempty"`
}

// Crash is how a program that died on its own ended (CONTRACT §11).
type Crash struct {
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	AfterMS  int64  `json:"after_ms"`
	// LastInput is the last input sent to it, by kind; pasted text is
	// never kept, only its size.
	LastInput  *InputSummary `json:"last_input,omitempty"`
	ScreenTail []string      `json:"screen_tail"`
}

// InputSummary names an input by kind (keys, text, paste, raw, mouse)
// with a short summary that never holds pasted text.
type InputSummary struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
}

// RecordingStatus says where a node's recording goes and since when.
type RecordingStatus struct {
	Path  string `json:"path"`
	Since string `json:"since"`
}

// EarlyExit is how a program that exited right after its launch ended.
type EarlyExit struct {
	ExitCode   int      `json:"exit_code"`
	ScreenTail []string `json:"screen_tail"`
}

// NodeList is terminal_list's value.
type NodeList struct {
	Terminals []NodeInfo `json:"terminals"`
}

// Cursor is the cursor of a screen.
type Cursor struct {
	X       int  `json:"x"`
	Y       int  `json:"y"`
	Visible bool `json:"visible"`
}

// Modes are the terminal modes a client needs to talk to the program.
type Modes struct {
	AltScreen      bool `json:"alt_screen"`
	AppCursor      bool `json:"app_cursor"`
	BracketedPaste bool `json:"bracketed_paste"`
	Mouse          bool `json:"mouse"`
}

// Screen is the visible state of a terminal.
type Screen struct {
	Revision uint64   `json:"revision"`
	Columns  int      `json:"columns"`
	Rows     int      `json:"rows"`
	Cursor   Cursor   `json:"cursor"`
	Modes    Modes    `json:"modes"`
	Title    string   `json:"title"`
	Lines    []string `json:"lines"` // visible rows, trailing spaces trimmed
}

// Snapshot is terminal_snapshot's value (and the state of most receipts).
type Snapshot struct {
	Terminal string `json:"terminal"`
	Screen
	Status     string `json:"status"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	ExitReason string `json:"exit_reason,omitempty"`
	// Crash is how the program died, when it died on its own with a
	// non-zero code or a signal (CONTRACT §11).
	Crash *Crash `json:"crash,omitempty"`
	// Scrollback holds history lines above the screen, only when asked for.
	Scrollback *[]string `json:"scrollback,omitempty"`
	// Image is a base64 PNG of the screen, only when asked for, and
	// Screenshot the facts about it.
	Image      string           `json:"image,omitempty"`
	Screenshot *ScreenshotFacts `json:"screenshot,omitempty"`
	// Semantic are the compact lines of the program's semantic tree
	// (CONTRACT §22), when its probe published one.
	Semantic []string `json:"semantic,omitempty"`
	// SavedAt is set for a lost node: the screen is its last one, saved
	// then (RFC 3339; CONTRACT §25).
	SavedAt string `json:"saved_at,omitempty"`
}

// ScreenshotFacts describe a screenshot: its size in pixels, that it used
// nothing from outside the binary, and the characters it had no glyph
// for (drawn as boxes).
type ScreenshotFacts struct {
	Width              int      `json:"width"`
	Height             int      `json:"height"`
	SelfContained      bool     `json:"self_contained"`
	FallbackCharacters []string `json:"fallback_characters"`
}

// Row is one changed row and its current text.
type Row struct {
	Row  int    `json:"row"`
	Text string `json:"text"`
}

// Position is a cell position.
type Position struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Changes is terminal_capture_since's value: the rows changed after the
// cursor, with their current text.
type Changes struct {
	Revision uint64   `json:"revision"`
	Rows     []Row    `json:"rows"`
	Cursor   Position `json:"cursor"`
	// Logs are the lines of the node's application logs that arrived
	// after the cursor, oldest first, and LogsOmitted how many more did
	// but are no longer kept (CONTRACT §11); both only for nodes
	// launched with logs.
	Logs        []LogLine `json:"logs,omitzero"`
	LogsOmitted *int      `json:"logs_omitted,omitempty"`
	// Semantic are the semantic tree's changes since the cursor, when
	// the program publishes one (CONTRACT §22).
	Semantic *SemanticChanges `json:"semantic,omitempty"`
}

// ReadResult is terminal_read's value.
type ReadResult struct {
	Terminal  string `json:"terminal"`
	Text      string `json:"text"`
	Revision  uint64 `json:"revision"`
	Truncated bool   `json:"truncated"`
}

// ScrollbackLine is one line of terminal_scrollback.
type ScrollbackLine struct {
	Line int    `json:"line"` // tmux's numbering: 0 is the top visible row, negative is history
	Text string `json:"text"`
}

// ScrollbackResult is terminal_scrollback's value.
type ScrollbackResult struct {
	Terminal    string           `json:"terminal"`
	HistorySize int              `json:"history_size"`
	Lines       []ScrollbackLine `json:"lines"`
	Truncated   bool             `json:"truncated"`
}

// WaitSpec is what to wait for (terminal_wait_for, watch_start and the
// nested wait object of the input operations).
type WaitSpec struct {
	Wait      string  `json:"wait"`
	Text      string  `json:"text,omitempty"`
	Pattern   string  `json:"pattern,omitempty"`
	QuietMS   int     `json:"quiet_ms,omitempty"`
	After     *uint64 `json:"after,omitempty"`
	TimeoutMS int     `json:"timeout_ms,omitempty"`
	// Locator and State are wait=semantic's (terminal_wait_for only).
	Locator *SemanticLocator `json:"locator,omitempty"`
	State   string           `json:"state,omitempty"`
}

// WaitResult is how a wait ended. A wait inside an input operation that
// ran out of time has TimedOut set (the input was sent).
type WaitResult struct {
	Matched   bool     `json:"matched"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	Wait      string   `json:"wait"`
	Revision  uint64   `json:"revision"`
	After     uint64   `json:"after"`
	Match     string   `json:"match,omitempty"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Status    string   `json:"status"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	Excerpt   []string `json:"excerpt,omitempty"` // the screen's last rows, on a timeout
}

// InputResult is the result of an input operation.
type InputResult struct {
	Terminal string      `json:"terminal"`
	Revision uint64      `json:"revision"` // the revision just before the input was sent
	Keys     []string    `json:"keys,omitempty"`
	Bytes    int         `json:"bytes,omitempty"`
	Wait     *WaitResult `json:"wait,omitempty"`
}

// ResizeResult is terminal_resize's result.
type ResizeResult struct {
	Terminal string `json:"terminal"`
	Columns  int    `json:"columns"`
	Rows     int    `json:"rows"`
	Revision uint64 `json:"revision"`
}

// SignalResult is terminal_signal's result.
type SignalResult struct {
	Terminal string `json:"terminal"`
	Signal   string `json:"signal"`
	PID      int    `json:"pid"`
}

// CloseResult is terminal_close's result.
type CloseResult struct {
	Terminal string `json:"terminal"`
	Closed   bool   `json:"closed"`
}

// ClosedState is the state of a receipt whose node no longer exists.
type ClosedState struct {
	Terminal string `json:"terminal"`
	Status   string `json:"status"` // "closed"
}

// ExternalResult is terminal_external's result.
type ExternalResult struct {
	Terminal string   `json:"terminal"`
	Argv     []string `json:"argv"`
	PID      int      `json:"pid"`
}

// FocusResult is terminal_focus's result.
type FocusResult struct {
	Terminal string `json:"terminal"`
	Clients  int    `json:"clients"`
	Hint     string `json:"hint,omitempty"`
}

// SessionInfo is session_info's value.
type SessionInfo struct {
	Node            string   `json:"node"`
	Role            string   `json:"role"`
	InstanceID      string   `json:"instance_id"`
	Version         string   `json:"version"`
	TmuxSocket      string   `json:"tmux_socket"`
	TmuxSession     string   `json:"tmux_session,omitempty"`
	Operations      []string `json:"operations"`
	PreferencesFile string   `json:"preferences_file"`
	StateDir        string   `json:"state_dir"`
	Attach          string   `json:"attach"`
	// How often mirrors were rebuilt from tmux, and how often a quiet
	// mirror differed from tmux and was healed: regressions show here.
	MirrorReseeds int `json:"mirror_reseeds"`
	MirrorHeals   int `json:"mirror_heals"`
	// TmuxServerDeaths counts deaths of the private tmux server while this
	// orchestrator ran; LastTmuxServerDeath says when and why.
	TmuxServerDeaths    int    `json:"tmux_server_deaths"`
	LastTmuxServerDeath string `json:"last_tmux_server_death,omitempty"`
	// MonitorURL is the read-only web monitor's capability URL
	// (CONTRACT §14); only the operator is told it.
	MonitorURL string `json:"monitor_url,omitempty"`
}

// GuideText is guide_read's value.
type GuideText struct {
	Topic string `json:"topic"`
	Text  string `json:"text"`
}

// WatchStarted is watch_start's value.
type WatchStarted struct {
	Watch    string `json:"watch"`
	Terminal string `json:"terminal"`
	After    uint64 `json:"after"`
}

// WatchFired is watch_wait's value once the watch fired.
type WatchFired struct {
	Watch  string     `json:"watch"`
	Fired  bool       `json:"fired"`
	Result WaitResult `json:"result"`
}

// WatchCancelled is watch_cancel's value.
type WatchCancelled struct {
	Watch     string `json:"watch"`
	Cancelled bool   `json:"cancelled"`
}

// Agent states (agent_report, agent_status; CONTRACT §20).
const (
	AgentStarting = "starting"
	AgentIdle     = "idle"
	AgentWorking  = "working"
	AgentWaiting  = "waiting"
	AgentError    = "error"
	AgentExited   = "exited"
	AgentUnknown  = "unknown"
)

// KindShell is terminal_list's kind of a node that is not an agent.
const KindShell = "shell"

// AgentInfo is one row of agent_status.
type AgentInfo struct {
	Node    string    `json:"node"`
	Name    string    `json:"name"`
	Agent   string    `json:"agent"`
	State   string    `json:"state"`
	Message string    `json:"message"`
	Updated time.Time `json:"updated"`
	Status  string    `json:"status"`
	// AcceptsTasks: the agent opted in to agent_send from any agent.
	AcceptsTasks bool `json:"accepts_tasks"`
	// Since is when the state began (RFC 3339); NeedsHuman is true while
	// the agent waits on a human (CONTRACT §20).
	Since      string `json:"since"`
	NeedsHuman bool   `json:"needs_human"`
	// Why is the evidence behind the state, newest first (explain: true).
	Why []Evidence `json:"why,omitempty"`
	// Usage is the agent's tokens and cost from its telemetry (CONTRACT
	// §28); known false: it sent none.
	Usage *Usage `json:"usage,omitempty"`
	// Budget says which budgets are at 80 % or used up, and their action
	// (CONTRACT §28); empty when none is.
	Budget string `json:"budget,omitempty"`
}

// AgentList is agent_status's value.
type AgentList struct {
	Agents []AgentInfo `json:"agents"`
}

// AgentReport is agent_report's value.
type AgentReport struct {
	Node         string `json:"node"`
	State        string `json:"state"`
	Message      string `json:"message"`
	AcceptsTasks bool   `json:"accepts_tasks"`
}

// Task states.
const (
	TaskPending   = "pending"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
)

// Task is a message sent with agent_send and its reply.
type Task struct {
	ID        string    `json:"task"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	MessageID string    `json:"message_id"`
	State     string    `json:"state"` // pending, completed, failed
	Reply     string    `json:"reply,omitempty"`
	Created   time.Time `json:"created"`
	Replied   time.Time `json:"replied,omitzero"`
}

// TaskSent is agent_send's result.
type TaskSent struct {
	Task      string `json:"task"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// Dialog is a pending permission prompt or question.
type Dialog struct {
	ID   string `json:"dialog"`
	Node string `json:"node"`
	Kind string `json:"kind"`
	// Title is for display only (the hook's is squeezed and cut); what a
	// dialog asks is Kind, Tool and Input.
	Title string `json:"title"`
	// Tool and Input are the tool a permission is asked for and its full
	// input as canonical JSON (CanonicalJSON), when the asker gave them:
	// what "always" remembers and what a human reads before allowing.
	Tool    string    `json:"tool,omitempty"`
	Input   string    `json:"input,omitempty"`
	Options []string  `json:"options,omitempty"`
	Created time.Time `json:"created"`
	// Expires is when an unanswered dialog ends as a deny.
	Expires time.Time `json:"expires,omitzero"`
}

// DialogList is dialog_list's value.
type DialogList struct {
	Dialogs []Dialog `json:"dialogs"`
}

// Dialog answer modes.
const (
	AnswerDeny   = "deny"
	AnswerAllow  = "allow"
	AnswerAlways = "always"
)

// DialogAnswer is how a dialog was answered.
type DialogAnswer struct {
	Mode      string `json:"mode"`
	Selection string `json:"selection,omitempty"`
	// Reason is the human's reason (dialog_answer reason), or why the
	// dialog ended as a deny (it timed out).
	Reason string `json:"reason,omitempty"`
}

// DialogOutcome is dialog_request's value and dialog_answer's result.
type DialogOutcome struct {
	Dialog     string       `json:"dialog,omitempty"`
	Answer     DialogAnswer `json:"answer"`
	Remembered bool         `json:"remembered,omitempty"`
	// Kind, Tool and Input are what the answered dialog asked (Input as
	// canonical JSON), so a waiter can check that the answer is to its
	// own request before acting on it.
	Kind  string `json:"kind,omitempty"`
	Tool  string `json:"tool,omitempty"`
	Input string `json:"input,omitempty"`
	// TimedOut: nobody answered before the dialog expired, so it ended as
	// a deny (never an allow).
	TimedOut bool `json:"timed_out,omitempty"`
	// Ended: no human answered; termsprawl ended the dialog as a deny
	// because its node closed or termsprawl went down --all (Answer.Reason
	// says which).
	Ended bool `json:"ended,omitempty"`
	// DecidedBy says who decided (CONTRACT §28): "rule" (a policy rule,
	// Rule and Scope), "human" (Surface), "always", "timeout", "budget",
	// "closed" (the node closed), "agent" (an agent denied or withdrew it).
	DecidedBy string `json:"decided_by,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Scope     string `json:"scope,omitempty"`
	// Surface is where a human answered: cli, dashboard, picker, mcp.
	Surface string `json:"surface,omitempty"`
}

// Reasons of the dialogs termsprawl ends itself (DialogOutcome.Ended).
const (
	DialogEndNodeClosed = "its node closed"
	DialogEndDownAll    = "termsprawl went down with --all"
)

// Who decided a permission (DialogOutcome.DecidedBy).
const (
	DecidedByRule    = "rule"
	DecidedByHuman   = "human"
	DecidedByAlways  = "always"
	DecidedByTimeout = "timeout"
	DecidedByBudget  = "budget"
	DecidedByClosed  = "closed"
	DecidedByAgent   = "agent"
)

// DialogState is the state of dialog_answer's receipt.
type DialogState struct {
	Dialog   string `json:"dialog"`
	Node     string `json:"node"`
	Answered bool   `json:"answered"`
}

// Mouse tracking modes a program can enable (CONTRACT §11), from the
// least to the most it reports.
const (
	MouseTrackingNone   = "none"
	MouseTrackingX10    = "x10"    // DECSET 9: presses only
	MouseTrackingNormal = "normal" // 1000: presses and releases, wheel
	MouseTrackingButton = "button" // 1002: and motion while a button is down
	MouseTrackingAny    = "any"    // 1003: and every motion
)

// Mouse report encodings (CONTRACT §11).
const (
	MouseEncodingDefault = "default" // X10 bytes: CSI M Cb Cx Cy
	MouseEncodingUTF8    = "utf8"    // 1005
	MouseEncodingSGR     = "sgr"     // 1006
	MouseEncodingURXVT   = "urxvt"   // 1015
)

// MouseMode is the mouse tracking a program enabled and the encoding its
// reports use.
type MouseMode struct {
	Tracking string `json:"tracking"`
	Encoding string `json:"encoding"`
}

// Capabilities is terminal_capabilities' value: what the terminal and its
// program support right now.
type Capabilities struct {
	Terminal string    `json:"terminal"`
	Columns  int       `json:"columns"`
	Rows     int       `json:"rows"`
	Revision uint64    `json:"revision"`
	Status   string    `json:"status"`
	Modes    Modes     `json:"modes"`
	Mouse    MouseMode `json:"mouse"`
	// SemanticTree is "available" once the program's probe published a
	// tree (CONTRACT §22), else "unavailable".
	SemanticTree string `json:"semantic_tree"`
	Recording    bool   `json:"recording"`
	// Logs are the labels of the followed application logs; LogsMissing
	// those whose file does not exist (yet).
	Logs        []string `json:"logs"`
	LogsMissing []string `json:"logs_missing,omitempty"`
	Crash       *Crash   `json:"crash,omitempty"`
}

// QueryMatch is one match of terminal_query: where it is on the screen
// (0-based row and cell column; length in cells) and a ref that names it.
type QueryMatch struct {
	Row    int    `json:"row"`
	Column int    `json:"column"`
	Length int    `json:"length"`
	Text   string `json:"text"`
	Ref    string `json:"ref"`
}

// QueryResult is terminal_query's value.
type QueryResult struct {
	Terminal string       `json:"terminal"`
	Revision uint64       `json:"revision"`
	Matches  []QueryMatch `json:"matches"`
	// Nodes are a locator's matches in the semantic tree (then Matches
	// is empty and Revision the commit's).
	Nodes []SemanticMatch `json:"nodes,omitempty"`
}

// Cell is a 0-based screen cell.
type Cell struct {
	Row    int `json:"row"`
	Column int `json:"column"`
}

// MouseResult is the result of the mouse operations: where the report
// went and how it was encoded.
type MouseResult struct {
	Terminal string      `json:"terminal"`
	Revision uint64      `json:"revision"` // the revision just before the input was sent
	At       Cell        `json:"at"`
	To       *Cell       `json:"to,omitempty"` // terminal_drag's end
	Mouse    MouseMode   `json:"mouse"`
	Bytes    int         `json:"bytes"`
	Wait     *WaitResult `json:"wait,omitempty"`
}

// LogLine is one line of an application log (terminal_capture_since).
type LogLine struct {
	MS    int64  `json:"ms"` // when it was read, Unix milliseconds
	Label string `json:"label"`
	Line  string `json:"line"`
}

// LogSpec is one application log of terminal_launch.
type LogSpec struct {
	Path  string `json:"path"`
	Label string `json:"label,omitempty"`
}

// DecodeValue decodes a result value into v.
func DecodeValue(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return Errorf(KindInternal, "decode result value: %w", err)
	}
	return nil
}

// ReceiptOf is a mutation's receipt with its result decoded as R.
type ReceiptOf[R any] struct {
	Action         string          `json:"action"`
	Result         R               `json:"result"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	State          json.RawMessage `json:"state"`
}
