package render_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

var samplesDir = flag.String("samples", "", "write sample screenshots (ls, vim, htop, a dialog) to this directory")

// sample is a screen painted by escape sequences through the real mirror.
type sample struct {
	name       string
	cols, rows int
	out        string
	fallback   []string // the characters Go Mono lacks
}

// esc builds output: lines joined by CR LF.
func esc(lines ...string) string { return strings.Join(lines, "\r\n") }

func lsSample() sample {
	return sample{"ls", 100, 24, esc(
		"\x1b[01;32malice@devbox\x1b[00m:\x1b[01;34m~/src/termsprawl\x1b[00m$ ls -la --color=auto",
		"total 148",
		"drwxr-xr-x 12 alice alice  4096 Dec  1 10:02 \x1b[01;34m.\x1b[0m",
		"drwxr-xr-x 48 alice alice  4096 Nov 30 22:17 \x1b[01;34m..\x1b[0m",
		"drwxr-xr-x  8 alice alice  4096 Dec  1 10:02 \x1b[01;34m.git\x1b[0m",
		"-rw-r--r--  1 alice alice   412 Nov 28 09:41 .gitignore",
		"drwxr-xr-x  2 alice alice  4096 Nov 29 18:03 \x1b[01;34mcli\x1b[0m",
		"drwxr-xr-x  3 alice alice  4096 Nov 27 11:12 \x1b[01;34mcmd\x1b[0m",
		"drwxr-xr-x  2 alice alice  4096 Dec  1 09:55 \x1b[01;34mdocs\x1b[0m",
		"-rw-r--r--  1 alice alice  1398 Dec  1 09:54 go.mod",
		"-rw-r--r--  1 alice alice  7021 Dec  1 09:54 go.sum",
		"lrwxrwxrwx  1 alice alice    11 Nov 20 08:00 \x1b[01;36mlatest\x1b[0m -> \x1b[01;34mbuild/v0.3.1\x1b[0m",
		"-rwxr-xr-x  1 alice alice  2210 Nov 25 16:20 \x1b[01;32mmake.sh\x1b[0m",
		"drwxr-xr-x  6 alice alice  4096 Dec  1 10:01 \x1b[01;34morchestrator\x1b[0m",
		"-rw-r--r--  1 alice alice 88211 Nov 21 13:37 \x1b[01;31mrelease.tar.gz\x1b[0m",
		"-rw-r--r--  1 alice alice 40960 Nov 22 14:00 \x1b[01;35mscreenshot.png\x1b[0m",
		"prw-r--r--  1 alice alice     0 Dec  1 10:03 \x1b[40;33mfifo\x1b[0m",
		"drwxrwxrwt  2 alice alice  4096 Dec  1 10:03 \x1b[30;42mshared-tmp\x1b[0m",
		"-rwsr-xr-x  1 root  root  16384 Nov 19 07:00 \x1b[37;41msuid-helper\x1b[0m",
		"\x1b[01;32malice@devbox\x1b[00m:\x1b[01;34m~/src/termsprawl\x1b[00m$ echo \x1b[3mitalic\x1b[0m \x1b[4munderline\x1b[0m \x1b[9mstrike\x1b[0m \x1b[2mdim\x1b[0m \x1b[7minverse\x1b[0m \x1b[1mbold\x1b[0m \x1b[4:3;58;5;196mcurly\x1b[0m",
		"\x1b[01;32malice@devbox\x1b[00m:\x1b[01;34m~/src/termsprawl\x1b[00m$ ",
	), nil}
}

func vimSample() sample {
	kw := func(s string) string { return "\x1b[38;5;214m" + s + "\x1b[39m" }
	str := func(s string) string { return "\x1b[38;5;114m" + s + "\x1b[39m" }
	com := func(s string) string { return "\x1b[3;38;5;244m" + s + "\x1b[23;39m" }
	fn := func(s string) string { return "\x1b[38;5;75m" + s + "\x1b[39m" }
	num := func(n int) string { return fmt.Sprintf("\x1b[38;5;242m%4d \x1b[39m", n) }
	code := []string{
		kw("package") + " main",
		"",
		kw("import") + " (",
		"\t" + str(`"fmt"`),
		"\t" + str(`"os"`),
		")",
		"",
		com("// main greets whoever is named on the command line."),
		kw("func") + " " + fn("main") + "() {",
		"\tname := " + str(`"world"`),
		"\t" + kw("if") + " len(os.Args) > 1 {",
		"\t\tname = os.Args[1]",
		"\t}",
		"\tfmt." + fn("Printf") + "(" + str(`"hello, %s\n"`) + ", name)",
		"}",
	}
	var lines []string
	for i, l := range code {
		lines = append(lines, num(i+1)+strings.ReplaceAll(l, "\t", "    "))
	}
	for len(lines) < 22 {
		lines = append(lines, "\x1b[34m~\x1b[39m")
	}
	status := "\x1b[7m main.go [+]" + strings.Repeat(" ", 49) + "14,35          All \x1b[27m"
	lines = append(lines, status, "\x1b[1m-- INSERT --\x1b[0m")
	// The cursor: a bar (insert mode), after "name" on line 14.
	return sample{"vim", 80, 24, "\x1b[?1049h\x1b[H" + esc(lines...) + "\x1b[14;40H\x1b[6 q", nil}
}

func htopSample() sample {
	bar := func(label string, green, red, blue, width int, pct string) string {
		fill := "\x1b[32m" + strings.Repeat("|", green) + "\x1b[31m" + strings.Repeat("|", red) + "\x1b[34m" + strings.Repeat("|", blue) + "\x1b[0m"
		pad := width - green - red - blue - len(pct)
		return "\x1b[36m" + label + "\x1b[0m\x1b[1m[\x1b[0m" + fill + strings.Repeat(" ", max(pad, 0)) + "\x1b[90m" + pct + "\x1b[0m\x1b[1m]\x1b[0m"
	}
	lines := []string{
		"  " + bar("1  ", 18, 6, 2, 36, "52.3%") + "   \x1b[36mTasks: \x1b[1m112\x1b[0m, \x1b[32m431 thr\x1b[0m; \x1b[32m2 running\x1b[0m",
		"  " + bar("2  ", 9, 2, 1, 36, "24.0%") + "   \x1b[36mLoad average: \x1b[1m0.82 \x1b[0m\x1b[36m0.64 0.51\x1b[0m",
		"  " + bar("Mem", 14, 3, 9, 36, "5.21G/15.5G") + "   \x1b[36mUptime: \x1b[1m3 days, 04:12:51\x1b[0m",
		"  " + bar("Swp", 1, 0, 0, 36, "12.0M/2.00G"),
		"",
		"\x1b[30;42m    PID USER      PRI  NI  VIRT   RES   SHR S CPU%▽MEM%   TIME+  Command" + strings.Repeat(" ", 28) + "\x1b[0m",
		"\x1b[30;46m   4121 alice      20   0 2.1G  412M 88.2M S 38.4  2.6  1:02.33 claude --dangerously-skip-perm\x1b[K\x1b[0m",
		"   3307 alice      20   0 1.2G  201M 61.0M S  9.1  1.3  0:41.90 \x1b[1mnode\x1b[0m /usr/lib/node_modules/",
		"   2210 alice      20   0  812M 96.1M 40.2M R  4.0  0.6  0:12.01 \x1b[1mtmux\x1b[0m -L termsprawl",
		"    811 root       20   0  304M 22.0M 14.8M S  1.2  0.1  2:33.18 \x1b[1m/usr/lib/systemd/systemd-journald\x1b[0m",
		"   5120 alice      20   0  9.6M  4.1M  3.2M R  0.7  0.0  0:00.08 \x1b[1mhtop\x1b[0m",
		"      1 root       20   0  167M 13.1M  8.4M S  0.0  0.1  0:04.40 \x1b[1m/sbin/init\x1b[0m",
		"    402 \x1b[90mroot       20   0     0     0     0 S  0.0  0.0  0:00.00 kworker/0:1H\x1b[0m",
	}
	for len(lines) < 23 {
		lines = append(lines, "")
	}
	keys := []string{"F1", "Help  ", "F2", "Setup ", "F3", "Search", "F4", "Filter", "F5", "Tree  ", "F6", "SortBy", "F7", "Nice -", "F8", "Nice +", "F9", "Kill  ", "F10", "Quit"}
	var f strings.Builder
	for i := 0; i < len(keys); i += 2 {
		f.WriteString("\x1b[0m" + keys[i] + "\x1b[30;46m" + keys[i+1])
	}
	f.WriteString("\x1b[K\x1b[0m")
	lines = append(lines, f.String())
	return sample{"htop", 100, 24, "\x1b[?1049h\x1b[?25l\x1b[H" + esc(lines...), nil}
}

func dialogSample() sample {
	const cols, rows = 80, 24
	var b strings.Builder
	b.WriteString("\x1b[?1049h\x1b[44m\x1b[H\x1b[J") // ED 0: x/vt applies the pen background (BCE) for ED 0 but not for ED 2
	at := func(y, x int, s string) { fmt.Fprintf(&b, "\x1b[%d;%dH%s", y, x, s) }
	at(1, 1, "\x1b[30;46m Package configuration"+strings.Repeat(" ", cols-22)+"\x1b[44m")
	// A dialog with a shadow.
	x0, y0, w, h := 12, 4, 56, 13
	at(y0, x0, "\x1b[30;47m┌"+strings.Repeat("─", w-2)+"┐")
	for y := 1; y < h-1; y++ {
		at(y0+y, x0, "\x1b[30;47m│"+strings.Repeat(" ", w-2)+"│\x1b[40m  \x1b[47m")
	}
	at(y0+h-1, x0, "\x1b[30;47m└"+strings.Repeat("─", w-2)+"┘\x1b[40m  ")
	at(y0+h, x0+2, "\x1b[40m"+strings.Repeat(" ", w))
	at(y0, x0+(w-18)/2, "\x1b[1;31;47m┤ Configuring tz ├\x1b[22;30m")
	at(y0+2, x0+3, "\x1b[30;47mPlease select the geographic area in which")
	at(y0+3, x0+3, "you live. Choices: ✓ done, ✗ failed, ❯ next.")
	at(y0+5, x0+6, "\x1b[30;47m╔══════════════╦═══════════╗")
	at(y0+6, x0+6, "║\x1b[1;37;41m Europe       \x1b[0;30;47m║ Asia      ║")
	at(y0+7, x0+6, "╠══════════════╬═══════════╣")
	at(y0+8, x0+6, "║ America      ║ 日本 東京 ║")
	at(y0+9, x0+6, "╚══════════════╩═══════════╝")
	at(y0+h-2, x0+14, "\x1b[1;37;41m< Ok >\x1b[0;30;47m          \x1b[30;47m<Cancel>")
	// A rounded box with gauges below.
	at(19, 3, "\x1b[0;37;44m╭─ build "+strings.Repeat("─", 30)+"╮  ┏━━━━━━━━┓ ┌┬┐  ╷")
	at(20, 3, "│ \x1b[32m████████████████\x1b[33m▓▓▓▒▒▒░░░\x1b[37m        62% │  ┃ \x1b[1mheavy\x1b[22m  ┃ ├┼┤ ╶┼╴")
	at(21, 3, "│ \x1b[36m⣀⣤⣶⣿⣶⣤⣀⠀⢀⣠⣴⣾⣷⣦\x1b[37m ▁▂▃▄▅▆▇█▇▆▅▄▃▂▁ ▌▐▀▄  │  ┗━━━━━━━━┛ └┴┘  ╵")
	at(22, 3, "╰"+strings.Repeat("─", 38)+"╯  ┄┄┄ ┅┅┅ ╌╌╌ ╱╲╳ ◆◇▶◀⏺")
	// The 256-colour cube and a 24-bit ramp on the last row.
	b.WriteString("\x1b[24;1H")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "\x1b[48;5;%dm ", 16+i*5)
	}
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "\x1b[48;2;%d;%d;%dm ", 255-i*6, i*6, 128)
	}
	b.WriteString("\x1b[0m\x1b[?25l")
	return sample{"dialog", cols, rows, b.String(), []string{"日", "本", "東", "京"}}
}

// agentSample is a coding agent's TUI (after Claude Code's): rounded
// boxes, ⏺ and ⎿ markers, a diff on 24-bit backgrounds, a spinner.
func agentSample() sample {
	const w = 78
	box := func(lines ...string) []string {
		out := []string{"\x1b[38;5;174m╭" + strings.Repeat("─", w-2) + "╮\x1b[0m"}
		for _, l := range lines {
			pad := w - 4 - len([]rune(stripSGR(l)))
			out = append(out, "\x1b[38;5;174m│\x1b[0m "+l+strings.Repeat(" ", max(pad, 0))+" \x1b[38;5;174m│\x1b[0m")
		}
		return append(out, "\x1b[38;5;174m╰"+strings.Repeat("─", w-2)+"╯\x1b[0m")
	}
	green, grey := "\x1b[38;2;78;186;101m", "\x1b[38;5;246m"
	del := "\x1b[48;2;94;30;36m\x1b[38;2;255;220;220m"
	add := "\x1b[48;2;26;77;44m\x1b[38;2;220;255;220m"
	lines := box("\x1b[38;5;174m✻\x1b[0m Welcome to \x1b[1mClaude Code\x1b[0m!", "", grey+"  /help for help, /status for your current setup\x1b[0m")
	lines = append(lines,
		"",
		grey+"> "+"\x1b[0mfix the failing test in orchestrator/render",
		"",
		"\x1b[0m⏺ I'll read the test first.",
		"",
		green+"⏺\x1b[0m \x1b[1mRead\x1b[0m(orchestrator/render/render_test.go)",
		"  ⎿  Read \x1b[1m120\x1b[0m lines "+grey+"(ctrl+r to expand)\x1b[0m",
		"",
		green+"⏺\x1b[0m \x1b[1mUpdate\x1b[0m(orchestrator/render/render.go)",
		"  ⎿  Updated orchestrator/render/render.go with \x1b[1m2\x1b[0m additions and \x1b[1m1\x1b[0m removal",
		"       "+del+" 41 -\t\treturn nil"+strings.Repeat(" ", 40)+"\x1b[0m",
		"       "+add+" 41 +\t\tif err != nil {"+strings.Repeat(" ", 36)+"\x1b[0m",
		"       "+add+" 42 +\t\t\treturn err"+strings.Repeat(" ", 36)+"\x1b[0m",
		"",
		"\x1b[38;5;174m✶ Thinking… \x1b[0m"+grey+"(12s · ↓ 1.2k tokens · esc to interrupt)\x1b[0m",
		"",
	)
	lines = append(lines, box("\x1b[1m>\x1b[0m ")...)
	lines = append(lines, grey+"  ? for shortcuts\x1b[0m")
	return sample{"agent", 80, 26, "\x1b[H\x1b[2J" + esc(lines...) + "\x1b[23;5H", []string{"✻", "✶"}}
}

// stripSGR drops SGR sequences (to measure a line).
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func samples() []sample {
	return []sample{lsSample(), vimSample(), htopSample(), dialogSample(), agentSample()}
}

// gridOf paints out on a mirror of cols × rows and returns its cells.
func gridOf(t testing.TB, cols, rows int, out string) render.Grid {
	t.Helper()
	s := screen.New(cols, rows)
	defer s.Close()
	if err := s.Write([]byte(out)); err != nil {
		t.Fatal(err)
	}
	return s.Cells()
}

// TestSamples renders the samples through the real mirror (always, so
// they cannot break unseen) and writes them with -samples DIR.
func TestSamples(t *testing.T) {
	t.Parallel()
	for _, sm := range samples() {
		g := gridOf(t, sm.cols, sm.rows, sm.out)
		for _, o := range []struct {
			suffix string
			opts   render.Options
		}{{"", render.Options{}}, {"-light", render.Options{Theme: "light"}}, {"-x2", render.Options{Scale: 2}}} {
			png, facts, err := render.PNG(g, o.opts)
			if err != nil {
				t.Fatalf("%s%s: %v", sm.name, o.suffix, err)
			}
			t.Logf("%s%s: %dx%d, %d bytes, fallback %q", sm.name, o.suffix, facts.Width, facts.Height, len(png), facts.FallbackCharacters)
			if want := append([]string{}, sm.fallback...); !reflect.DeepEqual(facts.FallbackCharacters, want) {
				t.Errorf("%s%s: fallback %q, want %q", sm.name, o.suffix, facts.FallbackCharacters, want)
			}
			if *samplesDir != "" {
				if err := os.MkdirAll(*samplesDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(*samplesDir, sm.name+o.suffix+".png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
