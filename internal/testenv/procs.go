package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TmuxPids returns the pids of the processes, read from /proc, whose
// command line names a tmux socket (-L NAME) that match accepts, given
// that name and the whole command line. Zombies are listed too (gone as
// far as resources go, but listed until reaped): the caller decides.
func TmuxPids(match func(socket string, args []string) bool) []int {
	var pids []int
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-L" && match(args[i+1], args) {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(m))); err == nil {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}
