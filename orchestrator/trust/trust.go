// Package trust keeps the human's approvals of a repository's own
// termsprawl files (CONTRACT §26, §28): `.termsprawl/worktree.json`,
// whose setup runs commands, and `.termsprawl/policy.toml`, whose rules
// allow an agent's tools. A repository is written by whoever wrote its
// commits, so neither counts until the human has approved that exact
// content for that repository; a changed file needs approving again.
//
// Approvals are content hashes (SHA-256) per repository root, kept in
// <state>/trust.json (0600), written atomically and read afresh on every
// Check, so an approval from the CLI counts at once in the orchestrator.
// Only a human's surface calls Approve; an agent's launch never does.
//
// It knows nothing of nodes.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// FileName is the approvals file in the state directory.
const FileName = "trust.json"

// Dir is the repository's folder of termsprawl files.
const Dir = ".termsprawl"

// The files a human approves.
const (
	WorktreeFile = "worktree.json"
	PolicyFile   = "policy.toml"
)

// Files are the names Approve looks for in a repository's .termsprawl/.
var Files = []string{WorktreeFile, PolicyFile}

// MaxFileSize bounds what is read of an approved file.
const MaxFileSize = 1 << 20

// Approved is one file approved at one content.
type Approved struct {
	Name string // worktree.json or policy.toml
	Path string // its path
	Hash string // "sha256:…"
}

// Store is the approvals of one state directory.
type Store struct {
	path string
	mu   sync.Mutex // serialises this process's read-modify-write of the file
}

// Open is the store of a state directory (the file need not exist).
func Open(stateDir string) *Store {
	return &Store{path: filepath.Join(stateDir, FileName)}
}

// file is trust.json.
type file struct {
	Version int `json:"version"`
	// Repos maps a repository root (absolute, links resolved) to its
	// approved files' hashes by name.
	Repos map[string]map[string]string `json:"repos"`
}

// Hash is the form in which contents are approved.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Root is the canonical form of a repository's root: absolute, links
// resolved.
func Root(repoRoot string) (string, error) {
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// ErrNothing is returned by Approve when the repository has none of the
// files.
var ErrNothing = errors.New("nothing to approve")

// Approve approves the repository's .termsprawl/ files at their current
// content. Each file is read beneath the repository (a link that leads
// out of it is refused) and must be a regular file of at most
// MaxFileSize.
func (s *Store) Approve(repoRoot string) ([]Approved, error) {
	root, err := Root(repoRoot)
	if err != nil {
		return nil, err
	}
	var out []Approved
	for _, name := range Files {
		b, err := ReadFile(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Approved{Name: name, Path: filepath.Join(root, Dir, name), Hash: Hash(b)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no %s/%s nor %s/%s: %w", root, Dir, WorktreeFile, Dir, PolicyFile, ErrNothing)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, a := range out {
		m[a.Name] = a.Hash
	}
	f.Repos[root] = m
	return out, s.write(f)
}

// Check reports whether content is what the human approved as the file
// name of the repository. A missing or unreadable trust.json approves
// nothing.
func (s *Store) Check(repoRoot, name string, content []byte) bool {
	root, err := Root(repoRoot)
	if err != nil {
		return false
	}
	s.mu.Lock()
	f, err := s.read()
	s.mu.Unlock()
	if err != nil {
		return false
	}
	h, ok := f.Repos[root][name]
	return ok && h == Hash(content)
}

// List is every approval, by repository then name.
func (s *Store) List() (map[string][]Approved, error) {
	s.mu.Lock()
	f, err := s.read()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := map[string][]Approved{}
	for root, m := range f.Repos {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out[root] = append(out[root], Approved{Name: n, Path: filepath.Join(root, Dir, n), Hash: m[n]})
		}
	}
	return out, nil
}

// ReadFile reads .termsprawl/NAME of a repository beneath its root: a
// symbolic link that leads out of the repository, a file that is not
// regular (a FIFO, a device) or one larger than MaxFileSize is refused.
func ReadFile(repoRoot, name string) ([]byte, error) {
	r, err := os.OpenRoot(repoRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rel := filepath.Join(Dir, name)
	st, err := r.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if st.Mode()&fs.ModeSymlink == 0 && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Join(repoRoot, rel))
	}
	fh, err := r.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(repoRoot, rel), err)
	}
	defer fh.Close()
	st, err = fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Join(repoRoot, rel))
	}
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Join(repoRoot, rel), MaxFileSize)
	}
	return b, nil
}

func (s *Store) read() (*file, error) {
	f := &file{Version: 1, Repos: map[string]map[string]string{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	if f.Repos == nil {
		f.Repos = map[string]map[string]string{}
	}
	return f, nil
}

func (s *Store) write(f *file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), FileName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}
