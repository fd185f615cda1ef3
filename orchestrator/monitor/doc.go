// Package monitor is the read-only web monitor (CONTRACT §14): a page a
// person opens at http://127.0.0.1:PORT/monitor/<capability>/ to watch
// every node's styled screen, status, agent state, pending dialogs,
// recording status and watches, streamed live over Server-Sent Events.
//
// It has no input path: it serves GET and HEAD of four embedded files and
// one event stream, nothing else. The capability (128 random bits, kept in
// <state>/monitor.json, mode 0600, so the URL survives a restart) is the
// only credential; a wrong one, a foreign Origin or Host and every other
// path are refused. The page loads nothing from outside (a strict
// Content-Security-Policy).
//
// The monitor reads the engine through Engine (node rows without asking
// tmux, and Showings of the nodes a page shows: those count as observed)
// and the tool server's tables through Side; it imports neither.
//
// The same hub serves the dashboard's stream: ServeStream answers a
// request the tool server has authenticated (GET /events with the
// operator's bearer token), with the page's events; Kick sends the state
// at once when the tool server knows it changed (the poll below is the
// backstop for what the engine changes on its own).
//
// Goroutines: one poller while at least one page or stream is connected (the node
// rows and the side tables every Poll; it ends when the last page leaves
// or at Close); one watcher per node that at least one page shows (it
// ends when no page shows the node, the node goes, or at Close); one
// handler goroutine per event stream (net/http's; it ends when the page
// leaves, is too slow and is dropped, or at Close).
package monitor
