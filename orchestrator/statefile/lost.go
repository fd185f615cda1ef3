package statefile

import (
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Lost is a node listed lost (CONTRACT §25), or exited before its tmux
// server went: its metadata and last screen as read from its files, and
// the views of it the engine answers with (its terminal_list row, its
// last screen, its exit_reason). What a restore starts (the kept launch)
// and whether one is under way are the engine's.
type Lost struct {
	Meta      NodeMeta
	Screen    KeptScreen
	HasScreen bool
	Status    string // tools.StatusLost, or tools.StatusExited
}

// ReadLost is the lost entry of a node adoption did not find: lost, with
// its kept screen when there is one; exited, with its code, when its
// recorded exit says so (or, from before exits were recorded, its kept
// screen does).
func ReadLost(stateDir string, m NodeMeta) Lost {
	l := Lost{Meta: m, Status: tools.StatusLost}
	if err := ReadJSON(Path(stateDir, m.ID, Screen), &l.Screen); err == nil {
		l.HasScreen = true
	}
	if ex, ok := ReadExit(stateDir, m.ID); ok {
		// Exited before (its recorded exit, not the saved screen): stays
		// exited, with its code.
		l.Status = tools.StatusExited
		l.Screen.Status, l.Screen.ExitCode = tools.StatusExited, &ex.Code
	} else if l.HasScreen && l.Screen.Status == tools.StatusExited {
		l.Status = tools.StatusExited // a state dir from before exits were recorded
	}
	return l
}

// WriteExit records a node's exit (nodes/<id>.exit.json).
func WriteExit(stateDir, id string, code int) error {
	return tools.WriteJSONAtomic(Path(stateDir, id, Exit), ExitRecord{Code: code, At: time.Now().UTC()})
}

// ReadExit reads a node's recorded exit; false when there is none.
func ReadExit(stateDir, id string) (ExitRecord, bool) {
	var r ExitRecord
	return r, ReadJSON(Path(stateDir, id, Exit), &r) == nil
}

// Reason is a lost node's exit_reason.
func (l *Lost) Reason() string {
	if l.Status == tools.StatusExited {
		return "its program had exited before its tmux server went away"
	}
	return fmt.Sprintf("its tmux server is gone (a reboot, or tmux was killed or crashed): termsprawl restore %s starts it again, termsprawl forget %s drops it", l.Meta.ID, l.Meta.ID)
}

// Info is a lost node's terminal_list row; sandbox is its profile's name.
func (l *Lost) Info(sandbox string) tools.NodeInfo {
	m := l.Meta
	info := tools.NodeInfo{Terminal: m.ID, Name: m.Name, Command: m.Command, Owner: m.Owner, Parent: m.Parent, Agent: m.Agent,
		Status: l.Status, ExitReason: l.Reason(), TmuxSocket: m.Socket, Host: m.Host, Sandbox: sandbox,
		Columns: l.Screen.Columns, Rows: l.Screen.Rows, Revision: l.Screen.Revision}
	if l.Status == tools.StatusExited {
		info.ExitCode = l.Screen.ExitCode
	}
	if l.HasScreen {
		info.SavedAt = l.Screen.SavedAt.Format(time.RFC3339)
	}
	return info
}

// Snapshot is a lost node's last screen.
func (l *Lost) Snapshot() tools.Snapshot {
	s := tools.Snapshot{Terminal: l.Meta.ID, Screen: l.Screen.Screen, Status: l.Status, ExitReason: l.Reason()}
	if s.Lines == nil {
		s.Lines = []string{}
	}
	if l.Status == tools.StatusExited {
		s.ExitCode = l.Screen.ExitCode
	}
	if l.HasScreen {
		s.SavedAt = l.Screen.SavedAt.Format(time.RFC3339)
	}
	return s
}
