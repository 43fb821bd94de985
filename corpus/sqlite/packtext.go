package sqlite

import (
	"encoding/hex"
	"fmt"
	"strings"
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

// Format 4 stores a chunk's URL relative to its document's and its id and
// hash as bytes (DECISIONS.md). The SQL expressions below read them back
// as text, for the table aliased by the prefix given ("" or "k.").

// packURL is the stored form of a chunk URL of document doc: the part
// after doc when url is doc itself or doc#fragment (empty or starting with
// '#': a full URL never does), else url; a url that is empty or starts
// with '#' on its own is stored as a blob, which urlSQL reads as it is.
func packURL(doc, url string) any {
	if rest, ok := strings.CutPrefix(url, doc); ok && (rest == "" || rest[0] == '#') {
		return rest
	}
	if url == "" || url[0] == '#' {
		return []byte(url)
	}
	return url
}

// urlSQL reads packURL's form back as the chunk's URL.
func urlSQL(p string) string {
	return `CASE WHEN typeof(` + p + `url) = 'blob' THEN CAST(` + p + `url AS TEXT) WHEN ` + p + `url = '' OR substr(` + p + `url, 1, 1) = '#' THEN ` + p + `doc_url || ` + p + `url ELSE ` + p + `url END`
}

// packHex is the stored form of a chunk id or hash: its bytes when it is
// lowercase hex (as the chunker makes them), else the text.
func packHex(s string) any {
	if len(s) == 0 || len(s)%2 != 0 {
		return s
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return s
		}
	}
	b, _ := hex.DecodeString(s)
	return b
}

// hexSQL reads packHex's form of column col back as text.
func hexSQL(col string) string {
	return `CASE typeof(` + col + `) WHEN 'blob' THEN lower(hex(` + col + `)) ELSE ` + col + ` END`
}
