package tools

// DefaultSocket is the private tmux server's socket name (tmux -L) when
// neither --tmux-socket nor TERMSPRAWL_TMUX_SOCKET names one (CONTRACT §1).
const DefaultSocket = "termsprawl"
