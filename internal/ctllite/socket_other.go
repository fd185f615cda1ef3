//go:build !linux

package ctllite

import "syscall"

// socket opens a close-on-exec TCP socket (no SOCK_CLOEXEC here; the
// fork lock keeps an exec from seeing it in between, as package syscall
// does).
func socket() (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd)
	return fd, nil
}
