package record

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// FuzzParseCast: parseCast never panics, and agrees with encoding/json on
// every line: an event it reads is a JSON array [number, string, string]
// with the same values, and the line it stops at is not one.
func FuzzParseCast(f *testing.F) {
	hdr := `{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n"
	for _, s := range []string{
		hdr + `[0.1, "o", "hello\r\n"]` + "\n" + `[0.2, "r", "100x30"]` + "\n" + `[0.3, "m", "mark"]` + "\n",
		hdr + `[1e3,"o","\u001b[1m\ud83d\ude42\/\"\\\b\f\n\r\t"]` + "\n",
		hdr + `[ 0 , "o" , "\ud800x\udc00" ] ` + "\n" + `[-0.5, "i", "k"]`,
		hdr + `[0.1, "o", "` + "\xff\xfe" + `"]` + "\n" + `[0.2, "o", "cut`,
		hdr + `[01, "o", "x"]` + "\n",
		hdr + `[1.5e400, "o", "x"]` + "\n" + `[1., "o", "x"]` + "\n" + `[.5, "o", "x"]`,
		hdr + `[0.1, "o", "x", 4]` + "\n" + `[0.1, "o"]`,
		`{"version":1}`,
		"\xef\xbb\xbf" + hdr + "\r\n" + `[0.1, "o", "crlf"]` + "\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := parseCast(raw)
		if err != nil {
			return
		}
		// Walk the lines as parseCast does.
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return
		}
		n := 0
		for pos := nl + 1; pos < len(raw); {
			end := bytes.IndexByte(raw[pos:], '\n')
			if end < 0 {
				end = len(raw) - pos
			}
			line := bytes.TrimRight(raw[pos:pos+end], " \t\r")
			pos += end + 1
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			want, ok := jsonEvent(line)
			if n == len(c.events) {
				if ok {
					t.Fatalf("parseCast stopped at %q, which encoding/json reads as %v", line, want)
				}
				if !c.truncated {
					t.Fatalf("parseCast stopped at %q without saying so", line)
				}
				return
			}
			if !ok {
				t.Fatalf("parseCast read %q, which encoding/json refuses", line)
			}
			e := &c.events[n]
			if got := string(c.data(e, nil)); got != want.data {
				t.Fatalf("%q: data %q, encoding/json %q", line, got, want.data)
			}
			code := byte(0)
			if len(want.code) == 1 && bytes.IndexByte([]byte("oirm"), want.code[0]) >= 0 {
				code = want.code[0]
			}
			if e.code != code {
				t.Fatalf("%q: code %q, encoding/json %q", line, e.code, want.code)
			}
			if n > 0 && e.us < c.events[n-1].us {
				t.Fatalf("times go back: %d after %d", e.us, c.events[n-1].us)
			}
			if n == 0 || want.us >= c.events[n-1].us {
				if e.us != want.us {
					t.Fatalf("%q: time %d µs, encoding/json %d", line, e.us, want.us)
				}
			}
			if _, dlen, err := parseEventLine(line); err != nil || dlen < 0 || dlen > e.span() {
				t.Fatalf("%q: decoded length %d for %d bytes (%v)", line, dlen, e.span(), err)
			}
			n++
		}
		if n != len(c.events) {
			t.Fatalf("parseCast read %d events from %d lines", len(c.events), n)
		}
	})
}

type jsonEv struct {
	us         int64
	code, data string
}

// jsonEvent reads a line with encoding/json as [number, string, string].
func jsonEvent(line []byte) (jsonEv, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(line, &arr) != nil || len(arr) != 3 {
		return jsonEv{}, false
	}
	var num json.Number
	dec := json.NewDecoder(bytes.NewReader(arr[0]))
	dec.UseNumber()
	if dec.Decode(&num) != nil || bytes.TrimSpace(arr[0])[0] == '"' {
		return jsonEv{}, false
	}
	var e jsonEv
	if json.Unmarshal(arr[1], &e.code) != nil || json.Unmarshal(arr[2], &e.data) != nil {
		return jsonEv{}, false
	}
	if bytes.TrimSpace(arr[1])[0] != '"' || bytes.TrimSpace(arr[2])[0] != '"' {
		return jsonEv{}, false
	}
	v, _ := strconv.ParseFloat(num.String(), 64)
	switch {
	case math.IsNaN(v) || v < 0:
		v = 0
	case v > 1e12:
		v = 1e12
	}
	e.us = int64(math.Round(v * 1e6))
	return e, true
}

// FuzzReplayShortcuts: whatever the output, squeezing, keyframes and
// restores give the screens of a plain replay.
func FuzzReplayShortcuts(f *testing.F) {
	for _, s := range []string{
		"a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh\r\ni\r\nj\r\nk\r\nl\r\n\x1b[3b",
		"\x1b[?1049h\x1b[2;3Hx\x1b7\x1b[?1049l\x1b8\x1b[?1049hy",
		"\x1b(0lqk\x1b*0\x1bnq\r\n\x1b[?6h\x1b[2;3r\x1b[H\n\n\n\x1b[?7lwwwwwwwwwwww",
		"\x1b]2;title\x07\x1b[?1000h\x1b[?2004h\x1b[1\n;2H\x1b[?25l\x1b[s\x1b[?69h\x1b[2;5s",
		"é\u0301 漢字🙂\x1bP$q\x1b\\\x1b_x\x1b\\\x18\x1b[3\x1a4m\x1bc",
	} {
		f.Add([]byte(s), []byte{3, 9, 1, 40, 2})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		if len(data) > 4096 {
			return
		}
		var evs []castEv
		for len(data) > 0 {
			n := len(data)
			if len(cuts) > 0 {
				n = min(n, 1+int(cuts[0])%64)
				if cuts[0]%17 == 0 {
					evs = append(evs, castEv{code: 'r', data: strconv.Itoa(4+int(cuts[0])%9) + "x" + strconv.Itoa(2+int(cuts[0])%5)})
				}
				cuts = cuts[1:]
			}
			evs = append(evs, castEv{code: 'o', data: string(data[:n])})
			data = data[n:]
		}
		raw := buildCast(10, 4, evs)
		tr := openCast(t, raw, 32)
		want := plainFrames(t, tr.c)
		check := func(n int) {
			got, err := tr.frame(n)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffScreens(got, want[n]); d != "" {
				t.Fatalf("after %d of %d events: %s", n, len(want)-1, d)
			}
		}
		check(len(want) - 1)
		for n := len(want) - 1; n >= 0; n-- {
			check(n)
		}
	})
}
