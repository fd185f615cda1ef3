package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// hangBound is a hang detector, not a timing assertion: a read that is
// refused promptly returns in microseconds.
const hangBound = 10 * time.Second

// returnsWithin runs f in a goroutine and fails the test if it does not
// return within hangBound; unblock, if not nil, is called then to free it.
func returnsWithin(t *testing.T, what string, f func(), unblock func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangBound):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("%s did not return within %s: it blocks", what, hangBound)
	}
}

// openFIFOWriter unblocks a reader stuck on the FIFO (a pre-fix read):
// opening it read-write and closing gives the reader EOF.
func openFIFOWriter(path string) func() {
	return func() {
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	}
}

func TestReadFileBoundedKinds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.json")
	writeFile(t, regular, `{"a":1}`, 0o600)
	empty := filepath.Join(dir, "empty.json")
	writeFile(t, empty, "", 0o600)
	exact := filepath.Join(dir, "exact")
	writeFile(t, exact, strings.Repeat("x", 100), 0o600)
	over := filepath.Join(dir, "over")
	writeFile(t, over, strings.Repeat("x", 101), 0o600)
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	if l, err := net.Listen("unix", sock); err == nil {
		t.Cleanup(func() { l.Close() })
	} else {
		sock = ""
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, path string
		want       string // content, when wantErr is empty
		wantErr    string
		is         error
	}{
		{name: "regular", path: regular, want: `{"a":1}`},
		{name: "symlink to regular", path: link, want: `{"a":1}`},
		{name: "empty", path: empty, want: ""},
		{name: "exactly max", path: exact, want: strings.Repeat("x", 100)},
		{name: "over max", path: over, wantErr: "it is 101 bytes, over the 100-byte limit", is: ErrFileTooLarge},
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: "no such file", is: fs.ErrNotExist},
		{name: "directory", path: dir, wantErr: "it is a directory, not a regular file", is: ErrNotRegularFile},
		{name: "fifo", path: fifo, wantErr: "it is a named pipe (FIFO), not a regular file", is: ErrNotRegularFile},
		{name: "symlink to /dev/zero", path: zero, wantErr: "it is a character device, not a regular file", is: ErrNotRegularFile},
		{name: "/dev/null", path: "/dev/null", wantErr: "character device", is: ErrNotRegularFile},
		{name: "socket", path: sock, wantErr: "it is a socket, not a regular file", is: ErrNotRegularFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "" {
				testenv.SkipOrFail(t, "cannot make this kind of file here")
			}
			var data []byte
			var err error
			returnsWithin(t, "ReadFileBounded("+tc.path+")", func() { data, err = ReadFileBounded(tc.path, 100) }, openFIFOWriter(fifo))
			if tc.wantErr == "" {
				if err != nil || string(data) != tc.want {
					t.Fatalf("got %q, %v; want %q", data, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %d bytes, want an error", len(data))
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("error %q does not name the path and say %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %q is not %v", err, tc.is)
			}
		})
	}
}

func TestReadFileBoundedProcFile(t *testing.T) {
	// /proc files report size 0 but have content.
	data, err := ReadFileBounded("/proc/self/stat", 4096)
	if errors.Is(err, fs.ErrNotExist) {
		testenv.SkipOrFail(t, "no /proc")
	}
	if err != nil || len(data) == 0 {
		t.Fatalf("got %q, %v", data, err)
	}
}

func TestDiscoveryReadsRefuseFIFOs(t *testing.T) {
	t.Parallel()
	st := newTestState(t)
	mkfifo(t, st.endpoint)
	var err error
	returnsWithin(t, "ReadEndpoint of a FIFO", func() { _, err = ReadEndpoint(st.endpoint) }, openFIFOWriter(st.endpoint))
	if err == nil || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), st.endpoint) {
		t.Fatalf("ReadEndpoint: %v", err)
	}

	sess := SessionPath(st.dir, "fifo")
	mkfifo(t, sess)
	returnsWithin(t, "ReadSession of a FIFO", func() { _, err = ReadSession(sess) }, openFIFOWriter(sess))
	if err == nil || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), sess) {
		t.Fatalf("ReadSession: %v", err)
	}

	prefs := PreferencesPath(st.dir)
	mkfifo(t, prefs)
	returnsWithin(t, "ReadPreferences of a FIFO", func() { _, err = ReadPreferences(prefs) }, openFIFOWriter(prefs))
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("ReadPreferences: %v", err)
	}

	// Through Call: the contract's unavailable result, promptly.
	var res Result
	returnsWithin(t, "Call with a FIFO endpoint.json", func() { res = call(t, st.session, "terminal_list", "{}", CallOptions{}) }, openFIFOWriter(st.endpoint))
	wantUnavailable(t, res, "named pipe (FIFO)")

	// A FIFO session file: unavailable too.
	returnsWithin(t, "Call with a FIFO session file", func() { res = call(t, sess, "terminal_list", "{}", CallOptions{}) }, openFIFOWriter(sess))
	wantUnavailable(t, res, "named pipe (FIFO)")

	// WaitForEndpoint does not hang on it either; it waits for a real file.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	returnsWithin(t, "WaitForEndpoint with a FIFO endpoint.json", func() { _, err = WaitForEndpoint(ctx, st.endpoint, nil) }, openFIFOWriter(st.endpoint))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForEndpoint: %v", err)
	}
}

func TestDiscoveryReadsRefuseDevZero(t *testing.T) {
	t.Parallel()
	st := newTestState(t)
	if err := os.Symlink("/dev/zero", st.endpoint); err != nil {
		t.Fatal(err)
	}
	op := OperatorSessionPath(st.dir)
	if err := os.Symlink("/dev/zero", op); err != nil {
		t.Fatal(err)
	}
	var err error
	returnsWithin(t, "ReadEndpoint of /dev/zero", func() { _, err = ReadEndpoint(st.endpoint) }, nil)
	if err == nil || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("ReadEndpoint: %v", err)
	}
	returnsWithin(t, "ReadSession of /dev/zero", func() { _, err = ReadSession(op) }, nil)
	if err == nil || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("ReadSession: %v", err)
	}
	var res Result
	returnsWithin(t, "Call with endpoint.json -> /dev/zero", func() { res = call(t, st.session, "terminal_list", "{}", CallOptions{}) }, nil)
	wantUnavailable(t, res, "character device")
}

func TestDiscoveryReadsRefuseHugeFiles(t *testing.T) {
	st := newTestState(t)
	const size = 200 << 20
	for _, p := range []string{st.endpoint, st.session} {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil { // sparse: no disk, no time
			t.Fatal(err)
		}
		f.Close()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var errE, errS error
	returnsWithin(t, "reads of a 200 MB file", func() {
		_, errE = ReadEndpoint(st.endpoint)
		_, errS = ReadSession(st.session)
	}, nil)
	runtime.ReadMemStats(&after)
	for _, err := range []error{errE, errS} {
		if err == nil || !strings.Contains(err.Error(), "over the 65536-byte limit") {
			t.Fatalf("got %v", err)
		}
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("reading two 200 MB files to refuse them allocated %d bytes", grew)
	}
}

// TestBoundedReadRoundTrip: a file written by WriteEndpoint reads back.
func TestBoundedReadRoundTrip(t *testing.T) {
	st := newTestState(t)
	st.writeEndpoint(t, "http://127.0.0.1:1/call", "i1")
	ep, err := ReadEndpoint(st.endpoint)
	if err != nil || ep.InstanceID != "i1" {
		t.Fatalf("%+v %v", ep, err)
	}
	data, err := ReadFileBounded(st.endpoint, MaxStateFileBytes)
	if err != nil || !json.Valid(data) {
		t.Fatalf("%q %v", data, err)
	}
}
