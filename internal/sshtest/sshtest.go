// Package sshtest runs a real OpenSSH server for tests inside a network
// namespace the test creates: a veth pair whose two addresses (a random
// link-local /30) exist only in that pair, sshd started in the namespace
// on a temporary configuration, host key, user key and known_hosts, all in
// t.TempDir(). The remote side's tmux server gets a socket name unique to
// the test, so no test touches a real tmux server. Everything is removed
// at cleanup: the sshd processes (by pid), that tmux server (by name) and
// the namespace.
//
// The client side is an ssh_config (Fixture.Config) with one alias per
// situation: good, refused (nothing listens), notmux (an sshd whose
// sessions have a PATH without tmux), changed (known_hosts holds another
// key) and password (a key the server does not accept, so it asks for a
// password).
package sshtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// Fixture is one namespace with its sshd.
type Fixture struct {
	t            testing.TB
	NS           string // network namespace name
	LocalIP      string // this side of the pair
	HostIP       string // the namespace's side, where sshd listens
	Dir          string
	Config       string // ssh_config with the aliases
	RemoteSocket string // the remote tmux server's name (tmux -L)
	SSHDPids     []int
	blocked      bool
	tracked      []string // more remote tmux servers to end at cleanup (Track)
	frozen       bool     // Freeze stopped the namespace's processes
}

// Aliases of Config.
const (
	Good     = "tsgood"
	Refused  = "tsrefused"
	NoTmux   = "tsnotmux"
	Changed  = "tschanged"
	Password = "tspassword"
	// Few is an sshd that allows 4 sessions per connection (MaxSessions).
	Few = "tsfew"
	// OldTmux is an sshd whose sessions find a tmux that says it is 3.1c
	// first on their PATH (a wrapper of the real one).
	OldTmux = "tsoldtmux"
)

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// New creates the namespace and starts sshd in it, or skips (fails under
// TERMSPRAWL_REQUIRE_ALL) where that is not possible.
func New(t testing.TB) *Fixture {
	t.Helper()
	testenv.SkipShort(t, "ssh namespace test")
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		testenv.SkipOrFail(t, "sshd is not installed (apt-get install openssh-server openssh-client)")
	}
	testenv.LookPath(t, "ssh", "apt-get install openssh-client")
	testenv.LookPath(t, "ssh-keygen", "apt-get install openssh-client")
	testenv.LookPath(t, "ip", "apt-get install iproute2")
	testenv.LookPath(t, "tmux", "apt-get install tmux")
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "network namespaces need root (run the tests as root, as CI does)")
	}
	f := &Fixture{t: t, NS: "tsp-" + randHex(5), Dir: t.TempDir(), RemoteSocket: "tsr-" + randHex(6)}
	if err := run("ip", "netns", "add", f.NS); err != nil {
		testenv.SkipOrFail(t, "cannot create a network namespace here: %v", err)
	}
	t.Cleanup(f.cleanup)
	a, _ := rand.Int(rand.Reader, big.NewInt(254))
	k, _ := rand.Int(rand.Reader, big.NewInt(63))
	third, base := a.Int64()+1, k.Int64()*4
	f.LocalIP = fmt.Sprintf("169.254.%d.%d", third, base+1)
	f.HostIP = fmt.Sprintf("169.254.%d.%d", third, base+2)
	va, vb := "tsa"+randHex(4), "tsb"+randHex(4)
	ns := func(args ...string) error { return run("ip", append([]string{"netns", "exec", f.NS}, args...)...) }
	for _, step := range []func() error{
		func() error { return run("ip", "link", "add", va, "type", "veth", "peer", "name", vb) },
		func() error { return run("ip", "link", "set", vb, "netns", f.NS) },
		func() error { return run("ip", "addr", "add", f.LocalIP+"/30", "dev", va) },
		func() error { return run("ip", "link", "set", va, "up") },
		func() error { return ns("ip", "addr", "add", f.HostIP+"/30", "dev", vb) },
		func() error { return ns("ip", "link", "set", vb, "up") },
		func() error { return ns("ip", "link", "set", "lo", "up") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	f.keys()
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	// SHLVL=1: bash, started by sshd for each session, then skips the
	// user's ~/.bashrc, so this machine's dotfiles do not slow the "host"
	// (a clean host, as in CI).
	f.startSSHD(sshd, 22, "SetEnv SHLVL=1\n")
	f.startSSHD(sshd, 2222, "SetEnv PATH=/nonexistent SHLVL=1\n")
	f.startSSHD(sshd, 2223, "MaxSessions 4\nSetEnv SHLVL=1\n")
	old := f.path("oldtmux-bin")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'tmux 3.1c'; exit 0; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(old, "tmux"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	f.startSSHD(sshd, 2224, "SetEnv PATH="+old+":/usr/local/bin:/usr/bin:/bin SHLVL=1\n")
	f.writeClientConfig()
	return f
}

func (f *Fixture) path(name string) string { return filepath.Join(f.Dir, name) }

func (f *Fixture) keys() {
	for _, k := range []string{"hostkey", "otherhostkey", "userkey", "otherkey"} {
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", f.path(k)); err != nil {
			f.t.Fatal(err)
		}
	}
	pub := func(k string) string {
		b, err := os.ReadFile(f.path(k + ".pub"))
		if err != nil {
			f.t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	write := func(name, body string) {
		if err := os.WriteFile(f.path(name), []byte(body), 0o600); err != nil {
			f.t.Fatal(err)
		}
	}
	write("authorized_keys", pub("userkey")+"\n")
	write("known_hosts", fmt.Sprintf("%s %s\n[%s]:2222 %s\n[%s]:2223 %s\n", f.HostIP, pub("hostkey"), f.HostIP, pub("hostkey"), f.HostIP, pub("hostkey")))
	write("known_hosts_changed", fmt.Sprintf("%s %s\n", f.HostIP, pub("otherhostkey")))
}

func (f *Fixture) startSSHD(sshd string, port int, extra string) {
	conf := f.path(fmt.Sprintf("sshd_%d.conf", port))
	body := fmt.Sprintf(`ListenAddress %s:%d
HostKey %s
AuthorizedKeysFile %s
PidFile none
UsePAM no
StrictModes no
PermitRootLogin yes
PasswordAuthentication yes
KbdInteractiveAuthentication yes
PubkeyAuthentication yes
AllowTcpForwarding yes
LogLevel INFO
%s`, f.HostIP, port, f.path("hostkey"), f.path("authorized_keys"), extra)
	if !strings.Contains(extra, "MaxSessions") {
		body += "MaxSessions 10\n" // sshd's default: what hosts meet (CONTRACT §23)
	}
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", f.NS, sshd, "-D", "-e", "-f", conf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.SSHDPids = append(f.SSHDPids, cmd.Process.Pid)
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var seen []string
		sent := false
		for sc.Scan() {
			if !sent {
				seen = append(seen, sc.Text())
				if strings.Contains(sc.Text(), "Server listening on") {
					listening <- ""
					sent = true
				}
			}
		}
		if !sent {
			listening <- strings.Join(seen, "\n")
		}
		cmd.Wait()
	}()
	select {
	case msg := <-listening:
		if msg != "" {
			f.t.Fatalf("sshd on port %d did not start: %s", port, msg)
		}
	case <-time.After(20 * time.Second):
		f.t.Fatalf("sshd on port %d did not report listening", port)
	}
}

func (f *Fixture) writeClientConfig() {
	entry := func(alias string, port int, key, knownHosts string) string {
		return fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  IdentityFile %s\n  UserKnownHostsFile %s\n", alias, f.HostIP, port, f.path(key), f.path(knownHosts))
	}
	body := entry(Good, 22, "userkey", "known_hosts") +
		entry(Refused, 2999, "userkey", "known_hosts") +
		entry(NoTmux, 2222, "userkey", "known_hosts") +
		entry(Changed, 22, "userkey", "known_hosts_changed") +
		entry(Password, 22, "otherkey", "known_hosts") +
		entry(Few, 2223, "userkey", "known_hosts") +
		entry(OldTmux, 2224, "userkey", "known_hosts") +
		`Host *
  User root
  IdentitiesOnly yes
  IdentityAgent none
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  LogLevel ERROR
`
	f.Config = f.path("ssh_config")
	if err := os.WriteFile(f.Config, []byte(body), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// SSHOptions are the ssh arguments that select the fixture's config.
func (f *Fixture) SSHOptions() []string { return []string{"-F", f.Config} }

// RemoteDir is a directory "on the host" for one test's files (the
// namespace shares this machine's file system).
func (f *Fixture) RemoteDir(name string) string { return f.path("remote-" + name) }

// Tmux runs a command on the remote tmux server (its socket is a file on
// this machine's file system, reachable from outside the namespace).
func (f *Fixture) Tmux(args ...string) (string, error) {
	return f.TmuxOn(f.RemoteSocket, args...)
}

// TmuxOn runs a command on the remote tmux server of socket (one an
// orchestrator named for itself: see Track).
func (f *Fixture) TmuxOn(socket string, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", socket}, args...)...)
	cmd.Env = remoteTmuxEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// remoteTmuxEnv is the environment with which tmux finds the remote
// server's socket: as in an ssh session, no TMUX, TMUX_PANE or
// TMUX_TMPDIR.
func remoteTmuxEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=") || strings.HasPrefix(kv, "TMUX_TMPDIR=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Block makes the host unreachable from this side: an "unreachable"
// route for its address, so a connect fails at once (EHOSTUNREACH) and no
// packet goes anywhere. Unblock removes it (cleanup does too).
func (f *Fixture) Block() {
	f.t.Helper()
	if err := run("ip", "route", "add", "unreachable", f.HostIP+"/32"); err != nil {
		f.t.Fatal(err)
	}
	f.blocked = true
}

// Unblock undoes Block.
func (f *Fixture) Unblock() {
	f.t.Helper()
	if !f.blocked {
		return
	}
	if err := run("ip", "route", "del", "unreachable", f.HostIP+"/32"); err != nil {
		f.t.Fatal(err)
	}
	f.blocked = false
}

// Freeze stops (SIGSTOP) every process in the namespace — sshd, its
// sessions, the remote tmux server and its programs: a host that hangs.
// A connection attempt then hangs until ssh's ConnectTimeout, and a live
// connection until its keepalives give up. Thaw (and cleanup) resume them.
func (f *Fixture) Freeze() { f.signalNS(syscall.SIGSTOP); f.frozen = true }

// Thaw undoes Freeze.
func (f *Fixture) Thaw() {
	if f.frozen {
		f.signalNS(syscall.SIGCONT)
		f.frozen = false
	}
}

func (f *Fixture) signalNS(sig syscall.Signal) {
	out, err := exec.Command("ip", "netns", "pids", f.NS).Output()
	if err != nil {
		f.t.Fatalf("ip netns pids %s: %v", f.NS, err)
	}
	for _, w := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(w); err == nil {
			syscall.Kill(pid, sig)
		}
	}
}

// InNS runs a command inside the namespace.
func (f *Fixture) InNS(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", f.NS}, args...)...).CombinedOutput()
	return string(out), err
}

// Track makes cleanup end the remote tmux server of socket too (by that
// name only): for tests whose orchestrators name their remote servers
// themselves (a host spec without a socket).
func (f *Fixture) Track(socket string) { f.tracked = append(f.tracked, socket) }

func (f *Fixture) cleanup() {
	f.Thaw()
	for _, s := range f.tracked {
		f.TmuxOn(s, "kill-server")
		os.Remove(filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()), s))
	}
	if f.blocked {
		run("ip", "route", "del", "unreachable", f.HostIP+"/32")
	}
	f.Tmux("kill-server")
	os.Remove(filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()), f.RemoteSocket))
	for _, pid := range f.SSHDPids {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}
	// What ssh started in the namespace and outlived kill-server (a
	// server started again by an orchestrator reconnecting as the test
	// ended, a session's sshd and shell) ends with it: every process in
	// the namespace, and any tmux whose -L is the fixture's random socket
	// name or one it tracked.
	if out, err := exec.Command("ip", "netns", "pids", f.NS).Output(); err == nil {
		for _, s := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(s); err == nil && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for _, pid := range testenv.TmuxPids(func(s string, args []string) bool {
		return filepath.Base(args[0]) == "tmux" && (strings.HasPrefix(s, f.RemoteSocket) || slices.Contains(f.tracked, s))
	}) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := run("ip", "netns", "del", f.NS); err != nil {
		f.t.Logf("remove namespace %s: %v", f.NS, err)
	}
}
