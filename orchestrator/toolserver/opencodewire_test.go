package toolserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// The plugin names termsprawlctl as a JSON string literal: a path with
// quotes, backslashes or a newline cannot break out of it.
func TestOpencodePluginSourceQuotesTheCtlPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/usr/bin/termsprawlctl", `/tmp/a"b\c` + "\n" + `");process.exit(1);("`, "/tmp/\u2028x"} {
		src, err := opencodePluginSource(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(p)
		if !strings.Contains(src, "const CTL = "+string(want)+"\n") || strings.Contains(src, "__TERMSPRAWL_CTL__") {
			t.Fatalf("%q: the plugin does not name it as %s", p, want)
		}
	}
}
