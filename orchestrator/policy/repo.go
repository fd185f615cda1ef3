package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// RepoFile is a repository's policy file, beneath its root.
const RepoFile = ".termsprawl/policy.toml"

// MaxRepoFile bounds the repository's policy file.
const MaxRepoFile = 1 << 20

// ParseRepoFile parses a repository's policy.toml: top-level allow, ask
// and deny lists, nothing else. Errors name the line and the fix.
func ParseRepoFile(b []byte) (Rules, error) {
	var r Rules
	md, err := toml.Decode(string(b), &r)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Rules{}, fmt.Errorf("%s line %d: %s", RepoFile, pe.Position.Line, pe.Message)
		}
		return Rules{}, fmt.Errorf("%s: %w", RepoFile, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		var keys []string
		for _, k := range und {
			keys = append(keys, k.String())
		}
		return Rules{}, fmt.Errorf("%s: unknown key %s: the file has only allow, ask and deny lists of rules", RepoFile, strings.Join(keys, ", "))
	}
	if err := r.Check(); err != nil {
		return Rules{}, fmt.Errorf("%s: %w", RepoFile, err)
	}
	return r, nil
}

// ReadRepoFile reads root's policy file through os.Root (never out of
// the repository through a link); (nil, nil) when there is none.
func ReadRepoFile(root string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	defer r.Close()
	f, err := r.Open(filepath.FromSlash(RepoFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s in %s: %w", RepoFile, root, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s in %s is not a regular file", RepoFile, root)
	}
	b := make([]byte, MaxRepoFile+1)
	n, _ := io.ReadFull(f, b)
	if n > MaxRepoFile {
		return nil, fmt.Errorf("%s in %s is over %d KiB", RepoFile, root, MaxRepoFile>>10)
	}
	return b[:n], nil
}
