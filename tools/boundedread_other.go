//go:build !unix

package tools

// openNonblock is not needed where FIFOs do not block an open.
const openNonblock = 0
