package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// Recordings are findable (CONTRACT §18): `termsprawl recordings [NODE]`
// lists <state>/traces newest first, and `termsprawl replay` takes a
// node or `latest` besides a path. Both read the directory itself, so
// they work while termsprawl is down.

type recordingsCmd struct {
	JSON bool   `name:"json" help:"Print the recordings as JSON: {recordings: [{node, start, end, duration_ms, ended, bytes, path, exit_code}]}."`
	Node string `arg:"" optional:"" name:"NODE" predictor:"node" help:"Only the recordings of this node (its id)."`
}

func (recordingsCmd) Examples() string {
	return `termsprawl recordings                      # every recording, newest first
termsprawl recordings build                # those of node build
termsprawl replay latest                   # play the newest one
termsprawl replay build                    # play the newest one of build`
}

// recordingRow is one recording of `termsprawl recordings`.
type recordingRow struct {
	Node       string    `json:"node"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end,omitzero"`
	DurationMS int64     `json:"duration_ms"`
	// Ended: meta.json has its end (the program exited, or the recording
	// was stopped or closed); else it may still be recording.
	Ended    bool   `json:"ended"`
	Bytes    int64  `json:"bytes"`
	Path     string `json:"path"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// tracesDir is <state>/traces.
func (h *human) tracesDir() string { return filepath.Join(h.stateDir, "traces") }

// listRecordings reads every recording directory of <state>/traces
// (those of node only, when it is set), newest first. A missing traces
// directory is no recordings.
func listRecordings(dir, node string) ([]recordingRow, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var rows []recordingRow
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		row, ok := readRecording(p)
		if !ok || (node != "" && row.Node != node) {
			continue
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].Start.Equal(rows[j].Start) {
			return rows[i].Start.After(rows[j].Start)
		}
		return rows[i].Path > rows[j].Path
	})
	return rows, nil
}

// readRecording describes one recording directory; ok is false for a
// directory that is not one (no meta.json that parses).
func readRecording(p string) (recordingRow, bool) {
	raw, err := os.ReadFile(filepath.Join(p, record.MetaFile))
	if err != nil {
		return recordingRow{}, false
	}
	var m record.Meta
	if json.Unmarshal(raw, &m) != nil || m.Start.IsZero() {
		return recordingRow{}, false
	}
	row := recordingRow{Node: m.Node, Start: m.Start, End: m.End, Ended: !m.End.IsZero(), Path: p, ExitCode: m.ExitCode}
	if files, err := os.ReadDir(p); err == nil {
		for _, f := range files {
			if info, err := f.Info(); err == nil && info.Mode().IsRegular() {
				row.Bytes += info.Size()
			}
		}
	}
	if row.Ended {
		row.DurationMS = max(0, m.End.Sub(m.Start).Milliseconds())
	} else {
		row.DurationMS = lastCastMS(filepath.Join(p, record.CastFile))
	}
	return row, true
}

// lastCastMS is the time of the last event of an asciicast v2 file, from
// its tail (0 if it cannot be told).
func lastCastMS(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	const tail = 64 << 10
	off := max(0, st.Size()-tail)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var ev []json.RawMessage
		if json.Unmarshal(lines[i], &ev) != nil || len(ev) < 1 {
			continue
		}
		var t float64
		if json.Unmarshal(ev[0], &t) == nil {
			return int64(t * 1000)
		}
	}
	return 0
}

func (h *human) recordings(c recordingsCmd) int {
	rows, err := listRecordings(h.tracesDir(), c.Node)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	if c.JSON {
		if rows == nil {
			rows = []recordingRow{}
		}
		_ = prettyJSON(h.stdout, map[string]any{"recordings": rows})
		return ExitOK
	}
	if len(rows) == 0 {
		if c.Node != "" {
			fmt.Fprintf(h.stdout, "no recordings of node %s in %s: `termsprawl record %s` starts one\n", c.Node, h.tracesDir(), c.Node)
		} else {
			fmt.Fprintf(h.stdout, "no recordings in %s: `termsprawl record NODE` starts one\n", h.tracesDir())
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTART\tDURATION\tBYTES\tPATH")
	for _, r := range rows {
		d := (time.Duration(r.DurationMS) * time.Millisecond).Round(100 * time.Millisecond).String()
		if !r.Ended {
			d += " (open)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", dash(r.Node), r.Start.Local().Format("2006-01-02 15:04:05"), d, r.Bytes, vis(r.Path))
	}
	_ = tw.Flush()
	fmt.Fprintln(h.stdout, "play one with: termsprawl replay PATH|NODE|latest")
	return ExitOK
}

// replayTarget turns replay's argument into a recording's path: an
// existing path as it is, `latest` the newest recording, else the newest
// recording of that node.
func (h *human) replayTarget(word string) (string, error) {
	if _, err := os.Stat(word); err == nil || strings.ContainsRune(word, os.PathSeparator) {
		return word, nil
	}
	node := word
	if word == "latest" {
		node = ""
	}
	rows, err := listRecordings(h.tracesDir(), node)
	if err != nil {
		return "", err
	}
	if len(rows) > 0 {
		return rows[0].Path, nil
	}
	if node == "" {
		return "", fmt.Errorf("no recordings in %s to replay: `termsprawl record NODE` records a node", h.tracesDir())
	}
	var known []string
	all, _ := listRecordings(h.tracesDir(), "")
	for _, r := range all {
		known = append(known, r.Node)
	}
	return "", fmt.Errorf("%q is neither a recording's path nor a node with recordings in %s%s: `termsprawl recordings` lists them", word, h.tracesDir(), tools.DidYouMean(tools.Suggest(word, known, false)))
}
