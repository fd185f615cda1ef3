package toolserver

import (
	"slices"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// A node's realm is its host (CHOICES "trust model: a remote agent's
// realm"). An agent whose node runs on another host than the
// orchestrator's is kept to that host unless the operator granted the host
// more (hosts.json launch_elsewhere): its launches land on its host, and
// the nodes of this machine and of other hosts are neither read nor
// driven by it (nor listed to it). An agent on this machine is not kept
// (it already runs beside the orchestrator's state); neither is the
// operator.

// realm is the host the caller's node runs on ("" this machine) and
// whether the caller is kept to it.
func (c *call) realm() (host string, confined bool) {
	if c.caller.Role == tools.RoleOperator {
		return "", false
	}
	m, ok := c.s.eng.hosts.Meta(c.caller.Node)
	if !ok || m.Host == "" {
		return "", false
	}
	return m.Host, !c.s.eng.hosts.HostGrantsElsewhere(m.Host)
}

// hostLabel names a host in messages.
func hostLabel(h string) string {
	if h == "" {
		return "this machine (" + tools.LocalHost + ")"
	}
	return "host " + h
}

// launchRealm settles where a launch runs (realmHost).
func (c *call) launchRealm(spec *orchestrator.LaunchSpec) error {
	h, err := c.realmHost(spec.Host)
	spec.Host = h
	return err
}

// realmHost is the host a launch asking for host runs on ("" this
// machine): "local" is this machine; an agent on another host launches
// there by default, and elsewhere only with the operator's grant.
func (c *call) realmHost(host string) (string, error) {
	mine, confined := c.realm()
	explicitLocal := host == tools.LocalHost
	if explicitLocal {
		host = ""
	}
	if mine == "" {
		return host, nil
	}
	if host == "" && !explicitLocal {
		return mine, nil // a node's launches stay on its host
	}
	if confined && host != mine {
		return "", tools.Errorf(tools.KindForbidden, "node %q runs on host %s and may launch only there, not on %s: the operator can allow it with launch_elsewhere for host %s in hosts.json (termsprawl up --host-allow-elsewhere %s)",
			c.caller.Node, mine, hostLabel(host), mine, mine).WithDetails("host", mine)
	}
	return host, nil
}

// explicitHost is host as a launch names it after realmHost settled it:
// "local" for this machine, so that launchFor does not move it back to
// the caller's host.
func explicitHost(host string) string {
	if host == "" {
		return tools.LocalHost
	}
	return host
}

// inRealm refuses a confined caller a node outside its host.
func (c *call) inRealm(id string) error {
	host, confined := c.realm()
	if !confined {
		return nil
	}
	m, ok := c.s.eng.hosts.Meta(id)
	if !ok || m.Host == host {
		return nil
	}
	return tools.Errorf(tools.KindForbidden, "node %q runs on host %s and may not read or drive terminal %q, which is on %s: an agent on another host is kept to its host's terminals unless the operator allows it (launch_elsewhere for host %s in hosts.json)",
		c.caller.Node, host, id, hostLabel(m.Host), host).WithDetails("host", host)
}

// keepToRealm drops from a listing what lies outside the realm of a
// caller kept to its host: other hosts' and this machine's terminals
// (terminal_list), agents (agent_status) and dialogs (dialog_list).
func (c *call) keepToRealm(v any) any {
	host, confined := c.realm()
	if !confined {
		return v
	}
	outside := func(node string) bool {
		m, ok := c.s.eng.hosts.Meta(node)
		return !ok || m.Host != host
	}
	switch l := v.(type) {
	case tools.NodeList:
		l.Terminals = slices.DeleteFunc(slices.Clone(l.Terminals), func(n tools.NodeInfo) bool { return n.Host != host })
		return l
	case tools.AgentList:
		l.Agents = slices.DeleteFunc(slices.Clone(l.Agents), func(a tools.AgentInfo) bool { return outside(a.Node) })
		return l
	case tools.DialogList:
		l.Dialogs = slices.DeleteFunc(slices.Clone(l.Dialogs), func(d tools.Dialog) bool { return outside(d.Node) })
		return l
	}
	return v
}
