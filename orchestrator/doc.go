// Package orchestrator runs termsprawl's nodes: every node is one tmux
// session (one window, one pane) on a private tmux server, mirrored into a
// live screen (package orchestrator/screen) through one tmux control-mode
// client per node.
//
// tmux stays the source of truth. The mirror is seeded from capture-pane
// with the race-free recipe (one command line, output before the reply
// dropped, output after it applied), reseeded after a resize, a %pause, a
// backlog overflow or an emulator panic, and scrollback is always read from
// tmux's history. Waits are event-driven: they sleep on the screen's
// change channel and the node's status channel, never in a polling loop.
//
// The orchestrator also serves the tool API (tools.Backend) and writes the
// discovery files; it re-adopts every session carrying @termsprawl_node
// when it starts, so it can be restarted at any time.
package orchestrator
