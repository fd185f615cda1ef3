package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// HostsFile is <state>/hosts.json: the machines termsprawl drives over ssh
// (CONTRACT §17). `termsprawl up --host NAME=DEST` adds to it.
const HostsFile = "hosts.json"

// HostSpec is one machine of hosts.json.
type HostSpec struct {
	// Name is how launches and listings name the host.
	Name string `json:"name"`
	// Dest is the ssh destination ([user@]host, or an alias of the
	// user's ssh config).
	Dest string `json:"dest"`
	// Ctl is the absolute path of termsprawlctl on the host; empty: the
	// remote PATH's.
	Ctl string `json:"ctl,omitempty"`
	// SSHOptions are extra ssh arguments placed before Dest (for example
	// ["-p", "2222"] or ["-F", "/path/to/ssh_config"]).
	SSHOptions []string `json:"ssh_options,omitempty"`
	// Socket is the remote private tmux server's name (tmux -L); empty:
	// one named for the orchestrator (OwnedSocket), so two orchestrators
	// that share a host and user never share a server (CONTRACT §23).
	Socket string `json:"socket,omitempty"`
	// RemoteDir is the directory on the host for the node session files,
	// endpoint.json and tmux.conf; empty: under the remote user's
	// ~/.local/state/termsprawl/remote/.
	RemoteDir string `json:"remote_dir,omitempty"`
	// LaunchElsewhere is the operator's grant to the agents running on
	// this host: they may launch on this machine ("local") and on other
	// hosts, and read and drive the nodes there as any agent may. Without
	// it (the default) an agent on this host is kept to its realm, the
	// host: its launches land there whatever it asks, and the nodes of
	// other hosts and of this machine are out of its reach. `termsprawl up
	// --host-allow-elsewhere NAME` sets it.
	LaunchElsewhere bool `json:"launch_elsewhere,omitempty"`
}

// LocalHost is the name a launch gives for this machine (the
// orchestrator's own) when its caller's default is another host.
const LocalHost = "local"

// RemoteSocket is the host's tmux socket name: Socket, else the
// orchestrator's own (OwnedSocket; the orchestrator fills Socket in when
// it starts the host, so its own specs always name it).
func (h HostSpec) RemoteSocket() string {
	if h.Socket == "" {
		return DefaultSocket
	}
	return h.Socket
}

// HostOrigin names the orchestrator of stateDir on the machines it drives:
// a hash of this machine's name and the state dir's absolute path. It is
// the same across restarts of that orchestrator and differs between two
// orchestrators (other state dirs, or other machines).
func HostOrigin(stateDir string) string {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	name, _ := os.Hostname()
	sum := sha256.Sum256([]byte(name + "\x00" + stateDir))
	return hex.EncodeToString(sum[:6])
}

// OwnedSocket is the remote tmux socket of the orchestrator of stateDir
// on host h: Socket when hosts.json names one (the user's choice), else
// "termsprawl-o<origin>", which belongs to that orchestrator alone: its
// listings, adoptions and closes on the host see no other orchestrator's
// sessions, and node ids cannot collide there. (The "o" keeps the name
// from looking like a local shard's "termsprawl-N".)
func (h HostSpec) OwnedSocket(stateDir string) string {
	if h.Socket != "" {
		return h.Socket
	}
	return DefaultSocket + "-o" + HostOrigin(stateDir)
}

type hostsDoc struct {
	Hosts []HostSpec `json:"hosts"`
}

var hostNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,31}$`)

// ErrHost is wrapped by every refusal of a host definition.
var ErrHost = errors.New("bad host")

// CheckHost refuses a host definition that cannot be used.
func CheckHost(h HostSpec) error {
	switch {
	case !hostNameRE.MatchString(h.Name):
		return fmt.Errorf("%w: name %q: use letters, digits, - and _ (at most 32, starting with a letter or digit)", ErrHost, h.Name)
	case strings.EqualFold(h.Name, LocalHost):
		return fmt.Errorf("%w: name %q is reserved for this machine: pick another name", ErrHost, h.Name)
	case h.Dest == "" || strings.HasPrefix(h.Dest, "-") || strings.ContainsAny(h.Dest, " \t\n\x00'\"`$;&|<>\\"):
		return fmt.Errorf("%w: host %s: destination %q is not an ssh destination ([user@]host or an ssh config alias)", ErrHost, h.Name, h.Dest)
	case looksLocalPath(h.Dest):
		return fmt.Errorf("%w: host %s: destination %q is a path on this machine, not an ssh destination: give [user@]machine or an ssh config alias (nodes on this machine need no --host)", ErrHost, h.Name, h.Dest)
	case h.Socket != "" && !ValidNodeID(h.Socket):
		return fmt.Errorf("%w: host %s: socket %q: use letters, digits, - and _", ErrHost, h.Name, h.Socket)
	case h.Ctl != "" && !filepath.IsAbs(h.Ctl):
		return fmt.Errorf("%w: host %s: ctl %q is not an absolute path on the host", ErrHost, h.Name, h.Ctl)
	case h.RemoteDir != "" && !filepath.IsAbs(h.RemoteDir):
		return fmt.Errorf("%w: host %s: remote_dir %q is not an absolute path on the host", ErrHost, h.Name, h.RemoteDir)
	}
	for _, o := range h.SSHOptions {
		if strings.ContainsRune(o, 0) {
			return fmt.Errorf("%w: host %s: an ssh option holds a NUL byte", ErrHost, h.Name)
		}
	}
	return nil
}

// looksLocalPath reports whether dest reads as a file path rather than an
// ssh destination ([user@]host, an alias, or an ssh:// URI).
func looksLocalPath(dest string) bool {
	if strings.HasPrefix(dest, "ssh://") {
		return false
	}
	return strings.ContainsRune(dest, '/') || strings.HasPrefix(dest, "~") || dest == "." || dest == ".."
}

// HostsPath is <state>/hosts.json.
func HostsPath(stateDir string) string { return filepath.Join(stateDir, HostsFile) }

// ReadHosts reads hosts.json; a missing file is no hosts. Every entry is
// checked and names must be unique.
func ReadHosts(stateDir string) ([]HostSpec, error) {
	path := HostsPath(stateDir)
	b, err := ReadFileBounded(path, MaxStateFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc hostsDoc
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: parse %s: %v (it holds {\"hosts\":[{\"name\":…,\"dest\":…}]})", ErrHost, path, err)
	}
	seen := map[string]bool{}
	for _, h := range doc.Hosts {
		if err := CheckHost(h); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if seen[h.Name] {
			return nil, fmt.Errorf("%w: %s names host %q twice: keep one", ErrHost, path, h.Name)
		}
		seen[h.Name] = true
	}
	return doc.Hosts, nil
}

// WriteHosts writes hosts.json atomically.
func WriteHosts(stateDir string, hosts []HostSpec) error {
	if hosts == nil {
		hosts = []HostSpec{}
	}
	return WriteJSONAtomic(HostsPath(stateDir), hostsDoc{Hosts: hosts})
}

// ParseHostFlag reads NAME=DEST (the --host flag).
func ParseHostFlag(s string) (HostSpec, error) {
	name, dest, ok := strings.Cut(s, "=")
	if !ok {
		return HostSpec{}, fmt.Errorf("%w: --host %q: write NAME=DEST, e.g. --host big=me@big.example", ErrHost, s)
	}
	h := HostSpec{Name: name, Dest: dest}
	return h, CheckHost(h)
}

// MergeHosts adds the hosts given on the command line to those of
// hosts.json and sets ctl paths (NAME=PATH, --host-ctl). A name given
// twice with different destinations, or already in the file with another
// destination, collides. It reports whether the result differs from file.
func MergeHosts(file, flags []HostSpec, ctls map[string]string) ([]HostSpec, bool, error) {
	out := append([]HostSpec(nil), file...)
	index := map[string]int{}
	for i, h := range out {
		index[h.Name] = i
	}
	fromFlag := map[string]string{}
	changed := false
	for _, h := range flags {
		if err := CheckHost(h); err != nil {
			return nil, false, err
		}
		if d, ok := fromFlag[h.Name]; ok && d != h.Dest {
			return nil, false, fmt.Errorf("%w: host name %q is given twice (%s and %s): one name per machine", ErrHost, h.Name, d, h.Dest)
		}
		fromFlag[h.Name] = h.Dest
		if i, ok := index[h.Name]; ok {
			if out[i].Dest != h.Dest {
				return nil, false, fmt.Errorf("%w: host name %q is already %s in %s: pick another name, or edit that file", ErrHost, h.Name, out[i].Dest, HostsFile)
			}
			continue
		}
		index[h.Name] = len(out)
		out = append(out, h)
		changed = true
	}
	for name, ctl := range ctls {
		i, ok := index[name]
		if !ok {
			return nil, false, fmt.Errorf("%w: --host-ctl names host %q, which is not defined: add --host %s=DEST", ErrHost, name, name)
		}
		h := out[i]
		h.Ctl = ctl
		if err := CheckHost(h); err != nil {
			return nil, false, err
		}
		if out[i].Ctl != ctl {
			out[i].Ctl = ctl
			changed = true
		}
	}
	return out, changed, nil
}

// SSHOptions are the options termsprawl adds to every ssh it runs for a
// host: never a prompt (BatchMode), keepalives so a dead link is noticed
// in about 10 s, a bounded connect.
var SSHOptions = []string{"-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2", "-o", "ConnectTimeout=10"}

// HostAttachArgv is the command that attaches this terminal to a remote
// node: ssh -t to the host, tmux attach there (a person may answer a
// prompt here, so no BatchMode). Every remote word is a safe word
// (CheckHost and node ids), so the remote shell takes them as they are.
func HostAttachArgv(h HostSpec, session string, readOnly bool) []string {
	argv := []string{"ssh", "-t"}
	argv = append(argv, h.SSHOptions...)
	argv = append(argv, h.Dest, "--", "tmux", "-L", h.RemoteSocket(), "attach-session")
	if readOnly {
		argv = append(argv, "-r")
	}
	return append(argv, "-t", "="+session)
}

// HostKillServerArgv ends the host's tmux server h.Socket (down --all):
// ssh in BatchMode, tmux kill-server there.
func HostKillServerArgv(h HostSpec) []string {
	argv := append([]string{"ssh"}, SSHOptions...)
	argv = append(argv, h.SSHOptions...)
	return append(argv, h.Dest, "--", "tmux", "-L", h.RemoteSocket(), "kill-server")
}
