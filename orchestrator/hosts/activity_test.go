package hosts

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tree map[int]procLook
		want Activity
	}{
		{"not read", map[int]procLook{}, ActivityUnknown},
		{"a zombie", map[int]procLook{1: {state: 'Z'}}, ActivityEnded},
		{"reading its terminal", map[int]procLook{1: {state: 'S', wchan: "wait_woken"}}, ActivityWaiting},
		{"sleep point hidden", map[int]procLook{1: {state: 'S', wchan: "0"}}, ActivityWaiting},
		{"not yet scheduled", map[int]procLook{1: {state: 'R'}}, ActivityBusy},
		{"on the disk", map[int]procLook{1: {state: 'D', wchan: "io_schedule"}}, ActivityBusy},
		{"sleeping itself", map[int]procLook{1: {state: 'S', wchan: "hrtimer_nanosleep"}}, ActivityBusy},
		{"a shell waiting for its sleep", map[int]procLook{
			1: {state: 'S', wchan: "do_wait", children: []int{2}},
			2: {state: 'S', wchan: "do_nanosleep"},
		}, ActivityBusy},
		{"a shell with a child ended unreaped", map[int]procLook{
			1: {state: 'S', wchan: "do_wait", children: []int{2}},
			2: {state: 'Z'},
		}, ActivityBusy},
		{"a sandbox around a program waiting for events", map[int]procLook{
			1: {state: 'S', wchan: "do_wait", children: []int{2}},
			2: {state: 'S', wchan: "do_wait", children: []int{3}},
			3: {state: 'S', wchan: "do_epoll_wait"},
		}, ActivityWaiting},
		{"a child running", map[int]procLook{
			1: {state: 'S', wchan: "do_wait", children: []int{2}},
			2: {state: 'R'},
		}, ActivityBusy},
	} {
		if got := classify(1, tc.tree); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stat string
		want byte
		ok   bool
	}{
		{"12 (sh) S 1 12 12 0", 'S', true},
		{"12 (a) R (b) Z 1 2 3", 'Z', true}, // a program named "a) R (b"
		{"12 (x y) D 1", 'D', true},
		{"12 (sh)", 0, false},
		{"12 (sh)S", 0, false},
		{"12 sh S", 0, false},
		{"12 (sh) 7", 0, false},
		{"", 0, false},
	} {
		got, ok := statState([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("statState(%q) = %q, %v; want %q, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// A stat line from a process named by anyone: a state is a letter right
// after the last ") ", or there is none.
func FuzzStatState(f *testing.F) {
	for _, s := range []string{"1 (sh) S 0", "1 (a) R (b) Z 0", "1 ()) S", ")", "1 (x) \xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := statState(b)
		if !ok {
			return
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+1] != ' ' || b[i+2] != c || c < 'A' || c > 'z' {
			t.Fatalf("statState(%q) = %q", b, c)
		}
	})
}

// Activity on real processes: a shell reading a pipe waits; the same
// shell waiting for its sleep is busy; killed and not yet reaped, it
// ended.
func TestActivityOfRealPrograms(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := &Tmux{socket: "x", stop: make(chan struct{})}
	cmd := exec.Command("sh", "-c", "read x; sleep 600; true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reaped := false
	defer func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		if !reaped {
			cmd.Wait()
		}
	}()
	until := func(what string, ok func() bool) {
		t.Helper()
		testenv.Eventually(t, 15*time.Second, ok, testenv.Msg("never %s", what))
	}
	until("waiting on its pipe", func() bool { return srv.Activity(ctx, pid) == ActivityWaiting })
	w, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	hidden := string(w) == "0" || len(w) == 0 // read while it is asleep

	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	sleeping := func() bool {
		kids := childrenOf("/proc/" + strconv.Itoa(pid))
		if len(kids) != 1 {
			return false
		}
		w, _ := os.ReadFile("/proc/" + strconv.Itoa(kids[0]) + "/wchan")
		return strings.Contains(string(w), "nanosleep")
	}
	if hidden {
		t.Log("this kernel hides sleep points (/proc/PID/wchan): the timer case is not seen here")
	} else {
		until("asleep on its timer", sleeping)
		if a := srv.Activity(ctx, pid); a != ActivityBusy {
			t.Fatalf("a shell waiting for its sleep: %v, want busy", a)
		}
	}

	syscall.Kill(-pid, syscall.SIGKILL)
	until("a zombie", func() bool {
		b, _ := srv.ProcStat(ctx, pid)
		st, _ := statState(b)
		return st == 'Z'
	})
	if a := srv.Activity(ctx, pid); a != ActivityEnded {
		t.Fatalf("a zombie: %v, want ended", a)
	}
	cmd.Wait()
	reaped = true
	if a := srv.Activity(ctx, pid); a != ActivityEnded {
		t.Fatalf("reaped: %v, want ended", a)
	}
	remote := Remote{Bin: "tmux", Socket: "x", Prefix: fakeSSH(t)}.Unconnected()
	if a := remote.Activity(ctx, os.Getpid()); a != ActivityUnknown {
		t.Fatalf("a host's program: %v, want unknown (not looked at)", a)
	}
}
