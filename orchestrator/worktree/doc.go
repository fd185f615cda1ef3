// Package worktree is termsprawl's room for git (CONTRACT §21): it makes,
// reads and finishes git worktrees by running the user's own git CLI. It
// knows nothing of nodes, tmux or the tool server.
//
// Every git call runs under a context with a time limit; when it runs
// out the whole process group is killed, so no git is left running.
// Reads run with GIT_OPTIONAL_LOCKS=0 (status never takes index.lock from
// under an agent's own git). It never passes --force, never deletes a
// branch with -D, never writes git configuration and never runs git add
// on the user's tree: untracked files are diffed by reading them here.
package worktree
