package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Bounds of one diff.
const (
	// MaxDiffBytes bounds a diff's text.
	MaxDiffBytes = 1 << 20
	// MaxUntracked bounds the new files a diff reads.
	MaxUntracked = 10000
	// maxFileRead bounds what is read of one new file.
	maxFileRead = 1 << 20
)

// DiffBudget bounds the time of one diff: what is not done by then is cut
// (and said). A variable for the tests.
var DiffBudget = 8 * time.Second

// Diff is a worktree's changes against its base: committed, uncommitted
// and new (untracked, not ignored) files.
type Diff struct {
	Head       string `json:"head"`
	From       string `json:"from"` // the merge base the diff starts at
	Files      int    `json:"files"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Text       string `json:"text,omitempty"`
	// Cut says why the text or the stats stop short ("" when whole).
	Cut string `json:"cut,omitempty"`
	// Names are the changed files (at most MaxDirtyNames... per stats).
	Names []string `json:"names,omitempty"`
}

// DiffOf computes a worktree's diff; max bounds the text (0: MaxDiffBytes;
// negative: stats only).
func (g Git) DiffOf(ctx context.Context, in Info, limit int) (Diff, error) {
	if limit == 0 {
		limit = MaxDiffBytes
	}
	ctx, cancel := context.WithTimeout(ctx, DiffBudget)
	defer cancel()
	var d Diff
	head, err := g.read(ctx, in.Path, "rev-parse", "HEAD")
	if err != nil {
		return d, fmt.Errorf("read the worktree's HEAD: %w", err)
	}
	d.Head = strings.TrimSpace(head)
	d.From = in.BaseCommit
	if mb, err := g.read(ctx, in.Path, "merge-base", g.baseRef(ctx, in), d.Head); err == nil && strings.TrimSpace(mb) != "" {
		d.From = strings.TrimSpace(mb)
	}
	common := []string{"-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"}
	ns, err := g.read(ctx, in.Path, append(common, "--numstat", "-z", d.From, "--")...)
	if err != nil {
		return d, fmt.Errorf("diff stats: %w", err)
	}
	for _, rec := range splitZ(ns) {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) < 3 {
			continue
		}
		d.Files++
		a, _ := strconv.Atoi(f[0])
		b, _ := strconv.Atoi(f[1])
		d.Insertions += a
		d.Deletions += b
		if len(d.Names) < MaxDirtyNames {
			d.Names = append(d.Names, f[2])
		}
	}
	var text bytes.Buffer
	if limit > 0 {
		tctx, tcancel := context.WithCancel(ctx)
		w := &capWriter{b: &text, max: limit, full: tcancel}
		_, err := g.do(tctx, call{dir: in.Path, args: append(common, d.From, "--"), read: true, stdout: w})
		tcancel()
		switch {
		case w.cut:
			d.Cut = fmt.Sprintf("the diff text is cut at %d bytes", limit)
		case errors.Is(err, ErrTimeout):
			d.Cut = fmt.Sprintf("the diff text is cut at %d bytes: git did not finish it in time", text.Len())
		case err != nil:
			return d, fmt.Errorf("diff: %w", err)
		}
	}
	un, err := g.read(ctx, in.Path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		if errors.Is(err, ErrTimeout) || ctx.Err() != nil {
			d.Cut = cutAlso(d.Cut, "new files were not listed in time")
			d.Text = text.String()
			return d, nil
		}
		return d, fmt.Errorf("list new files: %w", err)
	}
	names := splitZ(un)
	if len(names) > MaxUntracked {
		d.Cut = cutAlso(d.Cut, fmt.Sprintf("%d new files, only the first %d counted", len(names), MaxUntracked))
		names = names[:MaxUntracked]
	}
	buf := make([]byte, maxFileRead)
	for i, rel := range names {
		if ctx.Err() != nil {
			d.Cut = cutAlso(d.Cut, fmt.Sprintf("out of time after %d of %d new files", i, len(names)))
			break
		}
		d.Files++
		if len(d.Names) < MaxDirtyNames {
			d.Names = append(d.Names, rel)
		}
		n, binary, size, err := readHead(filepath.Join(in.Path, rel), buf)
		if err != nil {
			continue
		}
		if size > int64(n) && !binary {
			// The count covers what was read: say so.
			d.Cut = cutAlso(d.Cut, fmt.Sprintf("new file %s is %d bytes: its insertions are counted in its first %d bytes only", rel, size, n))
		}
		content := buf[:n]
		lines := bytes.Count(content, []byte("\n"))
		if n > 0 && content[n-1] != '\n' {
			lines++
		}
		if !binary {
			d.Insertions += lines
		}
		if limit <= 0 || d.Cut != "" && text.Len() >= limit {
			continue
		}
		var h bytes.Buffer
		fmt.Fprintf(&h, "diff --git a/%s b/%s\nnew file mode 100644\n", rel, rel)
		switch {
		case binary:
			fmt.Fprintf(&h, "Binary files /dev/null and b/%s differ\n", rel)
		case n == 0:
		default:
			fmt.Fprintf(&h, "--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", rel, lines)
			for _, l := range strings.SplitAfter(string(content), "\n") {
				if l == "" {
					continue
				}
				h.WriteString("+" + l)
				if !strings.HasSuffix(l, "\n") {
					h.WriteString("\n\\ No newline at end of file\n")
				}
			}
		}
		if text.Len()+h.Len() > limit {
			room := limit - text.Len()
			text.Write(h.Bytes()[:max(room, 0)])
			d.Cut = cutAlso(d.Cut, fmt.Sprintf("the diff text is cut at %d bytes", limit))
			continue
		}
		text.Write(h.Bytes())
	}
	d.Text = text.String()
	return d, nil
}

func cutAlso(a, b string) string {
	if a == "" {
		return b
	}
	if strings.Contains(a, b) {
		return a
	}
	return a + "; " + b
}

// readHead reads up to len(buf) bytes of a regular file and tells
// binary content (a NUL in its first 8000 bytes, as git does) and the
// file's size.
func readHead(path string, buf []byte) (int, bool, int64, error) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0, false, 0, fmt.Errorf("not a regular file: %s", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false, 0, err
	}
	defer f.Close()
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, false, 0, err
	}
	return n, bytes.IndexByte(buf[:min(n, 8000)], 0) >= 0, st.Size(), nil
}

// capWriter keeps max bytes, then calls full (which kills the git that
// writes) and drops the rest.
type capWriter struct {
	b    *bytes.Buffer
	max  int
	cut  bool
	full func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - w.b.Len()
	if len(p) > room {
		w.b.Write(p[:max(room, 0)])
		if !w.cut {
			w.cut = true
			w.full()
		}
		return len(p), nil
	}
	return w.b.Write(p)
}
