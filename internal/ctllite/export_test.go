package ctllite

// Values the tests compare with the tools package's.
var (
	MaxStateFileBytes  = maxStateFileBytes
	MaxBodyBytes       = maxBodyBytes
	MaxReplyBytes      = maxReplyBytes
	ClientTimeout      = clientTimeout
	SessionEnv         = sessionEnv
	Kinds              = kinds
	UnavailableMessage = unavailableMessage
	States             = []string{stateIdle, stateWorking, stateWaiting, stateError}
)
