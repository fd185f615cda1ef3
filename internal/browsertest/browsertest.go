// Package browsertest runs a real headless Chromium for tests: Debian's
// chromium driven by playwright-core from npm (installed into the test
// cache by testenv.NPM), through driver.js — one JSON command a line in,
// one JSON reply a line out. Without chromium, node or npm the test skips
// (fails under TERMSPRAWL_REQUIRE_ALL, as in CI, which installs them).
package browsertest

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// PlaywrightCore is the npm package that drives Chromium.
const PlaywrightCore = "playwright-core@1.65.1"

//go:embed driver.js
var driver []byte

// M is a command's arguments or a reply.
type M = map[string]any

// Browser is one Chromium and its driver.
type Browser struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// Start starts the driver and Chromium (--headless --no-sandbox
// --disable-gpu --disable-background-networking); both end at cleanup.
func Start(t testing.TB) *Browser {
	t.Helper()
	chromium := testenv.LookPath(t, "chromium", "apt-get install chromium")
	node := testenv.LookPath(t, "node", "apt-get install nodejs npm")
	mods := testenv.NPM(t, PlaywrightCore)
	script := filepath.Join(t.TempDir(), "driver.js")
	if err := os.WriteFile(script, driver, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(mods, "node_modules"), "CHROMIUM="+chromium)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	b := &Browser{t: t, cmd: cmd, in: in, out: sc}
	t.Cleanup(b.Close)
	b.Do("launch", nil)
	return b
}

// Close ends Chromium and the driver (idempotent).
func (b *Browser) Close() {
	if b.cmd == nil {
		return
	}
	b.in.Close() // the driver closes the browser and exits
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		b.cmd.Process.Kill() // ours: started by Start
		<-done
	}
	b.cmd = nil
}

// Do sends one command and returns its reply; a failed command fails the
// test.
func (b *Browser) Do(cmd string, args M) M {
	b.t.Helper()
	out, err := b.Try(cmd, args)
	if err != nil {
		b.t.Fatalf("browser %s %v: %v", cmd, args, err)
	}
	return out
}

// Try is Do that returns the error.
func (b *Browser) Try(cmd string, args M) (M, error) {
	msg := M{"cmd": cmd}
	for k, v := range args {
		msg[k] = v
	}
	data, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(data, '\n')); err != nil {
		return nil, err
	}
	got := make(chan bool, 1)
	go func() { got <- b.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			return nil, fmt.Errorf("the driver ended: %v", b.out.Err())
		}
	case <-time.After(90 * time.Second):
		b.cmd.Process.Kill()
		return nil, fmt.Errorf("no reply within 90s")
	}
	var reply M
	if err := json.Unmarshal(b.out.Bytes(), &reply); err != nil {
		return nil, fmt.Errorf("reply %q: %v", b.out.Text(), err)
	}
	if reply["ok"] != true {
		return nil, fmt.Errorf("%v", reply["error"])
	}
	return reply, nil
}

// WaitText waits (bounded, polling in the page) until the text of the
// element matching selector contains want.
func (b *Browser) WaitText(page int, selector, want string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	w, _ := json.Marshal(want)
	b.Do("eval", M{"page": page, "expr": fmt.Sprintf(`new Promise((ok, no) => {
		const end = Date.now() + 10000;
		const t = () => { const e = document.querySelector(%s); const s = e ? e.textContent : '';
			s.includes(%s) ? ok(1) : Date.now() > end ? no(new Error('not shown: ' + s)) : setTimeout(t, 20); };
		t(); })`, sel, w)})
}

// Strings converts a reply's list.
func Strings(v any) []string {
	var out []string
	xs, _ := v.([]any)
	for _, x := range xs {
		out = append(out, fmt.Sprint(x))
	}
	return out
}
