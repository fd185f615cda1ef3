package ctllite

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The loopback connection is made with system calls, not package net:
// net links the C resolver (a dynamically linked binary that loads libc
// at every start) and starts the runtime's network poller, which one
// blocking request on 127.0.0.1 needs neither of. Deadlines are the
// socket's SO_SNDTIMEO and SO_RCVTIMEO.

// errTimeout is a read or write that ran into the socket's timeout.
var errTimeout = errors.New("i/o timeout")

// sockConn is a connected TCP socket.
type sockConn struct{ fd int }

// dialLoopback connects to 127.0.0.1:PORT within timeout. Any error means
// nothing was sent.
func dialLoopback(hostPort string, timeout time.Duration) (*sockConn, error) {
	_, port, _ := strings.Cut(hostPort, ":")
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	fd, err := socket()
	if err != nil {
		return nil, err
	}
	c := &sockConn{fd: fd}
	if err := c.setTimeout(timeout); err != nil {
		c.Close()
		return nil, err
	}
	sa := &syscall.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}}
	deadline := time.Now().Add(timeout)
	for {
		err = syscall.Connect(fd, sa)
		switch {
		case err == nil, errors.Is(err, syscall.EISCONN):
			return c, nil
		case (errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EALREADY) || errors.Is(err, syscall.EINPROGRESS)) && time.Now().Before(deadline):
			time.Sleep(time.Millisecond)
			continue
		}
		c.Close()
		return nil, err
	}
}

func (c *sockConn) setTimeout(d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return err
	}
	return syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
}

func (c *sockConn) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, errTimeout
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *sockConn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Write(c.fd, p[done:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return done, errTimeout
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

func (c *sockConn) Close() error { return syscall.Close(c.fd) }
