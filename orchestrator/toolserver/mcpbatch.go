package toolserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// batchVersion is the one MCP protocol version with JSON-RPC batches.
const batchVersion = "2025-03-26"

// mcpBatchConcurrency bounds the elements of one batch that run at once
// (a variable so tests can watch the bound).
var mcpBatchConcurrency = 4

// BatchMemoryBudget bounds the replies that batches hold together until
// they are sent (CONTRACT §31): a batch of 40 screenshots would otherwise
// hold 40 PNGs in base64, twice (the replies and the array written). An
// element whose reply does not fit is answered with the budget's error
// (unavailable, retryable) instead; the others keep theirs.
const BatchMemoryBudget = 64 << 20

// batchMemory is the budget of every batch of the process.
var batchMemory = tools.NewMemoryBudget("batch replies", BatchMemoryBudget)

// testHookBatchElement, when set, runs as a batch element starts; the
// func it returns runs as the element ends.
var testHookBatchElement func() func()

// serveBatch answers a JSON-RPC batch. Protocol 2025-03-26 requires
// servers to take batches; later versions removed them and send the
// Mcp-Protocol-Version header, so a batch that names another version is
// refused. Each element runs through the engine as its own POST on the
// same session, at most mcpBatchConcurrency at once; each element counts
// as one request for the token's rate limit (the POST itself too), and
// one over it is answered with the limit's error instead of running. The
// replies go back as one JSON array (202 without a body when the batch
// held only notifications). initialize may not be part of a batch.
func (d *mcpDoor) serveBatch(w http.ResponseWriter, r *http.Request, id tools.Identity, body []byte) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != batchVersion {
		rpcFail(w, http.StatusBadRequest, codeInvalidBatch, "JSON-RPC batches are only part of MCP protocol %s; this request speaks %s: send one message per POST", batchVersion, clipText(v, 20))
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil || len(items) == 0 {
		rpcFail(w, http.StatusBadRequest, codeInvalidBatch, "an empty or malformed JSON-RPC batch")
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		if !d.sessions.begin(sid, id.Incarnation) {
			rpcFail(w, http.StatusNotFound, codeNoSession, "unknown or expired MCP session %q: send initialize again", clipText(sid, 40))
			return
		}
		defer d.sessions.end(sid)
	}
	replies := make([][]json.RawMessage, len(items))
	var grantsMu sync.Mutex // guards grants
	var grants []*tools.MemoryGrant
	defer func() {
		for _, g := range grants {
			g.Release()
		}
	}()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, mcpBatchConcurrency))
	for i, it := range items {
		if jsonMethod(it) == "initialize" {
			replies[i] = []json.RawMessage{batchError(it, codeInvalidBatch, "initialize must not be part of a batch")}
			continue
		}
		if ok, wait := d.limiter.Allow(id.Incarnation); !ok {
			if hasID(it) {
				replies[i] = []json.RawMessage{batchError(it, codeLimited, fmt.Sprintf("rate limit: at most %d MCP requests per second per token (bursts of %d; each element of a batch counts); retry after %s",
					mcpRatePerSecond, mcpRateBurst, wait.Round(time.Millisecond)))}
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if testHookBatchElement != nil {
				defer testHookBatchElement()()
			}
			sub := r.Clone(r.Context())
			sub.Body = io.NopCloser(bytes.NewReader(it))
			sub.ContentLength = int64(len(it))
			rec := &batchRecorder{header: http.Header{}}
			d.engine.ServeHTTP(rec, sub)
			rs := rec.responses()
			var n int64
			for _, m := range rs {
				n += int64(len(m))
			}
			// Held twice: the reply, and its copy in the array written.
			g, err := batchMemory.Take(2*n, fmt.Sprintf("the reply to element %d of a batch", i+1))
			if err != nil {
				if hasID(it) {
					rs = []json.RawMessage{batchError(it, codeLimited, err.Error())}
				} else {
					rs = nil
				}
			} else {
				grantsMu.Lock()
				grants = append(grants, g)
				grantsMu.Unlock()
			}
			replies[i] = rs
		}()
	}
	wg.Wait()
	var out []json.RawMessage
	for _, rs := range replies {
		out = append(out, rs...)
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if sid != "" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	data, _ := json.Marshal(out)
	_, _ = w.Write(data)
}

// hasID reports whether a JSON-RPC message carries an id (a request, not
// a notification).
func hasID(item json.RawMessage) bool {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal(item, &m) == nil && len(m.ID) > 0
}

func batchError(item json.RawMessage, code int, msg string) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(item, &m)
	if len(m.ID) == 0 {
		m.ID = json.RawMessage("null")
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": code, "message": msg}})
	return data
}

// batchRecorder collects the engine's reply to one batch element: a JSON
// body, or an event stream whose responses (messages with an id and a
// result or error) are kept and whose notifications are dropped.
type batchRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *batchRecorder) Header() http.Header         { return b.header }
func (b *batchRecorder) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *batchRecorder) WriteHeader(status int)      { b.status = status }

func (b *batchRecorder) responses() []json.RawMessage {
	if b.status == http.StatusAccepted || b.body.Len() == 0 {
		return nil
	}
	if strings.HasPrefix(b.header.Get("Content-Type"), "text/event-stream") {
		var out []json.RawMessage
		sc := bufio.NewScanner(&b.body)
		sc.Buffer(make([]byte, 0, 64<<10), 2*tools.MaxBodyBytes)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			msg := json.RawMessage(strings.TrimSpace(data))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(msg, &m) == nil && len(m.ID) > 0 && (m.Result != nil || m.Error != nil) {
				out = append(out, msg)
			}
		}
		return out
	}
	t := bytes.TrimSpace(b.body.Bytes())
	if !json.Valid(t) {
		return nil
	}
	return []json.RawMessage{append(json.RawMessage(nil), t...)}
}
