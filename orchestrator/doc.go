// Package orchestrator is termsprawl's engine: it runs the nodes. Every
// node is one tmux session (one window, one pane) on a private tmux server
// — local shards of at most 8 nodes (termsprawl, termsprawl-2, …), or the
// private server of an ssh host (CONTRACT §17) — mirrored into a live
// screen (package orchestrator/screen) through one tmux control-mode
// client (package tmuxctl) per node.
//
// tmux stays the source of truth. The mirror is seeded from capture-pane
// with the race-free recipe (one command line, output before the reply
// dropped, output after it applied), reseeded after a resize, a %pause, a
// backlog overflow or an emulator panic, and scrollback is always read from
// tmux's history. Waits are event-driven: a text or regex wait registers
// its scan for the node's pump to evaluate after each change, other waits
// sleep on the screen's change channel and the node's status channel;
// none polls.
//
// The engine writes each node's metadata and session file (its token) in
// the state dir, and re-adopts every session carrying @termsprawl_node
// when it starts, so it can be restarted at any time. It serves nothing
// itself: package orchestrator/toolserver puts the tool API
// (tools.Backend), the discovery files and the HTTP listener in front of
// it. docs/ARCHITECTURE.md has its files, goroutines and locks.
package orchestrator
