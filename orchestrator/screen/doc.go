// Package screen keeps one live VT mirror of one tmux pane.
//
// A [Screen] is fed the raw output bytes of a pane (already decoded from
// tmux control mode's %output lines) and can at any time be reseeded from
// tmux's own view of the pane ([Screen.Seed] with the output of
// `capture-pane -p -e -N` and the pane's format flags). tmux stays the source
// of truth: the mirror only has to be good enough between two seeds, and
// every failure mode of the emulator ends in [ErrNeedReseed] rather than in a
// crash or a hang.
//
// On top of the emulator a Screen keeps
//
//   - a revision counter, bumped by every Write, Seed or Resize that changed
//     something visible (row text, cursor, modes, title) or added output text;
//   - the set of rows changed by each of the last revisions
//     ([Screen.ChangesSince]);
//   - a bounded log of the plain text of the output ([Screen.TextSince]);
//   - a broadcast channel closed at the next revision ([Screen.Changed]), so
//     waits are event driven.
//
// The emulator is github.com/charmbracelet/x/vt v0.1.0. Its traps, and how this
// package handles them:
//
//   - Write blocks on queries (DA, DSR, DECRQM, OSC 10/11/12, in-band resize)
//     until someone reads the emulator's input pipe: a goroutine per emulator
//     drains and discards it (tmux already answered the program). Close stops
//     it.
//   - It panics on an oversized scroll region (CSI 1;50r then CSI S on 24
//     rows): DECSTBM/DECSLRM parameters are clamped by a registered CSI
//     handler, and every call into the emulator runs under recover; a panic
//     poisons the emulator and reports ErrNeedReseed until the next Seed,
//     which builds a fresh one.
//   - Some parameters drive loops (CHT, CBT, REP, ECH with a huge count):
//     they are clamped to the screen width the way tmux does.
//   - CellAt returns pointers into live buffers: rows are copied out as text
//     under the Screen's mutex and readers only ever see those copies.
//   - Each screen of the emulator has a scrollback of 10000 lines by default,
//     and the public setter only reaches the main screen; alternate-screen
//     programs that scroll (less, vim) would grow it to hundreds of MiB. Both
//     scrollbacks are removed (history is read from tmux instead), which also
//     doubles the throughput of scrolling output.
//   - Every emulator allocates a 4 MiB parser buffer (OSC/DCS data) and two
//     full cell buffers of 112 bytes a cell: the parser buffer is replaced
//     by a 4 KiB one, and the alternate screen's cells are dropped while
//     the main screen is shown (entering the alternate screen clears it
//     anyway), so an emulator at 120x40 holds one screen of cells, 525 KiB.
//
// Row text compares are the change detector: a change of colour or
// attributes alone does not bump the revision.
package screen
