package tools

// notifyOperations are the notification rows of the table (CONTRACT §20).
func notifyOperations() []*Operation {
	return []*Operation{
		{Name: "notify_test", Result: NotifyTestResult{}, Topic: TopicAgents, Annotations: Annotations{OpenWorld: true},
			Description: "Operator only: send one test notification to each configured target (termsprawl up --notify, <state>/notify.json) and return what each answered."},
	}
}
