package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// AuditFile is the audit log's name in the state directory.
const AuditFile = "audit.jsonl"

// DefaultAuditMax is the size past which the log is rotated, and
// AuditKeep how many rotated files are kept (audit.jsonl.1 is the newest).
const (
	DefaultAuditMax = 16 << 20
	AuditKeep       = 5
)

// By says who or what made a decision.
const (
	ByRule    = "rule"    // a policy rule (Rule, Scope)
	ByHuman   = "human"   // a human's answer (Surface)
	ByAlways  = "always"  // an earlier "always" answer of a human
	ByTimeout = "timeout" // nobody answered in time
	ByBudget  = "budget"  // a budget's action
	ByClose   = "closed"  // the node closed or termsprawl went down while it waited
	ByAgent   = "agent"   // the agent withdrew or denied it itself
)

// Entry is one line of the audit log: the contract's value, as
// audit_list answers it.
type Entry = tools.AuditEntry

// Audit appends entries to <state>/audit.jsonl: each line written with
// O_APPEND and fsync'd before Append returns, so a decision is on disk
// before the agent hears it; rotated by size.
type Audit struct {
	path string
	max  int64
	// testAfterAppend, when set, runs after a line is synced (tests kill
	// the process there).
	testAfterAppend func()

	mu   sync.Mutex // guards f and size: one writer at a time, rotation included
	f    *os.File
	size int64
}

// OpenAudit opens (creating) the audit log in dir; max <= 0 is
// DefaultAuditMax.
func OpenAudit(dir string, max int64) (*Audit, error) {
	if max <= 0 {
		max = DefaultAuditMax
	}
	a := &Audit{path: filepath.Join(dir, AuditFile), max: max}
	if err := a.open(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Audit) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open the audit log: %w", err)
	}
	a.f, a.size = f, st.Size()
	return nil
}

// Path is the log's file.
func (a *Audit) Path() string { return a.path }

// Append writes one entry and syncs it to disk.
func (a *Audit) Append(e Entry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return errors.New("audit: the log is closed")
	}
	if a.size > 0 && a.size+int64(len(b)) > a.max {
		if err := a.rotateLocked(); err != nil {
			return err
		}
	}
	n, err := a.f.Write(b)
	a.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit: write %s: %w", a.path, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("audit: sync %s: %w", a.path, err)
	}
	if a.testAfterAppend != nil {
		a.testAfterAppend()
	}
	return nil
}

// rotateLocked moves audit.jsonl to .1 (.1 to .2, …, dropping the
// oldest) and opens a new one.
func (a *Audit) rotateLocked() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("audit: close for rotation: %w", err)
	}
	a.f = nil
	for i := AuditKeep - 1; i >= 1; i-- {
		from := a.path + "." + strconv.Itoa(i)
		if err := os.Rename(from, a.path+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("audit: rotate: %w", err)
		}
	}
	if err := os.Rename(a.path, a.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("audit: rotate: %w", err)
	}
	if d, err := os.Open(filepath.Dir(a.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return a.open()
}

// Close closes the log.
func (a *Audit) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// Filter selects entries when reading.
type Filter struct {
	Node  string
	Since time.Time
	// Limit keeps the newest Limit entries (0: all).
	Limit int
}

// MaxAuditLine bounds one line read back.
const MaxAuditLine = 16 << 20

// ReadAudit reads the entries of the log in dir, oldest first, the
// rotated files included; lines that are not entries are skipped and
// counted.
func ReadAudit(dir string, f Filter) (entries []Entry, skipped int, err error) {
	base := filepath.Join(dir, AuditFile)
	files := []string{}
	for i := AuditKeep; i >= 1; i-- {
		files = append(files, base+"."+strconv.Itoa(i))
	}
	files = append(files, base)
	for _, name := range files {
		fh, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return entries, skipped, fmt.Errorf("read the audit log: %w", err)
		}
		r := bufio.NewReaderSize(fh, 64<<10)
		for {
			line, err := readLine(r)
			if len(bytes.TrimSpace(line)) > 0 {
				var e Entry
				if json.Unmarshal(line, &e) != nil || e.Decision == "" {
					skipped++
				} else if (f.Node == "" || e.Node == f.Node) && (f.Since.IsZero() || !e.Time.Before(f.Since)) {
					entries = append(entries, e)
					if f.Limit > 0 && len(entries) > 2*f.Limit {
						entries = append(entries[:0], entries[len(entries)-f.Limit:]...)
					}
				}
			}
			if err != nil {
				break
			}
		}
		fh.Close()
	}
	if f.Limit > 0 && len(entries) > f.Limit {
		entries = entries[len(entries)-f.Limit:]
	}
	return entries, skipped, nil
}

// readLine reads one line, at most MaxAuditLine bytes of it (the rest
// dropped).
func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(out)+len(chunk) <= MaxAuditLine {
			out = append(out, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil {
			return out, nil
		}
		if err == io.EOF && len(out) > 0 {
			return out, io.EOF
		}
		return out, err
	}
}
