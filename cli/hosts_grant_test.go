package cli

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// up --host-allow-elsewhere NAME saves the grant in hosts.json; a name
// that is not a host is refused.
func TestHostAllowElsewhere(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	h := &human{stateDir: dir, upOpts: upCmd{Hosts: []string{"rem=me@rem.example", "other=me@other.example"}, HostAllowElsewhere: []string{"rem"}}}
	hosts, err := h.resolveHosts()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := tools.ReadHosts(dir)
	if err != nil || len(saved) != 2 || len(hosts) != 2 {
		t.Fatalf("hosts.json %+v %v", saved, err)
	}
	for _, s := range saved {
		if s.LaunchElsewhere != (s.Name == "rem") {
			t.Fatalf("host %s launch_elsewhere %v", s.Name, s.LaunchElsewhere)
		}
	}
	h = &human{stateDir: dir, upOpts: upCmd{HostAllowElsewhere: []string{"nope"}}}
	if _, err := h.resolveHosts(); !errors.Is(err, tools.ErrHost) {
		t.Fatalf("an unknown host: %v", err)
	}
}
