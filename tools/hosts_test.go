package tools

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseHostFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
		want    HostSpec
	}{
		{in: "big=me@big.example", want: HostSpec{Name: "big", Dest: "me@big.example"}},
		{in: "b_2=alias", want: HostSpec{Name: "b_2", Dest: "alias"}},
		{in: "big", err: "write NAME=DEST"},
		{in: "=dest", err: "name \"\""},
		{in: "local=x", err: "reserved"},
		{in: "a b=x", err: "name \"a b\""},
		{in: "big=", err: "not an ssh destination"},
		{in: "big=-oProxyCommand=x", err: "not an ssh destination"},
		{in: "big=a;b", err: "not an ssh destination"},
		{in: "big=/home/me/project", err: "is a path on this machine"},
		{in: "big=./here", err: "is a path on this machine"},
		{in: "big=~/x", err: "is a path on this machine"},
		{in: "big=..", err: "is a path on this machine"},
		{in: "big=ssh://me@big:2222", want: HostSpec{Name: "big", Dest: "ssh://me@big:2222"}},
		{in: "Big.Box=x", err: "name \"Big.Box\": use letters, digits"},
		{in: "-big=x", err: "name \"-big\""},
		{in: "a/b=x", err: "name \"a/b\""},
	} {
		got, err := ParseHostFlag(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrHost) {
				t.Errorf("ParseHostFlag(%q) = %v, want an ErrHost with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseHostFlag(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestMergeHostsCollisions(t *testing.T) {
	t.Parallel()
	file := []HostSpec{{Name: "big", Dest: "me@big"}}
	// The same definition again is no change.
	out, changed, err := MergeHosts(file, []HostSpec{{Name: "big", Dest: "me@big"}}, nil)
	if err != nil || changed || len(out) != 1 {
		t.Fatalf("same host again: %v %v %v", out, changed, err)
	}
	// A new one is added, and a ctl set.
	out, changed, err = MergeHosts(file, []HostSpec{{Name: "gpu", Dest: "gpu1"}}, map[string]string{"gpu": "/opt/bin/termsprawlctl"})
	if err != nil || !changed || len(out) != 2 || out[1].Ctl != "/opt/bin/termsprawlctl" {
		t.Fatalf("new host: %+v %v %v", out, changed, err)
	}
	for name, tc := range map[string]struct {
		flags []HostSpec
		ctls  map[string]string
		want  string
	}{
		"file":     {flags: []HostSpec{{Name: "big", Dest: "other@big"}}, want: "already me@big in hosts.json"},
		"twice":    {flags: []HostSpec{{Name: "x", Dest: "a"}, {Name: "x", Dest: "b"}}, want: "given twice"},
		"ctl":      {ctls: map[string]string{"nope": "/x"}, want: "not defined"},
		"relative": {ctls: map[string]string{"big": "bin/termsprawlctl"}, want: "not an absolute path"},
	} {
		if _, _, err := MergeHosts(file, tc.flags, tc.ctls); err == nil || !errors.Is(err, ErrHost) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestHostsFileRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if hs, err := ReadHosts(dir); err != nil || hs != nil {
		t.Fatalf("no file: %v %v", hs, err)
	}
	want := []HostSpec{{Name: "big", Dest: "me@big", SSHOptions: []string{"-p", "2222"}, Socket: "ts-big"}}
	if err := WriteHosts(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHosts(dir)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for body, msg := range map[string]string{
		`{"hosts":[{"name":"a","dest":"x"},{"name":"a","dest":"y"}]}`: "twice",
		`{"hosts":[{"name":"a","dest":"x","port":22}]}`:               "unknown field",
		`{"hosts":[{"name":"a","dest":"x","socket":"a b"}]}`:          "socket",
		`[`: "parse",
	} {
		if err := os.WriteFile(HostsPath(dir), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHosts(dir); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", body, err, msg)
		}
	}
}

func TestHostAttachArgv(t *testing.T) {
	t.Parallel()
	h := HostSpec{Name: "big", Dest: "me@big", SSHOptions: []string{"-p", "2222"}}
	want := []string{"ssh", "-t", "-p", "2222", "me@big", "--", "tmux", "-L", DefaultSocket, "attach-session", "-r", "-t", "=ts-a"}
	if got := HostAttachArgv(h, "ts-a", true); !reflect.DeepEqual(got, want) {
		t.Fatalf("attach argv %q", got)
	}
}
