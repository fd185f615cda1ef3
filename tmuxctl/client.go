package tmuxctl

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxenv"
)

// Config describes one control client.
type Config struct {
	// Tmux is the tmux binary; default "tmux" from PATH.
	Tmux string
	// Socket is the private server's socket name (tmux -L). Required: the
	// user's default server is never used.
	Socket string
	// ConfigFile is passed as tmux -f; default /dev/null so that the
	// user's ~/.tmux.conf never changes what the orchestrator sees.
	ConfigFile string
	// Args is the command the client starts with, for example
	// {"attach-session", "-t", "=ts-a"} or {"new-session", "-A", "-s", "x"}.
	Args []string
	// Env is added to the child's environment (TMUX and TMUX_PANE are
	// always removed so the client works from inside tmux).
	Env []string
	// PaneBacklog bounds undelivered output per pane (DefaultPaneBacklog).
	PaneBacklog int
	// CloseTimeout is how long Close waits for the child to exit before it
	// kills it (default 2s).
	CloseTimeout time.Duration
	// Prefix runs tmux through another program, for example
	// {"ssh", "-o", "BatchMode=yes", "DEST", "--"} for a tmux server on
	// another machine: the child is Prefix[0] with Prefix[1:], then the
	// tmux argv. With ShellQuote the tmux argv is passed as words quoted
	// for a POSIX shell (ssh joins its arguments into one remote shell
	// command line).
	Prefix     []string
	ShellQuote bool
}

// Argv is the child's argv for cfg: [tmux -L SOCKET -f CONF -C ARGS…],
// behind Prefix when one is set.
func (cfg Config) Argv() []string {
	argv := append([]string{cfg.Tmux, "-L", cfg.Socket, "-f", cfg.ConfigFile, "-C"}, cfg.Args...)
	return PrefixArgv(cfg.Prefix, cfg.ShellQuote, argv)
}

// PrefixArgv puts argv behind prefix (quoting each word for a POSIX shell
// when shellQuote is set); with no prefix it returns argv.
func PrefixArgv(prefix []string, shellQuote bool, argv []string) []string {
	if len(prefix) == 0 {
		return argv
	}
	out := append([]string(nil), prefix...)
	for _, a := range argv {
		if shellQuote {
			a = ShellQuote(a)
		}
		out = append(out, a)
	}
	return out
}

// CommandError is a command that tmux answered with %error.
type CommandError struct {
	Command string // the line that was sent
	Index   int    // which command of the line failed (0 for Run)
	Message string // tmux's own words
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("tmux command %q failed: %s", e.Command, e.Message)
}

// ExitError is why a client ended: the %exit reason tmux gave, what it
// wrote on stderr, or that the stream ended without %exit.
type ExitError struct {
	Reason string // the %exit reason, "" when tmux gave none
	Stderr string
	NoExit bool // the stream ended without %exit (the process died)
	Closed bool // ended by Close
}

func (e *ExitError) Error() string {
	var why string
	switch {
	case e.Closed:
		why = "closed"
	case e.NoExit:
		why = "control stream ended without %exit (tmux server or client killed)"
	case e.Reason != "":
		why = e.Reason
	default:
		why = "detached (session closed, client detached or server stopped)"
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		why += ": " + s
	}
	return "tmux control client ended: " + why
}

// ErrClosed is wrapped by the errors of calls made on a client that has
// ended; errors.As(err, **ExitError) says why.
var ErrClosed = errors.New("tmux control client is not running")

// Client is one `tmux -C` child process and its stream. All methods are
// safe for concurrent use.
type Client struct {
	cfg    Config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer

	done    chan struct{} // closed when the stream ended and the process is reaped
	started chan error    // the start command's outcome, once
	// introduced: tmux answered the start command (the client is set up).
	introduced atomic.Bool
	closing    chan struct{} // closed by Close
	closeMu    sync.Once
	exitedCh   chan struct{} // closed when cmd.Wait returned

	// mu guards the client's shared state: pending (requests awaiting
	// replies, in the order their lines were queued), outbox (bytes for
	// stdin not yet taken by the writer, in that same order), syncSeq,
	// err, panes and unpaired. It is held only for short sections that
	// never block: never during a write to tmux's stdin and never while
	// waiting on a consumer, because the reader takes it for every %output
	// line and must keep draining tmux (tmux 3.3a stops reading our stdin
	// while its stdout is not drained).
	mu       sync.Mutex
	pending  []*request
	outbox   []byte // queued lines, written by whoever holds wmu
	err      *ExitError
	panes    map[string]*PaneStream
	unpaired int // replies that arrived with nothing pending (should stay 0)

	// wmu is the writer lock: it guards writes to stdin (only its holder
	// writes) and writeHook. Its holder takes the outbox under mu, lets go
	// of mu, and writes; lines reach tmux in the order they were queued,
	// which is the order of pending, so replies (tmux answers in order)
	// pair up. It is only ever taken with TryLock (see writeQueued), and
	// mu may be taken while holding it, never the other way round.
	wmu       sync.Mutex
	writeHook func([]byte) // tests only: called by the writer before each write

	syncBase string // unique prefix of this client's sync markers
	syncSeq  uint64

	evMu    sync.Mutex // guards evQueue
	evQueue []Event
	evReady chan struct{} // capacity 1
	events  chan Event
}

type request struct {
	line string
	want int // how many reply blocks the line's own commands produce
	// sync is the marker printed by a command queued on its own line after
	// a line that makes tmux insert commands (source-file, if-shell,
	// run-shell -C). Those commands answer with blocks of their own, with
	// the same flags as ours and between our line's blocks and the next
	// line's, and nothing tells them apart: so every block after this
	// line's own replies, up to the marker's, belongs to this request.
	sync     string
	ownDone  bool              // the line's own replies are complete
	replies  []reply           // the line's own replies, in order
	inserted []reply           // blocks of commands tmux inserted (with sync only)
	stray    []string          // lines outside any block while inserted commands ran (config parse errors)
	marks    map[string]uint64 // pane output totals when the line's own replies ended
	done     chan struct{}
	err      error
}

// Start runs tmux in control mode with cfg.Args and waits for tmux's
// answer to that command. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Socket == "" {
		return nil, fmt.Errorf("start tmux control client: no socket name (refusing to use the default tmux server)")
	}
	if len(cfg.Args) == 0 {
		return nil, fmt.Errorf("start tmux control client: no start command")
	}
	if cfg.Tmux == "" {
		cfg.Tmux = "tmux"
	}
	if cfg.ConfigFile == "" {
		cfg.ConfigFile = os.DevNull
	}
	if cfg.PaneBacklog <= 0 {
		cfg.PaneBacklog = DefaultPaneBacklog
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 2 * time.Second
	}
	argv := cfg.Argv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(clientEnv(os.Environ()), cfg.Env...)
	cmd.SysProcAttr = childSysProcAttr()
	c := &Client{
		cfg:      cfg,
		cmd:      cmd,
		stderr:   &tailBuffer{max: 4096},
		done:     make(chan struct{}),
		started:  make(chan error, 1),
		closing:  make(chan struct{}),
		exitedCh: make(chan struct{}),
		panes:    map[string]*PaneStream{},
		syncBase: newSyncBase(),
		evReady:  make(chan struct{}, 1),
		events:   make(chan Event),
	}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start tmux control client: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start tmux control client: %w", err)
	}
	c.stdin = stdin
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tmux control client: %w", err)
	}
	go c.readLoop(stdout)
	go c.pumpEvents()
	select {
	case err := <-c.started:
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start tmux control client %s: %w", strings.Join(cfg.Args, " "), err)
		}
		c.introduced.Store(true)
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("start tmux control client: %w", ctx.Err())
	}
}

// clientEnvNames is the environment a tmux -C child keeps: each variable
// is one more message in the client's introduction to the server, and the
// server (update-environment "") uses none but what finds the socket and
// the locale. See docs/TMUX-CRASHES.md.
var clientEnvNames = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMUX_TMPDIR", "TMPDIR"}

func clientEnv(env []string) []string {
	var out []string
	for _, kv := range tmuxenv.WithoutTmux(env) {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(clientEnvNames, k) {
			out = append(out, kv)
		}
	}
	return out
}

// Pause stops tmux sending a pane's output to this client (%pause);
// Continue resumes it. Output in between is gone: reseed. Pausing is how
// a pane's output is switched off: `refresh-client -A %P:off` and `:on`
// crash tmux 3.3a (docs/TMUX-CRASHES.md).
func (c *Client) Pause(ctx context.Context, pane string) error {
	_, err := c.Run(ctx, Command("refresh-client", "-A", pane+":pause"))
	return err
}

// introduceTimeout is how long Close waits for a client that never
// finished attaching before it kills it: tmux 3.3a crashes when a client
// disappears half introduced, so it is given time to leave by itself.
const introduceTimeout = 15 * time.Second

// PID returns the process id of the tmux -C child.
func (c *Client) PID() int { return c.cmd.Process.Pid }

// Done is closed when the client has ended and its process is reaped.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the client ended (an *ExitError), or nil while it runs.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return c.err
}

// Events delivers notifications in order. It is closed after the client
// ends and every queued event was delivered (or Close was called).
func (c *Client) Events() <-chan Event { return c.events }

// Pane returns the output stream of pane ("%3"), creating it if needed.
// Output that arrived before the first call is in it too.
func (c *Client) Pane(pane string) *PaneStream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paneLocked(pane)
}

func (c *Client) paneLocked(pane string) *PaneStream {
	p := c.panes[pane]
	if p == nil {
		p = newPaneStream(pane, c.cfg.PaneBacklog)
		c.panes[pane] = p
	}
	return p
}

// Run sends one command line and returns tmux's output lines. A %error
// reply is a *CommandError. The line is checked with CheckCommand first;
// nothing is sent if it fails. Cancelling ctx abandons the wait, not the
// command: tmux still runs it.
//
// Run returns the command's own reply, also for a command that makes tmux
// run more commands after it (source-file, if-shell, run-shell -C): their
// blocks are consumed and dropped, so the next command still gets its own
// reply. To apply a configuration file and learn about its errors, use
// SourceFile.
func (c *Client) Run(ctx context.Context, line string) ([]string, error) {
	if err := CheckCommand(line); err != nil {
		return nil, err
	}
	req, err := c.roundTrip(ctx, line, 1, insertsCommands(line))
	if err != nil {
		return nil, err
	}
	outs, err := req.outputs()
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// RunMany sends several commands on one line (joined with " ; "), so tmux
// runs them back to back with nothing in between, and returns each one's
// output. tmux stops at the first failing command: the result then holds
// the outputs of those that ran, and the error is a *CommandError naming
// the index of the one that failed. A command that makes tmux run more
// commands after it (source-file, if-shell, run-shell -C) may only be the
// last one, since what it runs would come in between.
func (c *Client) RunMany(ctx context.Context, cmds ...string) ([][]string, error) {
	outs, _, err := c.runMany(ctx, cmds)
	return outs, err
}

// RunManyMarked is RunMany that also returns, for every pane of this
// client, the PaneStream total (Chunk.Total) at the moment tmux ended the
// reply. tmux writes a reply block with no pane output inside it, so
// output up to the mark happened before the commands ran and output after
// it happened after: the race-free way to seed a screen from capture-pane
// and then apply only newer output.
func (c *Client) RunManyMarked(ctx context.Context, cmds ...string) ([][]string, map[string]uint64, error) {
	return c.runMany(ctx, cmds)
}

func (c *Client) runMany(ctx context.Context, cmds []string) ([][]string, map[string]uint64, error) {
	if len(cmds) == 0 {
		return nil, nil, fmt.Errorf("%w: no commands", ErrBadCommand)
	}
	for i, cmd := range cmds {
		if err := CheckCommand(cmd); err != nil {
			return nil, nil, err
		}
		if i < len(cmds)-1 && insertsCommands(cmd) {
			return nil, nil, fmt.Errorf("%w: %q makes tmux run more commands right after it; it may only be the last of a RunMany", ErrBadCommand, cmd)
		}
	}
	req, err := c.roundTrip(ctx, strings.Join(cmds, " ; "), len(cmds), insertsCommands(cmds[len(cmds)-1]))
	if err != nil {
		return nil, nil, err
	}
	outs, err := req.outputs()
	return outs, req.marks, err
}

// SourceFile applies a tmux configuration file (source-file) and returns
// once tmux has run every command in it. Unlike Run it reports the file's
// errors: the file cannot be read, a command of it failed (tmux goes on
// with the next one) or a line did not parse (tmux then runs none of the
// file). All of them come back in one *CommandError. A relative path is
// made absolute against the caller's working directory first; tmux
// expands glob patterns in it.
//
// tmux 3.3a answers source-file over control mode with its own empty block
// and then one block per command of the file, flagged exactly like the
// replies to our commands; parse errors come as bare lines between blocks.
// SourceFile (and Run) consume all of that up to a marker command queued
// right behind, so no block of the file is taken as the reply to the next
// command.
func (c *Client) SourceFile(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("source tmux config %q: %w", path, err)
	}
	line := Command("source-file", "--", abs)
	req, err := c.roundTrip(ctx, line, 1, true)
	if err != nil {
		return err
	}
	if _, err := req.outputs(); err != nil {
		return err
	}
	var problems []string
	for _, r := range req.inserted {
		if r.err {
			problems = append(problems, strings.Join(r.lines, "\n"))
		}
	}
	problems = append(problems, req.stray...)
	if len(problems) > 0 {
		return &CommandError{Command: line, Message: strings.Join(problems, "\n")}
	}
	return nil
}

// roundTrip queues line (and, with withSync, a marker command on a line of
// its own after it), writes what is queued and waits for the request to
// complete. On success the request's fields are final.
func (c *Client) roundTrip(ctx context.Context, line string, want int, withSync bool) (*request, error) {
	req := &request{line: line, want: want, done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	c.pending = append(c.pending, req)
	c.outbox = append(c.outbox, line...)
	c.outbox = append(c.outbox, '\n')
	if withSync {
		c.syncSeq++
		req.sync = c.syncBase + strconv.FormatUint(c.syncSeq, 10)
		c.outbox = append(c.outbox, "display-message -p "...)
		c.outbox = append(c.outbox, req.sync...)
		c.outbox = append(c.outbox, '\n')
	}
	c.mu.Unlock()
	c.writeQueued()
	select {
	case <-req.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for reply to %q: %w", line, ctx.Err())
	}
	if req.err != nil {
		return nil, req.err
	}
	return req, nil
}

// writeQueued writes the outbox to tmux's stdin unless another goroutine
// is already writing: that one writes what was queued meanwhile before it
// lets go of the writer lock, so a caller never waits for someone else's
// write (its context still ends its wait for the reply). mu is not held
// during a write, so the reader keeps draining tmux however long it takes.
func (c *Client) writeQueued() {
	for c.wmu.TryLock() {
		for {
			c.mu.Lock()
			buf := c.outbox
			c.outbox = nil
			c.mu.Unlock()
			if len(buf) == 0 {
				break
			}
			if c.writeHook != nil {
				c.writeHook(buf)
			}
			if _, err := c.stdin.Write(buf); err != nil {
				// tmux's stdin is gone (Close, or the child died): make
				// sure the child sees end of input; the reader then fails
				// every pending request when the stream ends.
				c.stdin.Close()
			}
		}
		c.wmu.Unlock()
		// A line queued after the last look at the outbox, by a caller
		// whose TryLock failed because we still held the lock, is ours
		// to write: look again.
		c.mu.Lock()
		empty := len(c.outbox) == 0
		c.mu.Unlock()
		if empty {
			return
		}
	}
}

// outputs returns the line's own outputs, or the outputs of the commands
// that ran and a *CommandError for the one that failed.
func (req *request) outputs() ([][]string, error) {
	outs := make([][]string, 0, len(req.replies))
	for i, r := range req.replies {
		if r.err {
			return outs, &CommandError{Command: req.line, Index: i, Message: strings.Join(r.lines, "\n")}
		}
		outs = append(outs, r.lines)
	}
	return outs, nil
}

// insertsCommands reports whether cmd may make tmux queue more commands
// right after it, each with a reply block indistinguishable from ours:
// source-file (the commands of the file), if-shell and run-shell -C (the
// command they run). tmux accepts a command's alias or any unambiguous
// prefix of its name; a false positive costs only one marker command.
func insertsCommands(cmd string) bool {
	name := firstWord(cmd)
	if name == "" {
		return false
	}
	switch name {
	case "source", "if", "run":
		return true
	}
	for _, full := range []string{"source-file", "if-shell", "run-shell"} {
		if strings.HasPrefix(full, name) {
			return true
		}
	}
	return false
}

// firstWord returns the first word of a command line as tmux's parser
// reads it (quotes removed, backslash escapes applied), enough to name
// the command.
func firstWord(line string) string {
	var b strings.Builder
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	var inSingle, inDouble bool
	for ; i < len(line); i++ {
		ch := line[i]
		switch {
		case inSingle:
			if ch == '\'' {
				inSingle = false
			} else {
				b.WriteByte(ch)
			}
		case inDouble:
			if ch == '"' {
				inDouble = false
			} else if ch == '\\' && i+1 < len(line) {
				i++
				b.WriteByte(line[i])
			} else {
				b.WriteByte(ch)
			}
		case ch == '\'':
			inSingle = true
		case ch == '"':
			inDouble = true
		case ch == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
		case ch == ' ' || ch == '\t' || ch == ';':
			return b.String()
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func newSyncBase() string {
	var b [8]byte
	rand.Read(b[:])
	return "tmuxctl-sync-" + hex.EncodeToString(b[:]) + "-"
}

// SetSize makes tmux count this client for sizing at columns×rows
// (refresh-client -C). Until then a control client does not size windows.
func (c *Client) SetSize(ctx context.Context, columns, rows int) error {
	_, err := c.Run(ctx, fmt.Sprintf("refresh-client -C %dx%d", columns, rows))
	return err
}

// SetPauseAfter asks tmux to pause a pane's output when this client is
// more than d behind it (refresh-client -f pause-after). Zero turns it off.
func (c *Client) SetPauseAfter(ctx context.Context, d time.Duration) error {
	flag := "!pause-after"
	if d > 0 {
		secs := int((d + time.Second - 1) / time.Second)
		flag = "pause-after=" + strconv.Itoa(secs)
	}
	_, err := c.Run(ctx, Command("refresh-client", "-f", flag))
	return err
}

// Continue resumes a pane that tmux paused (%pause). Output sent while it
// was paused is gone: reseed.
func (c *Client) Continue(ctx context.Context, pane string) error {
	_, err := c.Run(ctx, Command("refresh-client", "-A", pane+":continue"))
	return err
}

// Close ends the client: it closes tmux's stdin (a control client detaches
// on end of input), waits up to CloseTimeout for the process to exit,
// kills it if it has not, and reaps it. It always returns after the
// process is gone.
func (c *Client) Close() error {
	c.closeMu.Do(func() {
		close(c.closing)
		c.mu.Lock()
		if c.err == nil {
			c.err = &ExitError{Closed: true}
		}
		c.mu.Unlock()
		c.stdin.Close()
		wait := c.cfg.CloseTimeout
		if !c.introduced.Load() {
			wait = max(wait, introduceTimeout)
		}
		select {
		case <-c.exitedCh:
		case <-time.After(wait):
			c.cmd.Process.Kill()
		}
	})
	<-c.done
	return nil
}

// readLoop owns stdout: it reads to EOF whatever happens, so tmux never
// blocks writing to us, then reaps the process and fails what is pending.
func (c *Client) readLoop(stdout io.Reader) {
	br := newLineReader(stdout)
	var f framer
	s := &clientSink{c: c}
	var exit *Exit
	var long []byte
	for {
		chunk, err := br.readSlice()
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			line = trimEOL(line)
			f.line(line, s)
			if s.exit != nil && exit == nil {
				exit = s.exit
			}
		}
		long = long[:0:0]
		if br.buffered() == 0 {
			s.flush() // about to block in read: wake the consumers
		}
		if err != nil {
			break
		}
	}
	s.flush()
	waitErr := c.cmd.Wait()
	close(c.exitedCh)
	c.mu.Lock()
	if c.err == nil {
		ee := &ExitError{Stderr: c.stderr.String()}
		if exit != nil {
			ee.Reason = exit.Reason
		} else {
			ee.NoExit = true
		}
		if waitErr != nil && ee.Stderr == "" && exit == nil {
			ee.Stderr = waitErr.Error()
		}
		c.err = ee
	}
	pending := c.pending
	c.pending = nil
	exitErr := c.err
	c.mu.Unlock()
	for _, r := range pending {
		r.err = fmt.Errorf("%w: %w", ErrClosed, exitErr)
		close(r.done)
	}
	select {
	case c.started <- fmt.Errorf("%w: %w", ErrClosed, exitErr):
	default:
	}
	close(c.done)
	c.signalEvents()
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	return b
}

// clientSink routes framer output into the client.
type clientSink struct {
	c        *Client
	sawStart bool
	exit     *Exit
	dirty    []*PaneStream // panes with output not yet signalled
}

func (s *clientSink) output(pane, escaped []byte) {
	s.c.mu.Lock()
	p := s.c.panes[string(pane)] // no allocation for the lookup
	if p == nil {
		p = s.c.paneLocked(string(pane))
	}
	s.c.mu.Unlock()
	p.appendEscaped(escaped)
	if !p.dirty {
		p.dirty = true // owned by the reader goroutine
		s.dirty = append(s.dirty, p)
	}
}

// flush signals the panes that received output since the last flush. The
// reader calls it when it has consumed everything tmux had written, so a
// consumer wakes once per burst, not once per line.
func (s *clientSink) flush() {
	for _, p := range s.dirty {
		p.dirty = false
		p.signal()
	}
	s.dirty = s.dirty[:0]
}

func (s *clientSink) event(ev Event) {
	switch e := ev.(type) {
	case Exit:
		s.exit = &e
	case Pause:
		s.flush() // the consumer must see the output before the pause
		s.c.Pane(e.Pane).markPaused()
	}
	s.c.queueEvent(ev)
}

func (s *clientSink) reply(r reply) {
	c := s.c
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.unpaired++
		c.mu.Unlock()
		return
	}
	req := c.pending[0]
	var finished bool
	switch {
	case !req.ownDone:
		req.replies = append(req.replies, r)
		if r.err || len(req.replies) == req.want {
			// tmux stops a line at its first error; the marker is on a
			// line of its own and still runs.
			req.ownDone = true
			req.marks = make(map[string]uint64, len(c.panes))
			for id, p := range c.panes {
				req.marks[id] = p.Total()
			}
			finished = req.sync == ""
		}
	case !r.err && len(r.lines) == 1 && r.lines[0] == req.sync:
		finished = true
	default:
		req.inserted = append(req.inserted, r)
	}
	if finished {
		c.pending = c.pending[1:]
	}
	c.mu.Unlock()
	if finished {
		close(req.done)
	}
}

// stray is a line outside any block that is not protocol. tmux prints the
// parse errors of a sourced file that way, after the blocks of its
// commands: they belong to the request waiting for its marker.
func (s *clientSink) stray(line []byte) {
	c := s.c
	c.mu.Lock()
	if len(c.pending) > 0 {
		if req := c.pending[0]; req.sync != "" && req.ownDone {
			req.stray = append(req.stray, string(line))
		}
	}
	c.mu.Unlock()
}

// foreign handles blocks that are not replies to Run: the first one is
// tmux's answer to the start command; later ones (hooks) are dropped.
func (s *clientSink) foreign(r reply) {
	if s.sawStart {
		return
	}
	s.sawStart = true
	var err error
	if r.err {
		err = &CommandError{Command: strings.Join(s.c.cfg.Args, " "), Message: strings.Join(r.lines, "\n")}
	}
	s.c.started <- err
}

func (c *Client) queueEvent(ev Event) {
	c.evMu.Lock()
	c.evQueue = append(c.evQueue, ev)
	c.evMu.Unlock()
	c.signalEvents()
}

func (c *Client) signalEvents() {
	select {
	case c.evReady <- struct{}{}:
	default:
	}
}

func (c *Client) pumpEvents() {
	defer close(c.events)
	for {
		c.evMu.Lock()
		q := c.evQueue
		c.evQueue = nil
		c.evMu.Unlock()
		for _, ev := range q {
			select {
			case c.events <- ev:
			case <-c.closing:
				return
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.done:
			c.evMu.Lock()
			empty := len(c.evQueue) == 0
			c.evMu.Unlock()
			if empty {
				return
			}
		case <-c.evReady:
		case <-c.closing:
			return
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex // guards b
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[:copy(t.b, t.b[len(t.b)-t.max:])] // in place: String copies
	}
	return len(p), nil
}

// tailReadSize is the buffer ReadFrom reads stderr with: tmux writes a
// line or two there, if anything.
const tailReadSize = 512

// ReadFrom copies r into the tail with a tailReadSize buffer. os/exec
// copies a non-file Stderr from a pipe with io.Copy, which would otherwise
// hold a 32 KiB buffer for the client's whole life (one per tmux -C: 40
// KiB a node, docs/PERFORMANCE.md "Memory per node").
func (t *tailBuffer) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, tailReadSize)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.Write(buf[:n])
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
