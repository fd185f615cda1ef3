package orchestrator

// The internal tests' helpers (helpers_test.go), for the tests that use
// only the engine's exported API and so live in package orchestrator_test.
var (
	NewTestOrchestrator  = newTestOrchestrator
	OpenOrchestratorWith = openOrchestratorWith
	TestContext          = tctx
	LaunchForTest        = launch
	BashArgv             = bashArgv
)
