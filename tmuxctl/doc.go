// Package tmuxctl drives a private tmux server through control mode
// (`tmux -C`).
//
// A Client owns one `tmux -C` child process. It frames the control-mode
// stream strictly (%begin/%end/%error matched on time, number and flags),
// pipelines commands from many goroutines, decodes %output and
// %extended-output into exact per-pane byte streams, parses notifications
// into typed events and reports the death of the client or the server with
// the reason tmux gave. Every command gets exactly its own reply, also
// after commands that make tmux run more commands (source-file, if-shell):
// the blocks of those are consumed up to a marker command. Apply a
// configuration file with Client.SourceFile, which also reports its
// errors.
//
// Writing to tmux never holds the lock the reader needs: a huge command
// line does not stop the reader from draining a flooding pane.
//
// The reader goroutine never waits on a consumer: pane output is buffered
// per pane up to a bound, and a consumer that falls further behind is told
// to reseed (PaneStream.Take reports the overflow) instead of stalling the
// program in the pane. Notifications are queued without bound (they are
// small and rare).
//
// The package imports the standard library only.
package tmuxctl
