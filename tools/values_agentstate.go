package tools

// Evidence is one fact behind an agent's state (CONTRACT §20): where it
// came from, what it was, and when. Detail says more where there is more
// to say (a hook's message, a dialog's title, why the screen counted as
// a turn's end).
type Evidence struct {
	Source string `json:"source"`
	Event  string `json:"event"`
	At     string `json:"at"`
	Detail string `json:"detail,omitempty"`
}

// Evidence sources.
const (
	SourceHook    = "hook"
	SourceDialog  = "dialog"
	SourceProcess = "process"
	SourceScreen  = "screen"
)

// Notification modes (CONTRACT §20).
const (
	NotifyQuiet  = "quiet"
	NotifyNormal = "normal"
	NotifyAll    = "all"
)

// NotifyAnswer is what one notification target answered to notify_test.
type NotifyAnswer struct {
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Answer string `json:"answer"`
}

// NotifyTestResult is notify_test's value.
type NotifyTestResult struct {
	Mode    string         `json:"mode"`
	Targets []NotifyAnswer `json:"targets"`
}
