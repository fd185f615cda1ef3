package toolserver

import (
	"slices"

	"github.com/termsprawl/termsprawl/tools"
)

// The hosts (CONTRACT §23): host_list for everyone (an agent kept to its
// host sees that host only), host_remove for the operator.

func hostHandlers() map[string]handler {
	return map[string]handler{
		"host_list":   reader(hostList),
		"host_remove": mutator(hostRemove),
	}
}

func hostList(c *call, _ noArgs) (tools.HostList, error) {
	l := tools.HostList{Hosts: c.s.eng.hosts.HostList(c.ctx)}
	if mine, confined := c.realm(); confined {
		l.Hosts = slices.DeleteFunc(l.Hosts, func(h tools.HostInfo) bool { return h.Name != mine })
	}
	if l.Hosts == nil {
		l.Hosts = []tools.HostInfo{}
	}
	return l, nil
}

type hostRemoveArgs struct {
	Host       string `json:"host"`
	CloseNodes bool   `json:"close_nodes"`
}

func hostRemove(c *call, a hostRemoveArgs) (tools.HostRemoved, any, error) {
	if c.caller.Role != tools.RoleOperator {
		return tools.HostRemoved{}, nil, tools.Errorf(tools.KindForbidden, "host_remove is for the operator (termsprawl hosts rm %s): it ends or forgets every node on the host", a.Host)
	}
	r, err := c.s.eng.hosts.RemoveHost(c.ctx, a.Host, a.CloseNodes)
	if err != nil {
		return r, nil, err
	}
	return r, tools.HostList{Hosts: c.s.eng.hosts.HostList(c.ctx)}, nil
}
