package tmuxctl

import (
	"bytes"
	"testing"
)

func TestAppendDecoded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []byte
	}{
		{"hello", []byte("hello")},
		{`\033[0m`, []byte("\x1b[0m")},
		{`a\015\012b`, []byte("a\r\nb")},
		{`\134`, []byte(`\`)},
		{`\000\037`, []byte{0, 0x1f}},
		{"héllo", []byte("héllo")},
		{`\`, []byte(`\`)},       // truncated escape stays literal
		{`\01`, []byte(`\01`)},   // truncated escape stays literal
		{`\08x`, []byte(`\08x`)}, // not octal
		{`\777`, []byte(`\777`)}, // 511 is not a byte: literal
	}
	for _, tt := range tests {
		if got := AppendDecoded(nil, []byte(tt.in)); !bytes.Equal(got, tt.want) {
			t.Errorf("AppendDecoded(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEncodeDecodeEveryByte(t *testing.T) {
	t.Parallel()
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	enc := Encode(all)
	for _, c := range enc {
		if c < 0x20 {
			t.Fatalf("encoded stream contains control byte %#x", c)
		}
	}
	if got := AppendDecoded(nil, enc); !bytes.Equal(got, all) {
		t.Fatalf("round trip lost bytes:\n got %q\nwant %q", got, all)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`\033[1mhi\015\012`))
	f.Add([]byte{0xe2, 0x82})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Decoding arbitrary input never panics and never grows it.
		if got := AppendDecoded(nil, data); len(got) > len(data) {
			t.Fatalf("decoded %d bytes from %d", len(got), len(data))
		}
		// Whatever the bytes, Encode then decode is the identity.
		if got := AppendDecoded(nil, Encode(data)); !bytes.Equal(got, data) {
			t.Fatalf("round trip: got %q want %q", got, data)
		}
	})
}
