package orchestrator

// Realms (CHOICES "trust model: a remote agent's realm"): a node's realm
// is its host. The tool server keeps an agent on another host to its
// host's nodes unless the operator granted that host more
// (tools.HostSpec.LaunchElsewhere). The engine only answers the grant.

// HostGrantsElsewhere reports whether the operator let agents on host
// launch, read and drive outside it (hosts.json's launch_elsewhere). A
// host not configured grants nothing.
func (o *Orchestrator) HostGrantsElsewhere(host string) bool {
	for _, h := range o.cfg.Hosts {
		if h.Name == host {
			return h.LaunchElsewhere
		}
	}
	return false
}
