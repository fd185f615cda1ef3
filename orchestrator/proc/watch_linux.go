package proc

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Watcher tells when processes that are not our children end, using one
// pidfd per process and one epoll goroutine for all of them.
type Watcher struct {
	epfd int
	wake [2]int // a pipe whose read end is in the epoll set: written by Close

	mu     sync.Mutex // guards byFd and closed
	byFd   map[int32]func()
	closed bool
	done   chan struct{}
}

// NewWatcher starts a watcher and its goroutine; Close ends both.
func NewWatcher() (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	w := &Watcher{epfd: epfd, byFd: map[int32]func(){}, done: make(chan struct{})}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.wake[0])}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, w.wake[0], &ev); err != nil {
		w.closeFds()
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	go w.loop()
	return w, nil
}

// Watch calls onExit once, from the watcher's goroutine, when pid ends
// (a zombie counts as ended). If pid is already gone, onExit runs at
// once on a goroutine of its own. ErrUnsupported means the kernel has no
// pidfd_open (before Linux 5.3).
func (w *Watcher) Watch(pid int, onExit func()) error {
	if pid <= 0 {
		return fmt.Errorf("watch pid %d: %w", pid, unix.EINVAL)
	}
	// pidfd_open sets close-on-exec on the descriptor itself.
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		return ErrUnsupported
	case errors.Is(err, unix.ESRCH):
		go onExit()
		return nil
	case err != nil:
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		unix.Close(fd)
		return ErrClosed
	}
	w.byFd[int32(fd)] = onExit
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(fd)}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		delete(w.byFd, int32(fd))
		unix.Close(fd)
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (w *Watcher) loop() {
	defer close(w.done)
	events := make([]unix.EpollEvent, 32)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if int(ev.Fd) == w.wake[0] {
				return
			}
			w.mu.Lock()
			onExit, ok := w.byFd[ev.Fd]
			delete(w.byFd, ev.Fd)
			w.mu.Unlock()
			unix.Close(int(ev.Fd))
			if ok {
				onExit()
			}
		}
	}
}

// Close stops the watcher and waits for its goroutine; pending callbacks
// never run. Closing twice is harmless.
func (w *Watcher) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	unix.Write(w.wake[1], []byte{1})
	<-w.done
	w.mu.Lock()
	for fd := range w.byFd {
		unix.Close(int(fd))
	}
	w.byFd = nil
	w.mu.Unlock()
	w.closeFds()
}

func (w *Watcher) closeFds() {
	unix.Close(w.wake[0])
	unix.Close(w.wake[1])
	unix.Close(w.epfd)
}
