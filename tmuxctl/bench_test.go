package tmuxctl

// Benchmarks behind docs/PERFORMANCE.md. The tmux ones use private servers
// (internal/tmuxtest); none touches the default server. Run them with
//
//	go test -run '^$' -bench . -count 5 ./tmuxctl/
//
// and compare runs with benchstat.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
)

// benchTmux runs one tmux command on socket as a separate process and
// returns its stdout; ctx bounds commands that wait (wait-for).
func benchTmux(ctx context.Context, socket string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-L", socket}, args...)...)
	cmd.Env = tmuxtest.Env()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, stderr)
	}
	return string(out), nil
}

// benchAttach starts a control client on session.
func benchAttach(b *testing.B, socket, session string) *Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Socket: socket, Args: []string{"attach-session", "-t", "=" + session}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkRoundTrip compares one command round trip over control mode
// with spawning a tmux client process for the same command.
func BenchmarkRoundTrip(b *testing.B) {
	srv := tmuxtest.New(b)
	srv.Must("new-session", "-d", "-s", "rt", "-x", "200", "-y", "50", "sleep", "3600")

	b.Run("control", func(b *testing.B) {
		c := benchAttach(b, srv.Socket, "rt")
		defer c.Close()
		ctx := context.Background()
		for b.Loop() {
			out, err := c.Run(ctx, "display-message -p x")
			if err != nil || len(out) != 1 || out[0] != "x" {
				b.Fatalf("display-message = %q, %v", out, err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		// The same round trip without Client: write the line to a
		// `tmux -C` child and read its stdout up to the %end. The
		// difference to "control" is what Client itself costs.
		cmd := exec.Command("tmux", "-L", srv.Socket, "-f", os.DevNull, "-C", "attach-session", "-t", "=rt")
		cmd.Env = tmuxtest.Env()
		cmd.SysProcAttr = childSysProcAttr()
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer cmd.Wait()
		defer in.Close()
		br := bufio.NewReader(out)
		untilEnd := func() {
			for {
				l, err := br.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				if bytes.HasPrefix(l, []byte("%end ")) || bytes.HasPrefix(l, []byte("%error ")) {
					return
				}
			}
		}
		untilEnd() // the attach command's block
		for b.Loop() {
			if _, err := io.WriteString(in, "display-message -p x\n"); err != nil {
				b.Fatal(err)
			}
			untilEnd()
		}
	})
	b.Run("spawn", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			out, err := benchTmux(ctx, srv.Socket, "display-message", "-p", "x")
			if err != nil || out != "x\n" {
				b.Fatalf("display-message = %q, %v", out, err)
			}
		}
	})
}

// Decode payloads: what programs write, before tmux escapes it.

// benchTextPayload is log-like plain text with the CR LF a tty's onlcr
// turns every newline into.
func benchTextPayload(r *rand.Rand, size int) []byte {
	levels := []string{"INFO", "DEBUG", "WARN", "ERROR"}
	paths := []string{"/api/v1/items", "/healthz", "/api/v1/users/42", "/static/app.js", "/login"}
	var buf bytes.Buffer
	for buf.Len() < size {
		fmt.Fprintf(&buf, "2025-06-%02dT%02d:%02d:%02d.%03dZ %-5s server: request id=%08x path=%s status=%d dur=%dms bytes=%d\r\n",
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), levels[r.IntN(len(levels))],
			r.Uint32(), paths[r.IntN(len(paths))], []int{200, 200, 200, 304, 404, 500}[r.IntN(6)], r.IntN(900), r.IntN(1<<16))
	}
	return buf.Bytes()[:size]
}

// benchTUIPayload is full-screen redraws of a 200x50 TUI (a process
// monitor): cursor moves, 256-colour SGR, box drawing and UTF-8 text.
func benchTUIPayload(r *rand.Rand, size int) []byte {
	words := []string{"postgres", "node", "go", "tmux", "sshd", "nginx", "python3", "λ-worker", "日本語", "✓ ok"}
	var buf bytes.Buffer
	for buf.Len() < size {
		buf.WriteString("\x1b[?25l\x1b[H")
		for row := 1; row <= 50; row++ {
			fmt.Fprintf(&buf, "\x1b[%d;1H\x1b[38;5;%dm│\x1b[0m", row, 16+r.IntN(216))
			col := 1
			for col < 180 {
				w := words[r.IntN(len(words))]
				fmt.Fprintf(&buf, "\x1b[38;5;%d;48;5;%dm%6d %-12s\x1b[1m%5.1f%%\x1b[22m ─┼─ ",
					r.IntN(256), 232+r.IntN(24), r.IntN(99999), w, r.Float64()*100)
				col += 30
			}
			buf.WriteString("\x1b[0m\x1b[K")
		}
		fmt.Fprintf(&buf, "\x1b[50;%dH\x1b[?25h", 1+r.IntN(200))
	}
	return buf.Bytes()[:size]
}

// benchBinaryPayload is random bytes 0x00-0xff (an eighth of them escaped).
func benchBinaryPayload(r *rand.Rand, size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// benchWire cuts raw into chunks of the sizes tmux 3.3a uses for a fast
// pane (its %output lines run up to ~3 KB of wire) and returns the encoded
// payload of each chunk and the whole "%output %1 …\n" stream.
func benchWire(r *rand.Rand, raw []byte) (payloads [][]byte, wire []byte) {
	for len(raw) > 0 {
		n := min(len(raw), 256+r.IntN(2730-256))
		enc := Encode(raw[:n])
		payloads = append(payloads, enc)
		wire = append(wire, "%output %1 "...)
		wire = append(wire, enc...)
		wire = append(wire, '\n')
		raw = raw[n:]
	}
	return payloads, wire
}

// benchSink decodes output into a reused buffer, as a PaneStream does,
// counts the bytes and drops everything else.
type benchSink struct {
	n   int
	buf []byte
}

func (s *benchSink) output(_, escaped []byte) {
	s.buf = AppendDecoded(s.buf[:0], escaped)
	s.n += len(s.buf)
}
func (s *benchSink) event(Event)   {}
func (s *benchSink) reply(reply)   {}
func (s *benchSink) foreign(reply) {}
func (s *benchSink) stray([]byte)  {}

// BenchmarkDecode measures the client's read path without tmux: a recorded
// %output stream is split into lines the way readLoop does it (64 KiB
// bufio.Reader, ReadSlice) and fed to the framer, which decodes every
// payload. MB/s is wire bytes. The AppendDecoded sub-benchmarks time the
// unescaping alone (MB/s of escaped payload).
func BenchmarkDecode(b *testing.B) {
	const size = 4 << 20
	kinds := []struct {
		name string
		gen  func(*rand.Rand, int) []byte
	}{
		{"text", benchTextPayload},
		{"tui", benchTUIPayload},
		{"binary", benchBinaryPayload},
	}
	for _, k := range kinds {
		r := rand.New(rand.NewPCG(1, uint64(len(k.name))))
		raw := k.gen(r, size)
		payloads, wire := benchWire(r, raw)
		b.Run("framer/"+k.name, func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			src := bytes.NewReader(wire)
			br := bufio.NewReaderSize(src, 64<<10)
			for b.Loop() {
				src.Reset(wire)
				br.Reset(src)
				var f framer
				s := benchSink{}
				for {
					line, err := br.ReadSlice('\n')
					if len(line) > 0 {
						f.line(trimEOL(line), &s)
					}
					if err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
				if s.n != len(raw) || f.ignore != 0 {
					b.Fatalf("decoded %d bytes (want %d), %d lines ignored", s.n, len(raw), f.ignore)
				}
			}
		})
		b.Run("AppendDecoded/"+k.name, func(b *testing.B) {
			enc := 0
			for _, p := range payloads {
				enc += len(p)
			}
			b.SetBytes(int64(enc))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				n := 0
				for _, p := range payloads {
					dst = AppendDecoded(dst[:0], p)
					n += len(dst)
				}
				if n != len(raw) {
					b.Fatalf("decoded %d bytes, want %d", n, len(raw))
				}
			}
		})
	}
}

// BenchmarkFlood times a pane that prints a 50 MB file (base64 text,
// ≈67.6 MB with line ends), from the moment it starts to the moment it
// exits, with no control client, a bare `tmux -C` reader writing to
// /dev/null, a tmuxctl Client whose consumer drains the pane, and a
// tmuxctl Client that turned the pane's output off. MB/s is bytes of the
// file per second. The pane waits on `wait-for go-N` before it starts and
// signals `done-N` after cat returns; the benchmark execs both waits.
func BenchmarkFlood(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	file := filepath.Join(b.TempDir(), "flood.b64")
	gen := exec.Command("sh", "-c", `head -c 50000000 /dev/urandom | base64 > "$1"`, "sh", file)
	if out, err := gen.CombinedOutput(); err != nil {
		b.Fatalf("generate flood file: %v: %s", err, out)
	}
	st, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"none", "bare", "tmuxctl", "tmuxctl-off"} {
		b.Run(mode, func(b *testing.B) { benchFlood(b, mode, file, st.Size()) })
	}
}

func benchFlood(b *testing.B, mode, file string, size int64) {
	srv := tmuxtest.New(b)
	// A session that outlives the flood sessions keeps the server up.
	srv.Must("new-session", "-d", "-s", "keep", "-x", "200", "-y", "50", "sleep", "3600")
	serverPID, err := strconv.Atoi(strings.TrimSpace(srv.Must("display-message", "-p", "#{pid}")))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	var recv, lost int64
	var serverCPU, selfCPU, childCPU time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		sess := fmt.Sprintf("flood%d", i)
		goCh, doneCh := "go-"+sess, "done-"+sess
		script := `tmux -L "$1" wait-for "$2"; cat "$3"; tmux -L "$1" wait-for -S "$4"`
		pane := strings.TrimSpace(srv.Must("new-session", "-d", "-s", sess, "-x", "200", "-y", "50",
			"-P", "-F", "#{pane_id}", "--", "sh", "-c", script, "sh", srv.Socket, goCh, file, doneCh))

		children0 := benchRusage(syscall.RUSAGE_CHILDREN)
		var bare *exec.Cmd
		var bareIn io.WriteCloser
		var c *Client
		drained := make(chan struct{})
		switch mode {
		case "bare":
			bare = exec.Command("tmux", "-L", srv.Socket, "-f", os.DevNull, "-C", "attach-session", "-t", "="+sess)
			bare.Env = tmuxtest.Env()
			bare.SysProcAttr = childSysProcAttr()
			var err error
			bareIn, err = bare.StdinPipe() // stdin stays open: EOF would detach
			if err != nil {
				b.Fatal(err)
			}
			if err := bare.Start(); err != nil { // stdout is /dev/null
				b.Fatal(err)
			}
			benchWaitClient(b, srv, sess)
		case "tmuxctl", "tmuxctl-off":
			c = benchAttach(b, srv.Socket, sess)
			if mode == "tmuxctl-off" {
				if err := c.Pause(context.Background(), pane); err != nil {
					b.Fatal(err)
				}
			}
			ps := c.Pane(pane)
			go func() {
				defer close(drained)
				for {
					select {
					case <-ps.Ready():
					case <-c.Done():
						ch := ps.Take()
						recv += int64(len(ch.Data))
						if ch.Lost {
							lost++
						}
						return
					}
					ch := ps.Take()
					recv += int64(len(ch.Data))
					if ch.Lost {
						lost++
					}
				}
			}()
		}

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		server0, self0 := benchProcCPU(b, serverPID), benchRusage(syscall.RUSAGE_SELF)
		b.StartTimer()
		if _, err := benchTmux(ctx, srv.Socket, "wait-for", "-S", goCh); err != nil {
			b.Fatal(err)
		}
		if _, err := benchTmux(ctx, srv.Socket, "wait-for", doneCh); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		serverCPU += benchProcCPU(b, serverPID) - server0
		selfCPU += benchRusage(syscall.RUSAGE_SELF) - self0
		cancel()

		// The pane exits, so the session ends and its clients get %exit.
		switch {
		case c != nil:
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second):
				b.Fatalf("%s: client did not end with its session", mode)
			}
			<-drained
			c.Close()
		case bare != nil:
			bareIn.Close()
			waited := make(chan error, 1)
			go func() { waited <- bare.Wait() }()
			select {
			case <-waited:
			case <-time.After(30 * time.Second):
				bare.Process.Kill()
				<-waited
				b.Fatalf("bare tmux -C did not end with its session")
			}
		}
		childCPU += benchRusage(syscall.RUSAGE_CHILDREN) - children0
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(perOp(serverCPU), "server-cpu-ms/op")
	b.ReportMetric(perOp(selfCPU), "go-cpu-ms/op")
	b.ReportMetric(perOp(childCPU), "child-cpu-ms/op")
	if mode == "tmuxctl" || mode == "tmuxctl-off" {
		b.ReportMetric(float64(recv)/float64(b.N), "recv-B/op")
		b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
	}
}

// benchRusage is the user+system CPU time of this process (RUSAGE_SELF)
// or of its reaped children (RUSAGE_CHILDREN).
func benchRusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchProcCPU is the user+system CPU time of a process from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func benchProcCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name may contain spaces: count fields after its ')'.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("short /proc/%d/stat: %q", pid, raw)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("bad /proc/%d/stat: %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// benchWaitClient waits until a client is attached to session (setup only,
// not timed).
func benchWaitClient(b *testing.B, srv *tmuxtest.Server, session string) {
	b.Helper()
	if !testenv.Until(10*time.Second, func() bool {
		out, err := srv.Cmd("list-clients", "-t", "="+session, "-F", "#{client_pid}")
		return err == nil && strings.TrimSpace(out) != ""
	}) {
		b.Fatalf("no client attached to %s", session)
	}
}

// BenchmarkServerDeathReport SIGKILLs the tmux server under an attached
// Client and measures the time until Done is closed (ms-to-Done, its mean;
// max-ms, the worst). ns/op is the whole cycle: start a server and a
// session, attach, kill, wait.
func BenchmarkServerDeathReport(b *testing.B) {
	srv := tmuxtest.New(b)
	var total, worst time.Duration
	for i := 0; i < b.N; i++ {
		srv.Must("new-session", "-d", "-s", "d", "sleep", "600")
		c := benchAttach(b, srv.Socket, "d")
		out, err := c.Run(context.Background(), "display-message -p '#{pid} #{socket_path}'")
		if err != nil || len(out) != 1 {
			b.Fatalf("display-message = %q, %v", out, err)
		}
		pidStr, sockPath, _ := strings.Cut(out[0], " ")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			b.Fatal("server death not reported within 10s")
		}
		d := time.Since(start)
		total += d
		worst = max(worst, d)
		c.Close()
		// A killed server leaves its socket behind; the next session
		// starts a fresh server on the same name.
		os.Remove(sockPath)
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms-to-Done")
	b.ReportMetric(float64(worst.Microseconds())/1e3, "max-ms")
}
