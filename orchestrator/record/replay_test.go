package record

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func openCast(t testing.TB, raw []byte, kfEvery int) *Trace {
	t.Helper()
	tr, err := openFiles("test.cast", map[string][]byte{CastFile: raw})
	if err != nil {
		t.Fatal(err)
	}
	tr.kfEvery, tr.kfRetry, tr.nextKF = kfEvery, kfEvery/4+1, kfEvery
	t.Cleanup(func() { tr.Close() })
	return tr
}

// checkReplay compares every shortcut of the trace's replay with the plain
// replay: the end in one go (long runs to squeeze, keyframes on the way),
// then moments at random and backwards (from keyframes), then every
// moment forwards on a fresh trace (the builder stopping at each event).
func checkReplay(t *testing.T, raw []byte, kfEvery int) (squeezes, keyframes int) {
	t.Helper()
	tr := openCast(t, raw, kfEvery)
	want := plainFrames(t, tr.c)
	check := func(tr *Trace, how string, n int) {
		t.Helper()
		got, err := tr.frame(n)
		if err != nil {
			t.Fatalf("%s frame(%d): %v", how, n, err)
		}
		if d := diffScreens(got, want[n]); d != "" {
			t.Fatalf("%s: after %d of %d events the replay differs from a plain replay (got vs want): %s", how, n, len(want)-1, d)
		}
	}
	check(tr, "end", len(want)-1)
	squeezes, keyframes = tr.b.squeezes, len(tr.kfs)
	r := rand.New(rand.NewPCG(uint64(len(raw)), 1))
	for range 60 {
		check(tr, "random", r.IntN(len(want)))
	}
	for n := len(want) - 1; n >= 0; n -= 1 + len(want)/40 {
		check(tr, "backward", n)
	}
	fresh := openCast(t, raw, kfEvery)
	for n := range want {
		check(fresh, "forward", n)
	}
	return squeezes, keyframes
}

func TestReplayMatchesPlainReplay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                string
		cols, rows          int
		tokens              int
		richPct             int
		resizes             bool
		kfEvery             int
		wantSqueeze, wantKF bool
	}{
		{"log output", 40, 8, 1500, 0, false, 2048, true, true},
		{"log output, resizes", 30, 6, 1500, 0, true, 2048, true, true},
		{"mostly log output", 30, 6, 2000, 6, false, 2048, true, true},
		{"mostly log output, resizes", 24, 5, 2000, 6, true, 1024, true, true},
		{"everything", 24, 6, 1200, 50, false, 512, false, true},
		{"everything, resizes", 20, 5, 1200, 50, true, 512, false, true},
		{"everything, wide", 80, 24, 1500, 50, false, 4096, false, true},
		{"tiny screen", 5, 3, 800, 50, true, 256, false, false},
	}
	// Six random streams per case; -short keeps the first (the others are
	// the same shapes with other data, and take most of the package's time).
	seeds := uint64(6)
	if testing.Short() {
		seeds = 1
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				t.Parallel()
				evs := genEvents(seed, tc.cols, tc.rows, tc.tokens, tc.richPct, tc.resizes)
				raw := buildCast(tc.cols, tc.rows, evs)
				sq, kf := checkReplay(t, raw, tc.kfEvery)
				t.Logf("%d events, %d bytes: %d squeezes, %d keyframes", len(evs), len(raw), sq, kf)
				if tc.wantSqueeze && sq == 0 {
					t.Errorf("no run was squeezed")
				}
				if tc.wantKF && kf == 0 {
					t.Errorf("no keyframe was taken")
				}
			})
		}
	}
}

// Output split inside a grapheme cluster replays the same from keyframes.
func TestReplaySplitClusters(t *testing.T) {
	t.Parallel()
	for _, evs := range [][]castEv{
		{{code: 'o', data: "e"}, {code: 'o', data: "\u0301"}, {code: 'o', data: "x\r\n"}, {code: 'o', data: "\x1b[1;2HZ"}},
		{{code: 'o', data: "ab"}, {code: 'o', data: "\u0301cd"}, {code: 'o', data: "\x1b[1;3HZ"}, {code: 'o', data: "\x1b[1;1H\x1b[2PQ"}},
		{{code: 'o', data: "\x1b[1m\u0301"}, {code: 'o', data: "ok\r\n"}, {code: 'o', data: "\x1b[1;1HW"}},
		{{code: 'o', data: "👩"}, {code: 'o', data: "\u200d💻 x"}, {code: 'o', data: "\x1b[1;2HZ"}},
	} {
		checkReplay(t, buildCast(10, 3, evs), 1)
	}
}

// Squeezing writes a small part of scrolling output to the emulator.
func TestSqueezeSkipsScrolledOffOutput(t *testing.T) {
	testenv.SkipShort(t, "replays 60,000 lines of generated output, 20 s of CPU on a loaded machine")
	t.Parallel()
	evs := genEvents(9, 80, 24, 60000, 0, false)
	raw := buildCast(80, 24, evs)
	tr := openCast(t, raw, 1<<30)
	s, err := tr.frame(len(tr.c.events))
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for i := range tr.c.events {
		total += len(tr.c.data(&tr.c.events[i], nil))
	}
	written := tr.b.written
	t.Logf("%d bytes of output, %d written to the emulator (%d squeezes)", total, written, tr.b.squeezes)
	if written*20 > total {
		t.Errorf("%d of %d bytes were written to the emulator: the squeeze did not work", written, total)
	}
	want := plainFrames(t, tr.c)
	if d := diffScreens(s, want[len(want)-1]); d != "" {
		t.Errorf("the end differs: %s", d)
	}
}

// REP repeats the last character; when a squeeze dropped it, the replay
// is done again without squeezing, and matches a plain replay.
func TestRepeatAfterASqueezeIsReplayedPlainly(t *testing.T) {
	t.Parallel()
	var b []byte
	for i := range 40 {
		b = fmt.Appendf(b, "line %d x\r\n", i)
	}
	for range 8 {
		b = append(b, "\r\n"...)
	}
	b = append(b, "\x1b[3b"...) // repeats 'x' from a dropped line
	b = append(b, " end"...)
	evs := []castEv{{code: 'o', data: string(b[:150])}, {code: 'o', data: string(b[150:])}}
	tr := openCast(t, buildCast(12, 4, evs), 1<<30)
	want := plainFrames(t, tr.c)
	got, err := tr.frame(2)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffScreens(got, want[2]); d != "" {
		t.Fatalf("differs from a plain replay: %s", d)
	}
	if tr.retries == 0 {
		t.Errorf("the squeezed replay was not redone (retries 0): the test does not test the fallback")
	}
	if want[2].Lines[3] != "xxx end" {
		t.Errorf("plain replay's last row %q: the test does not repeat a dropped character", want[2].Lines[3])
	}
}

// A control inside an escape sequence (CR, BEL, SOH between its bytes)
// is executed, and x/vt's parser (x/ansi's) then forgets the prefix and
// intermediate it had collected: "ESC [ ? CR 1049 h" is CR and then
// "CSI 1049 m", not the alternate screen. The tracker steps the same
// parser, so it reads the sequence as the emulator does; the hand-made
// table it used before read it as DECSET 1049 and gave frames that
// differ from a plain replay.
func TestControlInsideASequence(t *testing.T) {
	t.Parallel()
	lines := strings.Repeat("line\r\n", 30)
	evs := []castEv{
		{code: 'o', data: lines},
		{code: 'o', data: "\x1b[2;3Hp\x1b7\x1b[?\r1049hALT\x1b[2;1Hq"},
		{code: 'o', data: lines},
		{code: 'o', data: "\x1b[?\r1049lZ\x1b8W\x1b[?\r47h\x1b[?\r6h\x1b[2;3r\x1b[\r3;4rK\x1b \x01Fx"},
		{code: 'o', data: lines},
		{code: 'o', data: "\x1b[\r?1049h\x1b[?\a1049h\x1b(\r0lqk\x1b[?\r7l" + strings.Repeat("w", 30)},
		{code: 'o', data: lines},
	}
	checkReplay(t, buildCast(10, 4, evs), 1)
}
