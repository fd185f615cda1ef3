package render

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"runtime"
	"sync"
)

// The PNG encoder. image/png spends most of its time choosing a filter
// for every row and then compressing 3 bytes a pixel on one core. A
// terminal screenshot compresses better unfiltered (the same glyphs repeat
// along a row, and filtering breaks the repeats), is usually paletted (one
// byte a pixel), and its rows are compressed in bands on every core: each
// band is a run of deflate blocks ending in a sync flush, so the bands
// concatenate into one zlib stream (as pigz does), and their Adler-32
// checksums combine.

// minBandRows is the fewest rows in a band worth a goroutine.
const minBandRows = 64

// maxBands bounds the goroutines of one encoding.
const maxBands = 4

var bandPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var flatePool = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// pngBand is one compressed run of rows.
type pngBand struct {
	buf    *bytes.Buffer
	adler  uint32
	rawLen int
}

// encodePNG encodes the surface.
func encodePNG(s *surface) []byte {
	rowLen := 1 + s.w*s.bpp // filter byte (0: none) and the pixels
	n := min(maxBands, runtime.GOMAXPROCS(0), max(1, s.h/minBandRows))
	bands := make([]pngBand, n)
	var wg sync.WaitGroup
	for i := range bands {
		y0, y1 := s.h*i/n, s.h*(i+1)/n
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &bands[i]
			b.buf = bandPool.Get().(*bytes.Buffer)
			b.buf.Reset()
			zw := flatePool.Get().(*flate.Writer)
			defer flatePool.Put(zw)
			zw.Reset(b.buf)
			ad := adler32.New()
			row := make([]byte, rowLen)
			stride := s.w * s.bpp
			for y := y0; y < y1; y++ {
				copy(row[1:], s.pix[y*stride:(y+1)*stride])
				_, _ = zw.Write(row)
				_, _ = ad.Write(row)
			}
			if i == n-1 {
				_ = zw.Close()
			} else {
				_ = zw.Flush()
			}
			b.adler = ad.Sum32()
			b.rawLen = (y1 - y0) * rowLen
		}()
	}
	wg.Wait()

	zlen := 2 + 4 // zlib header and Adler-32
	sum := uint32(1)
	for i := range bands {
		zlen += bands[i].buf.Len()
		sum = adler32Combine(sum, bands[i].adler, bands[i].rawLen)
	}
	plte := 0
	if s.bpp == 1 {
		plte = 12 + 3*len(s.pal)
	}
	out := bytes.NewBuffer(make([]byte, 0, 8+25+plte+12+zlen+12))
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(s.w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(s.h))
	ihdr[8] = 8 // bit depth
	if s.bpp == 1 {
		ihdr[9] = 3 // paletted
	} else {
		ihdr[9] = 2 // truecolour
	}
	writeChunk(out, "IHDR", ihdr[:])
	if s.bpp == 1 {
		pal := make([]byte, 0, 3*len(s.pal))
		for _, c := range s.pal {
			pal = append(pal, c.r, c.g, c.b)
		}
		writeChunk(out, "PLTE", pal)
	}
	// IDAT: the zlib stream straight from the bands.
	var word [4]byte
	binary.BigEndian.PutUint32(word[:], uint32(zlen))
	out.Write(word[:])
	start := out.Len()
	out.WriteString("IDAT")
	out.Write([]byte{0x78, 0x01}) // zlib: deflate, 32 KiB window, fastest
	for i := range bands {
		out.Write(bands[i].buf.Bytes())
		bandPool.Put(bands[i].buf)
	}
	binary.BigEndian.PutUint32(word[:], sum)
	out.Write(word[:])
	binary.BigEndian.PutUint32(word[:], crc32.ChecksumIEEE(out.Bytes()[start:]))
	out.Write(word[:])
	writeChunk(out, "IEND", nil)
	return out.Bytes()
}

func writeChunk(w *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	w.Write(n[:])
	w.WriteString(typ)
	w.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	w.Write(n[:])
}

// adler32Combine is the Adler-32 of a‖b from the checksums of a and b and
// the length of b (zlib's adler32_combine).
func adler32Combine(a, b uint32, lenB int) uint32 {
	const mod = 65521
	rem := uint64(lenB % mod)
	a1, b1 := uint64(a&0xffff), uint64(a>>16)
	a2, b2 := uint64(b&0xffff), uint64(b>>16)
	s1 := (a1 + a2 + mod - 1) % mod
	s2 := (b1 + b2 + rem*a1 + mod - rem) % mod
	return uint32(s2<<16 | s1)
}
