package tmuxctl

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
)

// os/exec copies a client's stderr from a pipe (an *os.File) with io.Copy
// into the tailBuffer. The copy goes through tailBuffer.ReadFrom with its
// small buffer, not io.Copy's 32 KiB one, and keeps the last max bytes.
func TestTailBufferCopyFromPipeIsSmall(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<10) // 16 KiB
	go func() {
		pw.Write(data)
		pw.Close()
	}()
	tb := &tailBuffer{max: 4096}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	n, err := io.Copy(tb, pr)
	runtime.ReadMemStats(&ms1)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("copied %d bytes, %v; want %d", n, err, len(data))
	}
	if got := tb.String(); got != string(data[len(data)-4096:]) {
		t.Fatalf("tail is %d bytes, not the last 4096 written", len(got))
	}
	// The tail's own copies (max 4096 bytes each time it trims) come on
	// top of the read buffer; io.Copy's buffer alone would be 32 KiB.
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc >= 32<<10 {
		t.Fatalf("copying stderr allocated %d bytes, want < 32 KiB (io.Copy's own buffer?)", alloc)
	}
}
