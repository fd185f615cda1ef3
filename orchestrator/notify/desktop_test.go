package notify

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// fakeNotifications owns org.freedesktop.Notifications on the bus and
// appends each Notify call to a file (app|summary|body), answering id 42.
const fakeNotifications = `
import sys, dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.freedesktop.Notifications", bus)
out = open(sys.argv[1], "a")
class N(dbus.service.Object):
    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, rid, icon, summary, body, actions, hints, timeout):
        out.write("%s|%s|%s\n" % (app, summary, body)); out.flush()
        return 42
N(bus, "/org/freedesktop/Notifications")
print("ready", flush=True)
GLib.MainLoop().run()
`

// A session bus the test starts, with a small fake notification
// service: the desktop target reaches it and reports its answer.
func TestDesktopOnATestBus(t *testing.T) {
	t.Parallel()
	daemon := testenv.LookPath(t, "dbus-daemon", "apt-get install dbus")
	testenv.LookPath(t, "gdbus", "apt-get install libglib2.0-bin")
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import dbus, dbus.mainloop.glib; from gi.repository import GLib").Run() != nil {
		testenv.SkipOrFail(t, "the fake notification service needs python3-dbus and python3-gi: apt-get install python3-dbus python3-gi")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bus := exec.CommandContext(ctx, daemon, "--session", "--nofork", "--print-address")
	stdout, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = bus.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	env := []string{"DBUS_SESSION_BUS_ADDRESS=" + strings.TrimSpace(addr), "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	calls := filepath.Join(t.TempDir(), "calls")
	svc := exec.CommandContext(ctx, py, "-c", fakeNotifications, calls)
	svc.Env = env
	svcOut, err := svc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = svc.Wait() }()
	if line, err := bufio.NewReader(svcOut).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the fake service did not start: %q %v", line, err)
	}
	d := Desktop{Env: env, LookPath: func(p string) (string, error) {
		if p == "notify-send" {
			return "", exec.ErrNotFound // gdbus here, whatever the machine has
		}
		return exec.LookPath(p)
	}}
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	answer, err := d.Send(sctx, Event{Title: "n1 needs you", Text: "Bash: ls"})
	if err != nil || !strings.Contains(answer, "42") {
		t.Fatalf("Send: %q %v", answer, err)
	}
	b, _ := os.ReadFile(calls)
	if string(b) != "termsprawl|n1 needs you|Bash: ls\n" {
		t.Fatalf("the service got %q", b)
	}
	// No bus: a clear error, not a hang.
	if _, err := (Desktop{Env: []string{"PATH=" + os.Getenv("PATH")}}).Send(sctx, Event{}); err == nil && !hasBus(nil) {
		t.Fatal("no error without a session bus")
	}
}
