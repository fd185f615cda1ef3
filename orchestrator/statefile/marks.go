package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SubmitMark is a submit's progress in nodes/ID.input: written before its
// first step, moved on at each phase, dropped (or kept as done) at its end.
type SubmitMark struct {
	path string
	m    Mark
}

// BeginSubmit writes the mark of a submit at node id, phase text.
func BeginSubmit(stateDir, id string, in Intent) (*SubmitMark, error) {
	s := &SubmitMark{path: Path(stateDir, id, Input), m: Mark{Op: "submit", Phase: PhaseText, Intent: in, Started: time.Now().UTC()}}
	if err := WriteMark(s.path, s.m); err != nil {
		return nil, err
	}
	return s, nil
}

// Phase records that the submit reached phase p.
func (s *SubmitMark) Phase(p string) error {
	s.m.Phase = p
	return WriteMark(s.path, s.m)
}

// End records whether Enter was sent: a keyed submit keeps the mark
// (phase done) until the next submit, so a kill before its receipt is
// stored still settles the key as submitted; an unkeyed one drops it. A
// submit whose Enter failed half-way keeps its mark: adoption must not
// think it is safe.
func (s *SubmitMark) End(sent bool) {
	if sent && s.m.Intent.Key != "" {
		if err := s.Phase(PhaseDone); err == nil {
			return
		}
	}
	if !sent && s.m.Phase != PhaseText {
		return
	}
	os.Remove(s.path)
}

// WriteCloseMark writes the mark of a close of node id (nodes/ID.closing).
func WriteCloseMark(stateDir, id string, in Intent) error {
	return WriteMark(Path(stateDir, id, Closing), Mark{Op: "close", Intent: in, Started: time.Now().UTC()})
}

// OrphanCloseMarks removes the close marks of nodes that have no
// metadata any more (their session ended) and returns each one's node id
// and mark.
func OrphanCloseMarks(stateDir string) (ids []string, marks []Mark) {
	found, _ := filepath.Glob(filepath.Join(stateDir, NodesDir, "*"+Closing))
	for _, p := range found {
		id := strings.TrimSuffix(filepath.Base(p), Closing)
		if _, err := os.Stat(Path(stateDir, id, Meta)); errors.Is(err, os.ErrNotExist) {
			m, _ := ReadMark(p)
			os.Remove(p)
			ids, marks = append(ids, id), append(marks, m)
		}
	}
	return ids, marks
}
