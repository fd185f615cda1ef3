package tools

// DefaultSocket is the private tmux server's socket name (tmux -L) when
// neither --tmux-socket nor TERMSPRAWL_TMUX_SOCKET names one (CONTRACT §1).
const DefaultSocket = "termsprawl"

// PickerKey is the key that, after the tmux prefix (C-b), opens the
// dialog picker on termsprawl's private servers (CONTRACT §18).
const PickerKey = "a"

// DefaultDetachKey and DefaultAnswerKey are the root-table keys (no
// prefix) of termsprawl's private servers that detach the client and
// open the dialog picker (CONTRACT §26), unless config.toml's [keys]
// names others. They are Alt with a function key: no tmux prefix anyone
// uses (C-b, C-a, C-Space, C-s, C-\, backtick…), no key of Claude Code,
// Codex, Gemini CLI, vim, emacs or readline, and not bare F12 (the
// nested-tmux "F12 switches the outer tmux off" habit, Guake's and
// Yakuake's toggle). docs/CHOICES.md argues the choice.
const (
	DefaultDetachKey = "M-F12"
	DefaultAnswerKey = "M-F11"
)
