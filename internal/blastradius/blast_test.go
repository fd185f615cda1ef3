package blastradius

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestBlastRadius measures what it costs to spread termsprawl's nodes
// over several tmux servers: for TERMSPRAWL_BLAST_NODES nodes (default
// 100) laid out as shards of k nodes per server (k from
// TERMSPRAWL_BLAST_SHARDS, default "1,8,16,32,100"), the PSS of every
// tmux server and control client (/proc/PID/smaps_rollup, summed), and
// the time from asking for a node to its control client answering a
// command: for the first node of a server (which starts the server) and
// for a node on a server that already runs.
//
// Each layout is measured twice: "infra", as termsprawl runs a server
// today (a hidden admin session, an admin and a death-waiter control
// client, one control client per node), and "lean" (per server only the
// nodes and their clients; new sessions are made through the first
// node's client). Nodes run `sleep`, so the pane programs are not
// counted; TERMSPRAWL_BLAST_HISTORY=1 adds a pass whose nodes first fill
// their 10,000-line history.
//
// It prints a Markdown table; TERMSPRAWL_BLAST_OUT=FILE also writes it
// there.
func TestBlastRadius(t *testing.T) {
	if os.Getenv("TERMSPRAWL_BLAST_BENCH") != "1" {
		t.Skip("set TERMSPRAWL_BLAST_BENCH=1 to measure tmux server layouts (a few minutes, hundreds of tmux processes)")
	}
	total := envInt("TERMSPRAWL_BLAST_NODES", 100)
	var shards []int
	for _, f := range strings.Split(envOr("TERMSPRAWL_BLAST_SHARDS", "1,8,16,32,100"), ",") {
		if k, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && k > 0 {
			shards = append(shards, k)
		}
	}
	type pass struct {
		name  string
		infra bool
		prog  string
		full  bool // wait for full history before measuring
	}
	passes := []pass{
		{"infra", true, "exec sleep 100000", false},
		{"lean", false, "exec sleep 100000", false},
	}
	if os.Getenv("TERMSPRAWL_BLAST_HISTORY") == "1" {
		passes = append(passes, pass{"infra+history", true, historyProg, true})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tmux: %s; %d nodes per layout; PSS in MiB (servers + control clients); launch = ask for a node until its control client answers\n\n", tmuxVersion(), total)
	fmt.Fprintln(&b, "| pass | nodes/server | servers | tmux processes | PSS servers | PSS per server | PSS clients | PSS total | MiB/node | first node on a new server (ms, median / p90) | node on a running server (ms, median / p90) |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, ps := range passes {
		for _, k := range shards {
			r := measureLayout(t, total, k, ps.infra, ps.prog, ps.full)
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f | %.2f | %.1f | %.1f | %.2f | %s | %s |\n",
				ps.name, k, r.servers, r.procs, mib(r.serverKiB), mib(r.serverKiB)/float64(r.servers), mib(r.clientKiB), mib(r.serverKiB+r.clientKiB),
				mib(r.serverKiB+r.clientKiB)/float64(total), msStats(r.first), msStats(r.next))
			t.Logf("%s k=%d done", ps.name, k)
		}
	}
	t.Log("\n" + b.String())
	if out := os.Getenv("TERMSPRAWL_BLAST_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// historyProg fills a pane's 10,000-line history with 100-column lines
// and then idles.
const historyProg = `yes 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789 | head -n 10100; exec sleep 100000`

type layoutResult struct {
	servers, procs       int
	serverKiB, clientKiB int64
	first, next          []time.Duration
}

// measureLayout starts ceil(total/k) servers holding total nodes, k per
// server, measures them and kills them.
func measureLayout(t *testing.T, total, k int, infra bool, prog string, full bool) layoutResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var r layoutResult
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.kill()
		}
	}()
	made := 0
	for made < total {
		s := newServer(t)
		servers = append(servers, s)
		var creator *ctl // the client that creates the server's sessions
		for i := 0; i < k && made < total; i++ {
			made++
			name := fmt.Sprintf("ts-%d", made)
			newSession := fmt.Sprintf("new-session -d -s %s -x 120 -y 40 -- sh -c '%s'", name, prog)
			start := time.Now()
			switch {
			case i == 0 && infra:
				if err := s.start(ctx); err != nil {
					t.Fatal(err)
				}
				admin, err := s.attach(ctx, adminSession)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.attach(ctx, adminSession); err != nil { // the death waiter
					t.Fatal(err)
				}
				creator = admin
				if _, err := creator.run(ctx, newSession); err != nil {
					t.Fatal(err)
				}
			case i == 0:
				if _, err := s.cli(ctx, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "--", "sh", "-c", prog); err != nil {
					t.Fatal(err)
				}
				if err := s.readPid(ctx); err != nil {
					t.Fatal(err)
				}
			default:
				if _, err := creator.run(ctx, newSession); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.attach(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.run(ctx, "display-message -p -t ="+name+": '#{pane_id}'"); err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			if i == 0 {
				r.first = append(r.first, d)
				if !infra {
					creator = c
				}
			} else {
				r.next = append(r.next, d)
			}
		}
	}
	if full {
		for _, s := range servers {
			waitHistory(t, ctx, s)
		}
	}
	time.Sleep(500 * time.Millisecond) // let tmux settle
	for _, s := range servers {
		r.serverKiB += pss(s.pid)
		r.procs++
		s.mu.Lock()
		for _, c := range s.clients {
			r.clientKiB += pss(c.pid())
			r.procs++
		}
		s.mu.Unlock()
	}
	r.servers = len(servers)
	return r
}

// waitHistory waits (at most two minutes) until every node pane of s has
// a full history. tmux trims a full history by a tenth at a time, so
// "full" is at least 9,000 of the 10,000 lines.
func waitHistory(t *testing.T, ctx context.Context, s *server) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !testenv.Until(2*time.Minute, func() bool {
		out, err := s.cli(ctx, "list-panes", "-a", "-F", "#{session_name} #{history_size}")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 2 && f[0] != adminSession {
				if n, _ := strconv.Atoi(f[1]); n < 9000 {
					return false
				}
			}
		}
		return true
	}) {
		t.Errorf("%s: histories not full after two minutes", s.socket)
	}
}

// TestLaunchCost measures, TERMSPRAWL_BLAST_RUNS times (default 20), the
// time from spawning `tmux -L X -f conf new-session -d` on a socket with
// no server to a control client attached to that session answering a
// command, and the same on a server that already runs.
func TestLaunchCost(t *testing.T) {
	if os.Getenv("TERMSPRAWL_BLAST_BENCH") != "1" {
		t.Skip("set TERMSPRAWL_BLAST_BENCH=1 to measure tmux start-up cost")
	}
	runs := envInt("TERMSPRAWL_BLAST_RUNS", 20)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var cold, warm, srvOnly []time.Duration
	running := newServer(t)
	if err := running.start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < runs; i++ {
		s := newServer(t)
		start := time.Now()
		if _, err := s.cli(ctx, "new-session", "-d", "-s", "ts-1", "-x", "120", "-y", "40", "--", "sleep", "100000"); err != nil {
			t.Fatal(err)
		}
		srvOnly = append(srvOnly, time.Since(start))
		c, err := s.attach(ctx, "ts-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.run(ctx, "display-message -p ok"); err != nil {
			t.Fatal(err)
		}
		cold = append(cold, time.Since(start))
		s.kill()

		name := fmt.Sprintf("ts-w%d", i)
		start = time.Now()
		if _, err := running.cli(ctx, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "--", "sleep", "100000"); err != nil {
			t.Fatal(err)
		}
		c, err = running.attach(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.run(ctx, "display-message -p ok"); err != nil {
			t.Fatal(err)
		}
		warm = append(warm, time.Since(start))
		c.detach()
	}
	t.Logf("tmux %s, %d runs (ms, median / p90 / max):", tmuxVersion(), runs)
	t.Logf("  new server: new-session -d returned          %s", msStats3(srvOnly))
	t.Logf("  new server: control client answered          %s", msStats3(cold))
	t.Logf("  running server: control client answered      %s", msStats3(warm))
}

func tmuxVersion() string {
	out, err := execOutput(tmuxBin(), "-V")
	if err != nil {
		return tmuxBin()
	}
	return strings.TrimSpace(out)
}

func execOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func msStats(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f / %.1f", ms(quantile(ds, 0.5)), ms(quantile(ds, 0.9)))
}

func msStats3(ds []time.Duration) string {
	return fmt.Sprintf("%.1f / %.1f / %.1f", ms(quantile(ds, 0.5)), ms(quantile(ds, 0.9)), ms(quantile(ds, 1)))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// TestFloodNeighbours measures what flooding neighbours cost a quiet node:
// the round trip of `display-message -p` on an idle node's control client
// while TERMSPRAWL_BLAST_FLOODERS nodes (default 5) print as fast as they
// can, once with the flooders on the same server and once on another
// server.
func TestFloodNeighbours(t *testing.T) {
	if os.Getenv("TERMSPRAWL_BLAST_BENCH") != "1" {
		t.Skip("set TERMSPRAWL_BLAST_BENCH=1 to measure flooding neighbours")
	}
	floods := envInt("TERMSPRAWL_BLAST_FLOODERS", 5)
	for _, same := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		quiet := newServer(t)
		if err := quiet.start(ctx); err != nil {
			t.Fatal(err)
		}
		noisy := quiet
		if !same {
			noisy = newServer(t)
			if err := noisy.start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := quiet.cli(ctx, "new-session", "-d", "-s", "ts-quiet", "-x", "120", "-y", "40", "--", "sleep", "100000"); err != nil {
			t.Fatal(err)
		}
		qc, err := quiet.attach(ctx, "ts-quiet")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < floods; i++ {
			name := fmt.Sprintf("ts-flood%d", i)
			if _, err := noisy.cli(ctx, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "--", "sh", "-c", "exec yes"); err != nil {
				t.Fatal(err)
			}
			if _, err := noisy.attach(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		// Every flood is under way (its pane has scrolled 1,000 lines)
		// before the round trips are timed.
		testenv.Eventually(t, time.Minute, func() bool {
			out, err := noisy.cli(ctx, "list-panes", "-a", "-F", "#{session_name} #{history_size}")
			if err != nil {
				t.Fatal(err)
			}
			flooding := 0
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "ts-flood") {
					if n, _ := strconv.Atoi(f[1]); n >= 1000 {
						flooding++
					}
				}
			}
			return flooding == floods
		}, testenv.Msg("the %d floods did not start", floods))
		var rtts []time.Duration
		for i := 0; i < 50; i++ {
			start := time.Now()
			if _, err := qc.run(ctx, "display-message -p ok"); err != nil {
				t.Fatal(err)
			}
			rtts = append(rtts, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		where := "same server"
		if !same {
			where = "another server"
		}
		t.Logf("quiet node's round trip with %d flooding nodes on %s (ms, median / p90 / max): %s", floods, where, msStats3(rtts))
		// Stop the floods before the next pass: these servers are done.
		quiet.kill()
		if !same {
			noisy.kill()
		}
		cancel()
	}
}
