package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ReceiptTTL is how long a stored receipt answers repeats of its key.
const ReceiptTTL = 24 * time.Hour

// receiptPruneEvery throttles the expiry sweep done by Put.
const receiptPruneEvery = 10 * time.Minute

// Receipt is what a mutation returns (CONTRACT §8).
type Receipt struct {
	Action         string `json:"action"`
	Result         any    `json:"result"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	State          any    `json:"state"`
}

// truncatedState replaces a receipt's state when the receipt would pass
// MaxReceiptBytes.
var truncatedState = TruncatedState{Truncated: true, Hint: "call terminal_snapshot"}

// TruncatedState is the state of a receipt that would have passed
// MaxReceiptBytes.
type TruncatedState struct {
	Truncated bool   `json:"truncated"`
	Hint      string `json:"hint"`
}

// Encode marshals the receipt. If it would pass MaxReceiptBytes, only State
// is replaced with {"truncated":true,"hint":"call terminal_snapshot"};
// action, result and key are always kept (even if the result alone is
// larger than the cap).
func (r Receipt) Encode() (json.RawMessage, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	if len(raw) <= MaxReceiptBytes {
		return raw, nil
	}
	r.State = truncatedState
	raw, err = json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return raw, nil
}

// ReceiptStore keeps receipts of mutations that carried an idempotency_key:
// one file per (caller node, key) in a directory, named by a hash of both,
// written atomically with mode 0600. Receipts expire after 24 h (expired
// files are swept when the store opens and, at most every 10 minutes, on
// Put) and survive restarts.
//
// Concurrency: two calls with the same (caller, key) are serialized by
// Begin; the second waits for the first and then finds its receipt with
// Lookup. If the second caller's context ends while it waits, Begin
// returns KindInProgress (retryable). Do wraps the whole sequence. One
// orchestrator owns a state directory (server.lock), so in-process locks
// are enough.
type ReceiptStore struct {
	// hookWrite, set by the package's tests only, replaces a receipt
	// write's outcome (tests make the store fail with it).
	hookWrite func(st storedReceipt) error

	dir string
	now func() time.Time
	ttl time.Duration

	// run names this store's life: an intent of another run is one a
	// killed orchestrator left, not one of a call under way.
	run string

	// mu guards locks and lastPrune.
	mu        sync.Mutex
	locks     map[string]*keyLock
	lastPrune time.Time
}

// keyLock is a context-aware mutex for one (caller, key); refs counts the
// holders and waiters so the entry can be dropped when unused.
type keyLock struct {
	ch   chan struct{} // holds one token while locked
	refs int           // guarded by ReceiptStore.mu
}

// maxStoredReceiptBytes bounds the read of one stored receipt: the receipt
// (≤ MaxReceiptBytes) plus its canonical args (≤ the request body, escaped
// once more).
const maxStoredReceiptBytes = 16 << 20

// MaxReceiptsPerCaller is the per-node quota of stored receipts (one per
// idempotency key used in the last 24 h).
const MaxReceiptsPerCaller = 1000

// storedReceipt is the file format. A pending one records the intent of a
// call that has started: written before the mutation acts, replaced by the
// receipt after, so a store that cannot record refuses the call instead of
// running it unrecorded, and a call whose outcome was never recorded is
// not run a second time.
type storedReceipt struct {
	Pending   bool            `json:"pending,omitempty"`
	Run       string          `json:"run,omitempty"`     // the store's life that wrote a pending intent
	Failure   *storedFailure  `json:"failure,omitempty"` // a final outcome that is an error (Settle)
	Caller    string          `json:"caller"`
	Key       string          `json:"key"`
	Operation string          `json:"operation"`
	Args      string          `json:"args"` // canonical args, without idempotency_key
	Created   time.Time       `json:"created"`
	Receipt   json.RawMessage `json:"receipt"`
}

// storedFailure is a final outcome that is an error: repeats of the key
// answer it.
type storedFailure struct {
	Kind    Kind           `json:"kind"`
	Msg     string         `json:"msg"`
	Details map[string]any `json:"details,omitempty"`
}

// OpenReceiptStore opens (creating it with mode 0700) a receipt directory,
// such as ReceiptsPath(stateDir), and sweeps expired receipts.
func OpenReceiptStore(dir string) (*ReceiptStore, error) {
	return openReceiptStore(dir, time.Now)
}

func openReceiptStore(dir string, now func() time.Time) (*ReceiptStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open receipt store: %w", err)
	}
	var run [8]byte
	if _, err := rand.Read(run[:]); err != nil {
		return nil, fmt.Errorf("open receipt store: %w", err)
	}
	s := &ReceiptStore{dir: dir, now: now, ttl: ReceiptTTL, locks: map[string]*keyLock{}, run: hex.EncodeToString(run[:])}
	// At open no write of this store is under way (one orchestrator per
	// state dir holds server.lock): every temporary file is a leftover of
	// a write a kill interrupted, whatever its age.
	if err := s.prune(true); err != nil {
		return nil, fmt.Errorf("open receipt store: %w", err)
	}
	return s, nil
}

// Dir returns the store's directory.
func (s *ReceiptStore) Dir() string { return s.dir }

func receiptID(caller, key string) string {
	h := sha256.New()
	h.Write([]byte(caller))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// callerDir holds one caller's receipts, so counting and forgetting them
// reads no file.
func (s *ReceiptStore) callerDir(caller string) string {
	h := sha256.Sum256([]byte(caller))
	return filepath.Join(s.dir, hex.EncodeToString(h[:16]))
}

func (s *ReceiptStore) path(caller, key string) string {
	return filepath.Join(s.callerDir(caller), receiptID(caller, key)+".json")
}

// CanonicalArgs returns args as canonical JSON (object keys sorted, no
// insignificant whitespace, empty/null as {}), without the top-level
// idempotency_key.
func CanonicalArgs(args json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(NormalizeArgs(args)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("canonical args: %w", err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "idempotency_key")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("canonical args: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func checkReceiptKey(caller, key string) error {
	if key == "" || len(key) > MaxIdempotencyKey {
		return Errorf(KindUsage, "idempotency key must be 1 to %d bytes", MaxIdempotencyKey)
	}
	if caller == "" {
		return Errorf(KindInternal, "receipt store: empty caller")
	}
	return nil
}

// Lookup returns the stored encoded receipt of (caller, key) when it was
// stored for the same operation and the same canonical args (key order
// and whitespace do not matter; idempotency_key is ignored). A key used
// with another operation or other args is *Error KindConflict. Missing or
// expired: (nil, false, nil).
func (s *ReceiptStore) Lookup(caller, key, op string, args json.RawMessage) (json.RawMessage, bool, error) {
	if err := checkReceiptKey(caller, key); err != nil {
		return nil, false, err
	}
	canon, err := CanonicalArgs(args)
	if err != nil {
		return nil, false, Errorf(KindUsage, "idempotency key %q: %w", key, err)
	}
	p := s.path(caller, key)
	data, err := ReadFileBounded(p, maxStoredReceiptBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, Errorf(KindInternal, "read receipt: %w", err)
	}
	var st storedReceipt
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, false, Errorf(KindInternal, "read receipt %s: %w", p, err)
	}
	if s.now().Sub(st.Created) >= s.ttl {
		_ = os.Remove(p)
		return nil, false, nil
	}
	if st.Caller != caller || st.Key != key {
		return nil, false, Errorf(KindInternal, "receipt %s belongs to another caller or key", p)
	}
	if st.Pending && st.Run != s.run {
		// Left by a killed orchestrator and not settled on adoption
		// (Settle): final, and not run again.
		return nil, false, Errorf(KindConflict, "a call with idempotency key %q started at %s and termsprawl stopped before its outcome was recorded; whether it acted is not known, so it is not run again: look at the terminal's state (terminal_snapshot) and use a new key to act again",
			key, st.Created.Format(time.RFC3339)).WithDetails("idempotency_key", key).WithDetails("interrupted", true)
	}
	if st.Pending {
		return nil, false, Errorf(KindInProgress, "a call with idempotency key %q started at %s and its outcome was never recorded (termsprawl stopped, or its disk was full): it is not run again; look at the terminal's state (terminal_snapshot) and use a new key to act again",
			key, st.Created.Format(time.RFC3339)).WithDetails("idempotency_key", key)
	}
	if st.Operation != op {
		return nil, false, Errorf(KindConflict, "idempotency key %q was already used for %s within the last 24 h; use a new key for %s", key, st.Operation, op).
			WithDetails("idempotency_key", key)
	}
	if st.Args != canon {
		return nil, false, Errorf(KindConflict, "idempotency key %q was already used for %s with different arguments; repeat the exact same arguments or use a new key", key, op).
			WithDetails("idempotency_key", key)
	}
	if f := st.Failure; f != nil {
		e := Errorf(f.Kind, "%s", f.Msg)
		for k, v := range f.Details {
			e = e.WithDetails(k, v)
		}
		return nil, false, e.WithDetails("idempotency_key", key)
	}
	return st.Receipt, true, nil
}

// Settle records the final outcome of a call a killed orchestrator left
// pending (its intent, written by another run of the store): receipt, or
// else failure. Repeats of the key then answer it. A key that holds no
// pending intent of op is left alone (its outcome was stored, or it was
// never used), and so is one of a call under way in this run.
func (s *ReceiptStore) Settle(caller, key, op string, receipt json.RawMessage, failure *Error) error {
	return s.withInterrupted(caller, key, op, "settle receipt", func(_ string, st storedReceipt) error {
		st.Pending, st.Run = false, ""
		switch {
		case failure != nil:
			details := map[string]any{}
			for k, v := range failure.Details {
				details[k] = v
			}
			st.Failure = &storedFailure{Kind: failure.Kind, Msg: failure.Error(), Details: details}
		case receipt != nil && json.Valid(receipt):
			st.Receipt = receipt
		default:
			return Errorf(KindInternal, "settle receipt: neither a valid receipt nor a failure")
		}
		return s.writeStored(st, st.Created)
	})
}

// DropInterrupted drops the pending intent of op that a killed
// orchestrator left for (caller, key), so the key may be used again (the
// call is known to have failed, and failures are not stored). Anything
// else stored for the key is left alone.
func (s *ReceiptStore) DropInterrupted(caller, key, op string) error {
	return s.withInterrupted(caller, key, op, "drop receipt intent", func(p string, _ storedReceipt) error {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Errorf(KindInternal, "drop receipt intent: %w", err)
		}
		return nil
	})
}

// withInterrupted runs f, under the key's lock, on the pending intent of
// op that another run of the store (a killed orchestrator) left for
// (caller, key), with the path of its file. A key holding no such intent
// (its outcome was stored, it was never used, or its call is under way in
// this run) is left alone. what names the action in errors.
func (s *ReceiptStore) withInterrupted(caller, key, op, what string, f func(path string, st storedReceipt) error) error {
	if err := checkReceiptKey(caller, key); err != nil {
		return err
	}
	unlock, err := s.Begin(context.Background(), caller, key)
	if err != nil {
		return err
	}
	defer unlock()
	p := s.path(caller, key)
	data, err := ReadFileBounded(p, maxStoredReceiptBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return Errorf(KindInternal, "%s: %w", what, err)
	}
	var st storedReceipt
	if err := json.Unmarshal(data, &st); err != nil {
		return Errorf(KindInternal, "%s %s: %w", what, p, err)
	}
	if !st.Pending || st.Run == s.run || st.Operation != op || st.Caller != caller || st.Key != key {
		return nil
	}
	return f(p, st)
}

// Put stores the encoded receipt of (caller, key) for op and args.
func (s *ReceiptStore) Put(caller, key, op string, args json.RawMessage, receipt json.RawMessage) error {
	if !json.Valid(receipt) {
		return Errorf(KindInternal, "store receipt: receipt is not valid JSON")
	}
	return s.write(storedReceipt{Caller: caller, Key: key, Operation: op, Receipt: receipt}, args)
}

// putIntent records that a call with (caller, key) is about to act.
func (s *ReceiptStore) putIntent(caller, key, op string, args json.RawMessage) error {
	return s.write(storedReceipt{Pending: true, Run: s.run, Caller: caller, Key: key, Operation: op}, args)
}

// write stores st (with args canonicalised and the store's time).
func (s *ReceiptStore) write(st storedReceipt, args json.RawMessage) error {
	if err := checkReceiptKey(st.Caller, st.Key); err != nil {
		return err
	}
	if s.hookWrite != nil {
		if err := s.hookWrite(st); err != nil {
			return Errorf(KindInternal, "store receipt: %w", err)
		}
	}
	canon, err := CanonicalArgs(args)
	if err != nil {
		return Errorf(KindUsage, "store receipt: %w", err)
	}
	created := s.now()
	st.Args, st.Created = canon, created
	return s.writeStored(st, created)
}

// writeStored writes st (its args already canonical), dated created.
func (s *ReceiptStore) writeStored(st storedReceipt, created time.Time) error {
	data, err := json.Marshal(st)
	if err != nil {
		return Errorf(KindInternal, "store receipt: %w", err)
	}
	p := s.path(st.Caller, st.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return Errorf(KindInternal, "store receipt: %w", err)
	}
	if err := WriteFileAtomic(p, data); err != nil {
		return Errorf(KindInternal, "store receipt: %w", err)
	}
	// The mtime follows the store's clock so the sweep can use it.
	_ = os.Chtimes(p, created, created)

	s.mu.Lock()
	due := created.Sub(s.lastPrune) >= receiptPruneEvery
	s.mu.Unlock()
	if due {
		return s.Prune()
	}
	return nil
}

// Prune removes receipts older than 24 h (by file modification time).
func (s *ReceiptStore) Prune() error { return s.prune(false) }

// prune is Prune; allTemp removes every temporary file, not only those
// over an hour old.
func (s *ReceiptStore) prune(allTemp bool) error {
	now := s.now()
	s.mu.Lock()
	s.lastPrune = now
	s.mu.Unlock()
	if err := s.pruneDir(s.dir, now, allTemp); err != nil {
		return err
	}
	subdirs, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("prune receipts: %w", err)
	}
	for _, d := range subdirs {
		if d.IsDir() {
			sub := filepath.Join(s.dir, d.Name())
			if err := s.pruneDir(sub, now, allTemp); err != nil {
				return err
			}
			_ = os.Remove(sub) // only if empty
		}
	}
	return nil
}

// pruneDir removes the expired receipts and stale temporary files of one
// directory.
func (s *ReceiptStore) pruneDir(dir string, now time.Time, allTemp bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("prune receipts: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		stale := now.Sub(info.ModTime()) >= s.ttl
		// Leftover temporary files of an interrupted write.
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") {
			stale = allTemp || now.Sub(info.ModTime()) >= time.Hour
		} else if !strings.HasSuffix(name, ".json") {
			continue
		}
		if stale {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
	return nil
}

// Begin locks (caller, key) until the returned unlock is called (unlock is
// idempotent). If ctx ends while another call holds the key, it returns
// *Error KindInProgress (retryable): that call's outcome is not known yet.
func (s *ReceiptStore) Begin(ctx context.Context, caller, key string) (unlock func(), err error) {
	id := receiptID(caller, key)
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		s.locks[id] = l
	}
	l.refs++
	s.mu.Unlock()

	select {
	case l.ch <- struct{}{}: // free: take it even if ctx is already done
	default:
		select {
		case l.ch <- struct{}{}:
		case <-ctx.Done():
			s.release(id, l)
			e := Errorf(KindInProgress, "another call with idempotency key %q is still running; repeat the call later to get its receipt", key)
			e.Retryable = true
			e.Err = ctx.Err()
			return nil, e.WithDetails("idempotency_key", key)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-l.ch
			s.release(id, l)
		})
	}, nil
}

func (s *ReceiptStore) release(id string, l *keyLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.refs--
	if l.refs == 0 && s.locks[id] == l {
		delete(s.locks, id)
	}
}

// Do runs a mutation under its idempotency key. Without a key it just runs
// run. With one it locks the key (Begin), returns the stored receipt if
// there is one (replayed = true), else runs run and stores its receipt
// when run succeeds. Failures are not stored, so a failed call may be
// repeated with the same key. If storing fails, the receipt is returned
// together with the error: the mutation did happen.
func (s *ReceiptStore) Do(ctx context.Context, caller, key, op string, args json.RawMessage, run func() (json.RawMessage, error)) (receipt json.RawMessage, replayed bool, err error) {
	if key == "" {
		receipt, err = run()
		return receipt, false, err
	}
	unlock, err := s.Begin(ctx, caller, key)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if stored, ok, err := s.Lookup(caller, key, op, args); err != nil || ok {
		return stored, ok, err
	}
	if n := s.count(caller); n >= MaxReceiptsPerCaller {
		return nil, false, Errorf(KindRejected, "quota: this node holds %d receipts of the last 24 h (the limit is %d): repeat calls without an idempotency_key, or wait for old keys to expire", n, MaxReceiptsPerCaller).
			WithDetails("quota", "receipts").WithDetails("limit", MaxReceiptsPerCaller)
	}
	// Record the intent first: if it cannot be stored, nothing is done.
	if err := s.putIntent(caller, key, op, args); err != nil {
		return nil, false, Errorf(KindNotRun, "the idempotency key could not be recorded, so nothing was done (is the state dir's disk full?): %w", err).
			WithDetails("idempotency_key", key)
	}
	receipt, err = run()
	if err != nil {
		// It failed: drop the intent, so the same key may be used again.
		_ = os.Remove(s.path(caller, key))
		return nil, false, err
	}
	if err := s.Put(caller, key, op, args, receipt); err != nil {
		return receipt, false, err
	}
	return receipt, false, nil
}

// count returns how many receipts (and intents) caller holds.
func (s *ReceiptStore) count(caller string) int {
	entries, err := os.ReadDir(s.callerDir(caller))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// ForgetCaller removes every receipt of caller (a node incarnation whose
// life ended): a later node that reuses the id replays nothing.
func (s *ReceiptStore) ForgetCaller(caller string) error {
	if err := os.RemoveAll(s.callerDir(caller)); err != nil {
		return fmt.Errorf("forget receipts: %w", err)
	}
	return nil
}
