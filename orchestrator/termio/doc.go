// Package termio holds the bytes a program expects from a terminal: the
// key names tmux's send-keys encodes for the pane's modes (ParseKeys), and
// mouse reports in the program's tracking mode and encoding (Action,
// Events, Encode). It knows nothing of nodes or tmux's control clients;
// the engine feeds it the modes its mirror saw and sends what it returns.
//
// Button codes come from x/ansi (ansi.EncodeMouseButton) and SGR reports
// from ansi.MouseSgr; the X10, UTF-8 (1005) and urxvt (1015) reports are
// encoded here: x/ansi has no urxvt encoder, and its MouseX10 writes each
// coordinate with string(byte), which is UTF-8 (two bytes) from column 95
// on and wraps past column 222 instead of refusing the cell.
package termio
