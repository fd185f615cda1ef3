package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Resume reopens the recording in dir after an orchestrator restart and
// goes on appending to it. A line cut short by the crash is completed if
// it parses and dropped otherwise. It records a gap event from the last
// recorded moment to now and paints seed, the screen as it is now, as a
// reseeded frame, so a replay shows the screen as it was when recording
// resumed. Offsets go on from the recording's start (meta.json), so they
// stay monotonic across the restart.
func Resume(dir string, now time.Time, seed tools.Screen) (*Recorder, error) {
	return resume(dir, now, seed, time.Now)
}

func resume(dir string, now time.Time, seed tools.Screen, clock func() time.Time) (*Recorder, error) {
	m, err := readMeta(dir)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "record: cannot resume %s: not a recording: %w", dir, err)
	}
	if m.Start.IsZero() {
		return nil, tools.Errorf(tools.KindUsage, "record: cannot resume %s: meta.json has no start time", dir)
	}
	castPath := filepath.Join(dir, CastFile)
	lastCast, err := repairTail(castPath, true)
	if err != nil {
		return nil, fmt.Errorf("record: resume %s: %w", dir, err)
	}
	lastEvent, err := repairTail(filepath.Join(dir, EventsFile), false)
	if err != nil {
		return nil, fmt.Errorf("record: resume %s: %w", dir, err)
	}
	lastUS := max(lastCast, lastEvent*1000)
	nowUS := max(now.Sub(m.Start).Microseconds(), lastUS)

	castF, err := os.OpenFile(castPath, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	eventF, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		castF.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	m.Resumes++
	m.End = time.Time{}
	m.Error = ""
	// Offsets from here on: nowUS plus the monotonic time since this call.
	origin := clock().Add(-time.Duration(nowUS) * time.Microsecond)
	r := newRecorder(dir, castF, eventF, origin, clock, m)
	r.nCast = -1 // the cast events before the restart are not counted: no keyframes
	r.mu.Lock()
	r.lastUS = nowUS
	from, to := lastUS/1000, nowUS/1000
	r.addEvent(Event{TMS: to, Type: "gap", FromMS: &from, ToMS: &to})
	r.reseedLocked(seed, "resume")
	r.metaDirty = true
	r.mu.Unlock()
	go r.run()
	return r, nil
}

// repairTail makes path end with a complete line: a last line without a
// newline gets one if it parses as an event, and is cut off otherwise. It
// returns the time of the last event: microseconds for the cast (whose
// first line, the header, must be there), milliseconds for events.jsonl
// (which may be missing).
func repairTail(path string, cast bool) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if !cast && os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	const chunk = 64 << 10
	var tail []byte
	var off int64
	// Read back until the tail holds the last two lines whole (or the
	// whole file).
	for off = size; off > 0; {
		n := min(int64(chunk), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, err
		}
		tail = append(buf, tail...)
		if bytes.Count(tail, []byte{'\n'}) >= 3 {
			break
		}
		if len(tail) > 16<<20 {
			break
		}
	}
	// tail = file[off:]
	lines := bytes.Split(tail, []byte{'\n'})
	last := lines[len(lines)-1] // after the final newline: "" if complete
	if len(last) > 0 {
		ok := false
		if cast {
			_, ok = parseEventTime(last)
		} else {
			var e Event
			ok = json.Unmarshal(last, &e) == nil
		}
		if ok {
			if _, err := f.WriteAt([]byte{'\n'}, size); err != nil {
				return 0, err
			}
		} else {
			cut := size - int64(len(last))
			if cast && cut == 0 {
				return 0, fmt.Errorf("%s: the header line is incomplete", path)
			}
			if err := f.Truncate(cut); err != nil {
				return 0, err
			}
			lines = lines[:len(lines)-1]
		}
	}
	// The time of the last complete event line.
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 {
			continue
		}
		if cast {
			if us, ok := parseEventTime(line); ok {
				return us, nil
			}
			continue // the header, or garbage
		}
		var e Event
		if json.Unmarshal(line, &e) == nil {
			t := e.TMS
			if e.ToMS != nil {
				t = max(t, *e.ToMS)
			}
			return t, nil
		}
	}
	if cast && off == 0 && len(bytes.TrimSpace(tail)) == 0 {
		return 0, fmt.Errorf("%s is empty", path)
	}
	return 0, nil
}

// parseEventTime parses a cast event line and returns its time in
// microseconds.
func parseEventTime(line []byte) (int64, bool) {
	ev, _, err := parseEventLine(line)
	if err != nil {
		return 0, false
	}
	return ev.us, true
}
