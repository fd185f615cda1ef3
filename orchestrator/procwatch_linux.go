package orchestrator

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// sysPidfdOpen is pidfd_open(2) on Linux (the same number on every
// architecture that has it).
const sysPidfdOpen = 434

// procWatcher tells when processes that are not our children end, using
// one pidfd per process and one epoll goroutine for all of them. tmux
// 3.3a sometimes misses the death of a pane's program (the child stays a
// zombie, no status, no pane-died hook); the pidfd notices it anyway.
type procWatcher struct {
	epfd int
	wake [2]int // a pipe whose read end is in the epoll set: written by close

	mu     sync.Mutex // guards byFd and closed
	byFd   map[int32]watchEntry
	closed bool
	done   chan struct{}
}

type watchEntry struct {
	pid    int
	onExit func()
}

func newProcWatcher() (*procWatcher, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	w := &procWatcher{epfd: epfd, byFd: map[int32]watchEntry{}, done: make(chan struct{})}
	if err := syscall.Pipe2(w.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(w.wake[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, w.wake[0], &ev); err != nil {
		w.closeFds()
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	go w.loop()
	return w, nil
}

// errNoPidfd means the kernel has no pidfd_open.
var errNoPidfd = errors.New("pidfd_open is not available")

// watch calls onExit once, from the watcher's goroutine, when pid ends. If
// pid is already gone, onExit runs at once.
func (w *procWatcher) watch(pid int, onExit func()) error {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ENOSYS {
		return errNoPidfd
	}
	if errno == syscall.ESRCH {
		go onExit()
		return nil
	}
	if errno != 0 {
		return fmt.Errorf("pidfd_open %d: %w", pid, errno)
	}
	syscall.CloseOnExec(int(fd))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		syscall.Close(int(fd))
		return errors.New("process watcher closed")
	}
	w.byFd[int32(fd)] = watchEntry{pid: pid, onExit: onExit}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLONESHOT, Fd: int32(fd)}
	if err := syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		delete(w.byFd, int32(fd))
		syscall.Close(int(fd))
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (w *procWatcher) loop() {
	defer close(w.done)
	events := make([]syscall.EpollEvent, 32)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if err == syscall.EINTR {
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
			e, ok := w.byFd[ev.Fd]
			delete(w.byFd, ev.Fd)
			w.mu.Unlock()
			syscall.Close(int(ev.Fd))
			if ok {
				e.onExit()
			}
		}
	}
}

// close stops the watcher; pending callbacks never run.
func (w *procWatcher) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	syscall.Write(w.wake[1], []byte{1})
	<-w.done
	w.mu.Lock()
	for fd := range w.byFd {
		syscall.Close(int(fd))
	}
	w.byFd = nil
	w.mu.Unlock()
	w.closeFds()
}

func (w *procWatcher) closeFds() {
	syscall.Close(w.wake[0])
	syscall.Close(w.wake[1])
	syscall.Close(w.epfd)
}
