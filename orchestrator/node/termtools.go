package node

import (
	"context"
	"encoding/hex"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// resolveRef checks a ref terminal_query handed out against the screen
// (termquery.Resolve).
func (n *Node) resolveRef(s string, lines []string) (tools.Cell, error) {
	return n.refs.Resolve(s, lines, n.Scr.Revision(), func(rev uint64, row int) (bool, error) {
		ch, err := n.Scr.ChangesSince(rev)
		if err != nil {
			return false, err
		}
		for _, r := range ch.Rows {
			if r.Row == row {
				return true, nil
			}
		}
		return false, nil
	})
}

// rawChunk is how many bytes one send-keys -H carries (DESIGN: ≤ 4 KB).
const rawChunk = 1024

// SendRaw writes bytes to the pane with send-keys -H: tmux passes each
// byte on as it is, with no key encoding.
func (n *Node) SendRaw(ctx context.Context, data []byte) error {
	var cmds []string
	for len(data) > 0 {
		k := min(len(data), rawChunk)
		args := make([]string, 0, k+3)
		args = append(args, "-t", n.Pane, "-H")
		for _, b := range data[:k] {
			args = append(args, hex.EncodeToString([]byte{b}))
		}
		cmds = append(cmds, tmuxctl.Command("send-keys", args...))
		data = data[k:]
	}
	if _, err := n.Cmd().RunMany(ctx, cmds...); err != nil {
		return n.TmuxErr("write raw bytes", err)
	}
	return nil
}
