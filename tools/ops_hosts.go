package tools

// hostOperations are the rows of the hosts termsprawl drives over ssh
// (CONTRACT §17, §23).
func hostOperations() []*Operation {
	return []*Operation{
		{Name: "host_list", Result: HostList{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "The machines termsprawl drives over ssh (hosts.json): name, destination, state (connected, reconnecting, unreachable), node count, a round trip to the host's tmux measured now, and since when the state holds. An agent kept to its host sees that host only."},
		{Name: "host_remove", Result: HostRemoved{}, State: HostList{}, Topic: TopicTerminal, Mutation: true, Annotations: annDestructive,
			Description: "Operator only: stop driving a host and remove it from hosts.json. Refused while the host has nodes unless close_nodes: then each node is closed (its program ended), or, when the host cannot be reached, forgotten here (said so in forgotten: its program may still run there).",
			Params: []Param{
				{Name: "host", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 64, Description: "The host's name (host_list)."},
				{Name: "close_nodes", Type: TypeBoolean, Description: "Also close the host's nodes (forget those of a host that cannot be reached)."},
			}},
	}
}
