// Package applog follows a node's application log files (CONTRACT §11)
// for its captures. Each file is followed from its end when the follower
// starts (at launch, and at adoption: what was written while no
// orchestrator ran is not read), with fsnotify on its directory — an
// atomic replace or a rotation kills a watch on the file itself. A file
// renamed or removed is read to its end first (rotation); a file created
// under the name is read from its start; a file that shrank was truncated
// and is read from its start. Lines are stamped with the screen's revision
// when they are read, so terminal_capture_since's cursor orders them with
// the screen; the last tools.MaxLogLines are kept, and what fell out is
// counted (logs_omitted).
//
// It knows nothing of nodes: the engine hands it the mirror (Screen) and
// the channel that ends the node's pump.
package applog
