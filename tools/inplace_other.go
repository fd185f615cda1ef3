//go:build !unix

package tools

import (
	"errors"
	"os"
	"syscall"
)

// IsNoSpace reports whether err says the disk is full.
func IsNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// allocatedBytes is the file's size (block counts are not known here).
func allocatedBytes(fi os.FileInfo) int64 { return fi.Size() }
