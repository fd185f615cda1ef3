package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ZombieStatus is the exit status of a dead, unreaped process, as a shell
// reports it (128+N for a signal N). It reports false if pid is not a
// zombie: alive, reaped, not visible, or on a system without /proc.
func ZombieStatus(pid int) (int, bool) { return WaitCode(ZombieWait(pid)) }

// WaitCode is a zombie's wait status as an exit code, as a shell reports
// it (128+N for a signal N); false if ok is.
func WaitCode(status syscall.WaitStatus, ok bool) (int, bool) {
	switch {
	case !ok:
	case status.Exited():
		return status.ExitStatus(), true
	case status.Signaled():
		return 128 + int(status.Signal()), true
	}
	return 0, false
}

// ZombieWait is the wait status of pid while it is an unreaped zombie,
// read from /proc/PID/stat (field 52, exit_code, in waitpid's encoding).
func ZombieWait(pid int) (syscall.WaitStatus, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return ParseStat(b)
}

// ParseStat reads the state and exit_code fields of a /proc/PID/stat
// line: the wait status of a zombie, false for any other process. (A
// host's line is read there and parsed here.)
func ParseStat(b []byte) (syscall.WaitStatus, bool) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the last ')' ends it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 52 is f[49].
	if len(f) < 50 || f[0] != "Z" {
		return 0, false
	}
	ws, err := strconv.Atoi(f[49])
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(ws), true
}
