//go:build unix

package tools

import (
	"errors"
	"os"
	"syscall"
)

// IsNoSpace reports whether err says the disk (or the quota) is full.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// allocatedBytes is what the file's blocks hold (st_blocks is in 512-byte
// units), at least its size.
func allocatedBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return max(int64(st.Blocks)*512, fi.Size())
	}
	return fi.Size()
}
