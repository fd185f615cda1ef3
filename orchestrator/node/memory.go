package node

// Memory comes back after a flood (issue 27, docs/PERFORMANCE.md "Memory
// comes back"; the meter is orchestrator/memtrim): when a node's output has been quiet for RestAfter, its
// pump trims the buffers the burst grew (the pane stream's two buffers,
// up to the 8 MiB backlog bound each, and the text log's spare
// capacity), and, when at least memtrim.FreeOSEvery bytes of output went through
// the orchestrator since the last time (or through this node since its
// last trim: its buffers were let go only now), returns the freed heap to the
// system a moment after the last of them (debug.FreeOSMemory) instead of waiting for the
// runtime's background scavenger. A full collection per 4 MiB of output (at
// most one a second) costs far less than taking in the 4 MiB did.

// trim gives back what the node's last burst of output grew, and arms the
// return of the heap the bursts left free. Only the pump calls it, when
// the output has been quiet for RestAfter.
func (n *Node) trim() {
	n.Stream.Trim()
	n.Scr.TrimMemory()
	n.Env.Meter().Quiet(n.applied - n.trimmedAt)
	n.trimmedAt = n.applied
}
