package hosts

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Activity is what a program's process tree is doing, as a launch's
// early-exit watch asks once the program went quiet (CONTRACT §10).
type Activity int

const (
	// ActivityUnknown: not looked at (a host's program: a look is an ssh
	// round trip) or not readable.
	ActivityUnknown Activity = iota
	// ActivityEnded: the program ended (reaped, or a zombie).
	ActivityEnded
	// ActivityBusy: a process of the tree runs (or waits to run, or on
	// the disk), sleeps on a timer, or ended unreaped: the program may
	// still end on its own.
	ActivityBusy
	// ActivityWaiting: every process is asleep and no leaf sleeps on a
	// timer: the program waits for input or events, it started.
	ActivityWaiting
)

func (a Activity) String() string {
	switch a {
	case ActivityEnded:
		return "ended"
	case ActivityBusy:
		return "busy"
	case ActivityWaiting:
		return "waiting"
	}
	return "unknown"
}

// maxTree bounds how many processes one look reads: a program with more
// is called busy (the watch looks again, up to its deadline).
const maxTree = 64

// Activity looks at pid and its descendants on this machine. A remote
// server's program is not looked at (ActivityUnknown).
func (s *Tmux) Activity(ctx context.Context, pid int) Activity {
	if s.prefix != nil || pid <= 0 {
		return ActivityUnknown
	}
	tree := map[int]procLook{}
	queue := []int{pid}
	for len(queue) > 0 {
		if len(tree) == maxTree {
			return ActivityBusy
		}
		p := queue[0]
		queue = queue[1:]
		look, ok := lookAt(p)
		if !ok {
			if p == pid {
				// No stat: reaped (ended), or there but unreadable.
				if s.PidGone(ctx, pid) {
					return ActivityEnded
				}
				return ActivityUnknown
			}
			continue // a child ended between the two reads: its parent is told
		}
		tree[p] = look
		queue = append(queue, look.children...)
	}
	return classify(pid, tree)
}

// procLook is one process as a look saw it.
type procLook struct {
	state    byte   // the state letter of /proc/PID/stat
	wchan    string // where it sleeps in the kernel ("" or "0" when hidden)
	children []int
}

// lookAt reads one process's state, sleep point and children.
func lookAt(pid int) (procLook, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procLook{}, false
	}
	st, ok := statState(b)
	if !ok {
		return procLook{}, false
	}
	look := procLook{state: st}
	if w, err := os.ReadFile(dir + "/wchan"); err == nil {
		look.wchan = string(w)
	}
	look.children = childrenOf(dir)
	return look, true
}

// childrenOf lists the children of the process at dir, from its threads'
// children files (Linux 3.5 and later, with CONFIG_PROC_CHILDREN).
func childrenOf(dir string) []int {
	files, _ := filepath.Glob(dir + "/task/*/children")
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(w); err == nil && c > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// statState is the state letter of a /proc/PID/stat line: the first field
// after the command name, which is in parentheses and may itself hold
// ") " (a program names itself).
func statState(b []byte) (byte, bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 || s[i+1] != ' ' {
		return 0, false
	}
	c := s[i+2]
	if c < 'A' || c > 'z' {
		return 0, false
	}
	return c, true
}

// classify decides a tree's activity from its looks (root is the program).
func classify(root int, tree map[int]procLook) Activity {
	r, ok := tree[root]
	if !ok {
		return ActivityUnknown
	}
	if r.state == 'Z' || r.state == 'X' {
		return ActivityEnded
	}
	for _, p := range tree {
		switch p.state {
		case 'R', 'D', 'Z', 'X', 'W':
			return ActivityBusy
		}
		if len(p.children) == 0 && strings.Contains(p.wchan, "nanosleep") {
			return ActivityBusy
		}
	}
	return ActivityWaiting
}
