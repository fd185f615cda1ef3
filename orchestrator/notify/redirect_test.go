package notify

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A webhook that redirects is not followed (a regression guard of issue
// 34's audit): the redirect is the answer, reported as a failure, and the
// redirect's target never receives the notification.
func TestWebhookFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var hit atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	defer target.Close()
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	answer, err := Webhook{URL: redir.URL + "/x"}.Send(t.Context(), Event{Node: "n1", Title: "n1 needs you", Text: "Bash: ls"})
	if err == nil || !strings.Contains(answer, "307") {
		t.Fatalf("answer %q, err %v", answer, err)
	}
	if hit.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}
