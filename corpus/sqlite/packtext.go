package sqlite

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/kgagent/kgagent"
)

// Chunk bodies are stored compressed (format 3): each body on its own as
// one zstd frame, so a row is still read alone. On the OpenJDK 17 API docs
// (209k chunks, 74.3 MB of body text) that keeps 38.6 MB; bodies the frame
// would not shorten (short ones) stay text. See DECISIONS.md.
var (
	textEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		return e
	})
	textDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		return d
	})
)

// minPackedText is the shortest body worth a frame (a frame's header and
// checksum alone are ~10 bytes).
const minPackedText = 64

// packText is the stored form of a chunk body: a zstd frame ([]byte, a
// blob) when that is shorter than the text, else the text itself.
func packText(s string) any {
	if len(s) < minPackedText {
		return s
	}
	b := textEncoder().EncodeAll([]byte(s), make([]byte, 0, len(s)/2))
	if len(b) >= len(s) {
		return s
	}
	return b
}

// packedText scans a chunk body column: text as it is, a blob as the zstd
// frame packText wrote. Scan into (*packedText)(&chunk.Text).
type packedText string

// Scan implements sql.Scanner.
func (p *packedText) Scan(v any) error {
	switch v := v.(type) {
	case string:
		*p = packedText(v)
	case []byte:
		b, err := textDecoder().DecodeAll(v, nil)
		if err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "corpus index: a stored chunk body is corrupt")
		}
		*p = packedText(b)
	case nil:
		*p = ""
	default:
		return fmt.Errorf("corpus index: chunk body stored as %T", v)
	}
	return nil
}
