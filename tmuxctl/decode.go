package tmuxctl

// AppendDecoded appends the bytes that tmux escaped in a %output payload to
// dst and returns the extended slice. tmux writes bytes below 0x20 and the
// backslash as a backslash and three octal digits; every other byte is sent
// as it is (UTF-8 sequences may be split between lines, so the result is a
// byte stream, not text). A malformed escape is copied through literally:
// a lossy guess would be worse than a visible backslash.
func AppendDecoded(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\\' {
			// Copy the run up to the next backslash in one go.
			j := i + 1
			for j < len(src) && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
			continue
		}
		if i+3 < len(src) && isOctal(src[i+1]) && isOctal(src[i+2]) && isOctal(src[i+3]) {
			v := (int(src[i+1]-'0') << 6) | (int(src[i+2]-'0') << 3) | int(src[i+3]-'0')
			if v <= 0xff {
				dst = append(dst, byte(v))
				i += 3
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Encode escapes data the way tmux 3.3a escapes %output payloads. It is the
// inverse of AppendDecoded and exists for tests, fuzzing and benchmarks that
// replay recorded streams.
func Encode(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(data)/8)
	for _, c := range data {
		if c < 0x20 || c == '\\' {
			out = append(out, '\\', '0'+(c>>6), '0'+((c>>3)&7), '0'+(c&7))
			continue
		}
		out = append(out, c)
	}
	return out
}
