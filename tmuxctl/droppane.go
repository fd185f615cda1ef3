package tmuxctl

// DropPane forgets pane's output stream: a client shared by many panes
// (a host's mirror client) calls it when a pane leaves, so streams of
// panes long gone do not pile up. Output that arrives for the pane later
// starts a new stream.
func (c *Client) DropPane(pane string) {
	c.mu.Lock()
	delete(c.panes, pane)
	c.mu.Unlock()
}
