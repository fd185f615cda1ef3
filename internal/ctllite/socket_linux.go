package ctllite

import "syscall"

// socket opens a close-on-exec TCP socket in one call.
func socket() (int, error) {
	return syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
