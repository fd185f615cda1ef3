package tools

// DefaultSocket is the private tmux server's socket name (tmux -L) when
// neither --tmux-socket nor TERMSPRAWL_TMUX_SOCKET names one (CONTRACT §1).
const DefaultSocket = "termsprawl"

// PickerKey is the key that, after the tmux prefix (C-b), opens the
// dialog picker on termsprawl's private servers (CONTRACT §18).
const PickerKey = "a"
