package orchestrator

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// The ssh side of a host: the master, what ssh's failures mean, the probe
// and the remote file writes (host.go keeps the connection's life).

// startMaster starts the ssh master and waits until it accepts
// multiplexed sessions (its LocalCommand prints readyLine) or fails.
func (h *remoteHost) startMaster(ctx context.Context) (*exec.Cmd, chan struct{}, error) {
	argv := append(h.sshBase(), "-M", "-N", "-S", h.ctlPath, "-o", "ControlPersist=no", "-o", "ExitOnForwardFailure=no",
		"-o", "PermitLocalCommand=yes", "-o", "LocalCommand=echo "+readyLine, h.spec.Dest)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = proc.DieWithParent()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stderr := &tailWriter{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, &HostError{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "ssh", Err: err,
			Msg: fmt.Sprintf("host %s: cannot run ssh: %v (install openssh-client)", h.spec.Name, err)}
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.TrimSpace(sc.Text()) == readyLine {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case ok := <-ready:
		if ok {
			return cmd, done, nil
		}
		<-done
		return nil, nil, sshError(h.spec, stderr.String(), cmd.ProcessState)
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return nil, nil, &HostError{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "timeout", Err: ctx.Err(),
			Msg: fmt.Sprintf("host %s (%s) did not answer in time over ssh: check `ssh -o BatchMode=yes %s true` (ssh said: %s)", h.spec.Name, h.spec.Dest, h.spec.Dest, clipLine(stderr.String()))}
	}
}

// sshError turns ssh's failure into a HostError that says what to do.
func sshError(spec tools.HostSpec, stderr string, st *os.ProcessState) *HostError {
	said := clipLine(stderr)
	e := &HostError{Host: spec.Name, Dest: spec.Dest, Reason: "ssh", Err: fmt.Errorf("ssh exited: %v: %s", st, said)}
	low := strings.ToLower(stderr)
	switch {
	case strings.Contains(low, "connection refused"):
		e.Reason = "refused"
		e.Msg = fmt.Sprintf("host %s (%s) refused the ssh connection: is sshd running there and is the port right? (ssh said: %s)", spec.Name, spec.Dest, said)
	case strings.Contains(low, "remote host identification has changed") || strings.Contains(low, "host key verification failed") || strings.Contains(low, "host key for"):
		e.Reason = "host-key"
		e.Msg = fmt.Sprintf("host %s (%s): ssh refused its host key (changed, or not known yet). If the machine was reinstalled, check its new key, remove the old one with `ssh-keygen -R <hostname>`, then run `ssh %s true` once to accept the new one (ssh said: %s)", spec.Name, spec.Dest, spec.Dest, said)
	case strings.Contains(low, "permission denied") || strings.Contains(low, "too many authentication failures"):
		e.Reason = "auth"
		e.Msg = fmt.Sprintf("host %s (%s) wants a password or a key passphrase, and termsprawl never answers prompts (ssh runs with BatchMode=yes): set up key login (`ssh-copy-id %s`) or load your key into ssh-agent (`ssh-add`), then check with `ssh -o BatchMode=yes %s true` (ssh said: %s)", spec.Name, spec.Dest, spec.Dest, spec.Dest, said)
	case strings.Contains(low, "could not resolve hostname") || strings.Contains(low, "name or service not known"):
		e.Reason = "resolve"
		e.Msg = fmt.Sprintf("host %s: the name in %q cannot be resolved (ssh said: %s)", spec.Name, spec.Dest, said)
	case strings.Contains(low, "timed out"):
		e.Reason = "timeout"
		e.Msg = fmt.Sprintf("host %s (%s): the ssh connection timed out (ssh said: %s)", spec.Name, spec.Dest, said)
	default:
		e.Msg = fmt.Sprintf("host %s (%s): ssh failed (%v): %s — check `ssh -o BatchMode=yes %s true`", spec.Name, spec.Dest, st, said, spec.Dest)
	}
	return e
}

// clipLine is ssh's stderr as one short line (the warnings it prints
// before the reason are kept: the reason is usually last).
func clipLine(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
	if len(s) > 400 {
		s = s[len(s)-400:]
		if i := strings.IndexByte(s, ' '); i >= 0 {
			s = s[i+1:]
		}
		s = "… " + s
	}
	if s == "" {
		return "nothing"
	}
	return s
}

// probeScript prints what the host has as key=value lines ($1: the ctl
// path asked for, $2: the remote dir asked for, $3: this orchestrator's
// origin, $4: the remote tmux socket) and, when the host has tmux, writes stdin (the tmux config) to
// the remote dir, made mode 0700.
const probeScript = `printf 'home=%s\n' "$HOME"; printf 'shell=%s\n' "$SHELL"; printf 'path=%s\n' "$PATH"
printf 'hostname=%s\n' "$(uname -n 2>/dev/null)"
c="$1"; [ -n "$c" ] || c=$(command -v termsprawlctl 2>/dev/null); if [ -n "$c" ] && [ -x "$c" ]; then printf 'ctl=%s\n' "$c"; fi
t=$(command -v tmux 2>/dev/null) || exit 0
printf 'tmux=%s\n' "$t"; printf 'tmuxv=%s\n' "$("$t" -V 2>&1)"
"$t" -L "$4" -f /dev/null has-session -t '=termsprawl-admin' 2>/dev/null && printf 'server=up\n'
case $HOME in /*) ;; *) [ -n "$2" ] || exit 0;; esac
d="$2"; [ -n "$d" ] || d="$HOME/.local/state/termsprawl/remote/$3"
umask 077
if mkdir -p "$d/sessions" "$d/agent-tools" && chmod 700 "$d" && cat > "$d/.tmux.conf.tmp" && mv -f "$d/.tmux.conf.tmp" "$d/tmux.conf"; then
  printf 'rdir=%s\n' "$d"
else
  printf 'rdirerr=%s\n' "$d"
fi`

// runProbe asks the host for its tmux, termsprawlctl, home, shell and
// PATH. No tmux is a HostError.
func (h *remoteHost) runProbe(ctx context.Context) (hostProbe, error) {
	q := tmuxctl.ShellQuote
	script := "set -- " + q(h.spec.Ctl) + " " + q(h.spec.RemoteDir) + " " + q(h.origin()) + " " + q(h.spec.RemoteSocket()) + "\n" + probeScript
	out, err := h.exec(ctx, script, []byte(TmuxServerConf))
	if err != nil {
		return hostProbe{}, &HostError{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "ssh", Err: err,
			Msg: fmt.Sprintf("host %s: cannot run commands there: %v", h.spec.Name, err)}
	}
	p, err := parseProbe(h.spec.Name, h.spec.Dest, string(out))
	if err != nil {
		return p, err
	}
	if h.spec.Ctl != "" && p.ctl == "" {
		h.o.log.Warn("termsprawlctl not found on the host at the given --host-ctl path: its agents cannot call termsprawl", "host", h.spec.Name, "ctl", h.spec.Ctl)
	} else if p.ctl == "" {
		h.o.log.Warn("no termsprawlctl on the host's PATH: its agents get no TERMSPRAWL_CTL (install it there or give --host-ctl NAME=PATH)", "host", h.spec.Name)
	}
	return p, nil
}

// writeFileScript writes stdin to dir/name atomically (temp file, mv),
// creating dir (and dir/sessions) mode 0700, files 0600.
func writeFileScript(dir, name string) string {
	d := tmuxctl.ShellQuote(dir)
	f := tmuxctl.ShellQuote(dir + "/" + name)
	tmp := tmuxctl.ShellQuote(dir + "/." + filepath.Base(name) + ".tmp")
	if strings.Contains(name, "/") {
		tmp = tmuxctl.ShellQuote(dir + "/" + filepath.Dir(name) + "/." + filepath.Base(name) + ".tmp")
	}
	return "umask 077 && mkdir -p " + d + "/sessions " + d + "/agent-tools && chmod 700 " + d + " && cat > " + tmp + " && mv -f " + tmp + " " + f
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = w.buf[len(w.buf)-w.max:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

var _ io.Writer = (*tailWriter)(nil)

// parseProbe reads probeScript's key=value lines; what is missing or
// reported wrong is a HostError.
func parseProbe(name, dest, out string) (hostProbe, error) {
	var p hostProbe
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "home":
			p.home = v
		case "shell":
			p.shell = v
		case "path":
			p.path = v
		case "hostname":
			p.hostname = v
		case "tmux":
			p.tmux = v
		case "tmuxv":
			p.tmuxVersion = v
		case "ctl":
			p.ctl = v
		case "rdir":
			p.rdir = v
		case "server":
			p.serverUp = v == "up"
		case "rdirerr":
			return p, &HostError{Host: name, Dest: dest, Reason: "remote-dir",
				Msg: fmt.Sprintf("host %s: cannot make %s or write its tmux.conf: check the permissions there, or set remote_dir for it in %s", name, v, tools.HostsFile)}
		}
	}
	if p.tmux == "" {
		return p, &HostError{Host: name, Dest: dest, Reason: "no-tmux",
			Msg: fmt.Sprintf("host %s (%s) has no tmux on its PATH (%s): install tmux there (e.g. apt-get install tmux)", name, dest, p.path)}
	}
	if p.rdir == "" {
		return p, &HostError{Host: name, Dest: dest, Reason: "ssh",
			Msg: fmt.Sprintf("host %s: its $HOME is %q, not an absolute path: set remote_dir for it in %s", name, p.home, tools.HostsFile)}
	}
	return p, nil
}
