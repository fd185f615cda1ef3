// Package blastradius holds measurements and crash probes for how
// termsprawl lays its nodes out over tmux servers. It has no code of its
// own: everything is in tests that skip unless asked for.
//
//	TERMSPRAWL_BLAST_BENCH=1 go test -v -run TestBlastRadius -timeout 20m ./internal/blastradius/
//	TERMSPRAWL_CRASH_PROBE=1 go test -v -run TestCrashProbe -timeout 30m ./internal/blastradius/
//
// TERMSPRAWL_TMUX names the tmux binary (default "tmux"). Every server
// runs on a private socket named blastradius-PID-N and is killed by that
// socket (or, if it no longer answers, by the pid it reported) when the
// test ends; no other tmux server is touched. docs/TMUX-CRASHES.md
// records what these tests measured and found.
package blastradius
