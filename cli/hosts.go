package cli

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/termsprawl/termsprawl/tools"
)

// Hosts on the human's side: `up --host` into hosts.json, the HOST column
// of ls, attach over ssh (CONTRACT §17).

// resolveHosts merges up's --host and --host-ctl flags into
// <state>/hosts.json (written when they add something) and returns the
// hosts to drive. A name that collides is an error naming both.
func (h *human) resolveHosts() ([]tools.HostSpec, error) {
	file, err := tools.ReadHosts(h.stateDir)
	if err != nil {
		return nil, err
	}
	var flags []tools.HostSpec
	for _, f := range h.upOpts.Hosts {
		spec, err := tools.ParseHostFlag(f)
		if err != nil {
			return nil, err
		}
		flags = append(flags, spec)
	}
	ctls := map[string]string{}
	for _, f := range h.upOpts.HostCtls {
		name, path, ok := strings.Cut(f, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("%w: --host-ctl %q: write NAME=/absolute/path/to/termsprawlctl", tools.ErrHost, f)
		}
		ctls[name] = path
	}
	hosts, changed, err := tools.MergeHosts(file, flags, ctls)
	if err != nil {
		return nil, err
	}
	for _, name := range h.upOpts.HostAllowElsewhere {
		found := false
		for i := range hosts {
			if hosts[i].Name == name {
				found = true
				if !hosts[i].LaunchElsewhere {
					hosts[i].LaunchElsewhere, changed = true, true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: --host-allow-elsewhere %q: no such host; add it with --host %s=DEST", tools.ErrHost, name, name)
		}
	}
	if changed {
		if err := tools.EnsureStateDir(h.stateDir); err != nil {
			return nil, err
		}
		if err := tools.WriteHosts(h.stateDir, hosts); err != nil {
			return nil, fmt.Errorf("save hosts: %w", err)
		}
	}
	return hosts, nil
}

func hasHosts(rows []tools.NodeInfo) bool {
	for _, r := range rows {
		if r.Host != "" {
			return true
		}
	}
	return false
}

// lsWithHosts is ls's table with a HOST column (only when some node is on
// another machine, so the usual table stays as it was).
func (h *human) lsWithHosts(tw *tabwriter.Writer, rows []tools.NodeInfo) int {
	fmt.Fprintln(tw, "ID\tNAME\tHOST\tKIND\tSTATE\tSANDBOX\tCOST\tCOMMAND\tOWNER\tSIZE\tCLIENTS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%dx%d\t%d\n", vis(r.Terminal), dash(r.Name), dash(r.Host), dash(kindText(r)), dash(stateText(r)), sandboxText(r), costText(r.Usage), dash(clipText(shellJoin(r.Command), 40)), dash(r.Owner), r.Columns, r.Rows, r.Clients)
	}
	_ = tw.Flush()
	return ExitOK
}

// attachRemote attaches this terminal to a node on another machine: ssh
// -t to it, tmux attach there.
func (h *human) attachRemote(n tools.NodeInfo, readOnly bool) int {
	hosts, err := tools.ReadHosts(h.stateDir)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	for _, spec := range hosts {
		if spec.Name != n.Host {
			continue
		}
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			fmt.Fprintf(h.stderr, "%s: ssh is not on PATH: install openssh-client (%v)\n", h.prefix(), err)
			return ExitNo
		}
		spec.Socket = cmp.Or(n.TmuxSocket, spec.OwnedSocket(h.stateDir))
		return h.execAttach(ssh, tools.HostAttachArgv(spec, "ts-"+n.Terminal, readOnly))
	}
	fmt.Fprintf(h.stderr, "%s: node %s is on host %s, which is not in %s: add it with `termsprawl up --host %s=DEST`\n", h.prefix(), n.Terminal, n.Host, tools.HostsPath(h.stateDir), n.Host)
	return ExitNo
}

// remoteNodeText is doctor's line about a node on another machine.
func remoteNodeText(r tools.NodeInfo) string {
	switch r.Status {
	case tools.StatusUnreachable:
		return fmt.Sprintf("on host %s, which is unreachable now: its program keeps running there and termsprawl reconnects by itself", r.Host)
	case tools.StatusExited:
		return fmt.Sprintf("on host %s: %s (`termsprawl snapshot %s` shows its last screen, `termsprawl kill %s` closes it)", r.Host, statusText(r), r.Terminal, r.Terminal)
	}
	return fmt.Sprintf("tmux session ts-%s on host %s (socket %s) alive (%s)", r.Terminal, r.Host, r.TmuxSocket, statusText(r))
}

// killRemoteServers is `down --all` on the hosts: for each host that had
// nodes, the orchestrator's own tmux server there (its socket is named
// for this orchestrator, CONTRACT §23) is ended over ssh; another
// orchestrator's server on the same host and user is never touched.
func (h *human) killRemoteServers(remote map[string]string) int {
	if len(remote) == 0 {
		return ExitOK
	}
	specs, err := tools.ReadHosts(h.stateDir)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	code := ExitOK
	for _, spec := range specs {
		socket, ok := remote[spec.Name]
		if !ok {
			continue
		}
		spec.Socket = socket
		argv := tools.HostKillServerArgv(spec)
		ctx, cancel := context.WithTimeout(h.ctx, 2*downTimeout)
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		cancel()
		text := strings.TrimSpace(string(out))
		switch {
		case err == nil:
			fmt.Fprintf(h.stdout, "ended every node on host %s (its tmux server on socket %s)\n", spec.Name, socket)
		case strings.Contains(text, "no server running") || strings.Contains(text, "error connecting to"):
		default:
			fmt.Fprintf(h.stderr, "%s: host %s: %s: %v: %s (its nodes keep running there)\n", h.prefix(), vis(spec.Name), vis(shellJoin(argv)), err, tools.VisibleText(text))
			code = ExitNo
		}
	}
	return code
}
