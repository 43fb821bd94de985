package sqlite

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/kgagent/kgagent"
)

// Chunk bodies are stored compressed (format 3): each body on its own, so
// a row is still read alone. New rows are S2 blocks (klauspost/compress/s2)
// after the byte tagS2: on the Python docs' bodies S2 costs ~0.07 CPU-s to
// encode and ~0.02 s to decode per ingest against ~0.33 and ~0.12 s for
// zstd, for 74% of the text instead of 59% (DECISIONS.md). Rows that the
// first format 3 build wrote hold zstd frames, which start with their magic
// byte 0x28, never tagS2; both read back. Bodies the block would not
// shorten (short ones) stay text.
var textDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(maxTextLen))
})

// maxTextLen bounds a stored body's decoded length (chunk bodies are a few
// KB): a corrupt length header must not make a read allocate gigabytes.
const maxTextLen = 16 << 20

// tagS2 is the first byte of a body stored as an S2 block.
const tagS2 = 0x01

// minPackedText is the shortest body worth compressing.
const minPackedText = 64

// packText is the stored form of a chunk body: tagS2 and its S2 block
// ([]byte, a blob) when that is shorter than the text, else the text.
func packText(s string) any {
	if len(s) < minPackedText {
		return s
	}
	buf := make([]byte, 1+s2.MaxEncodedLen(len(s)))
	buf[0] = tagS2
	n := 1 + len(s2.EncodeBetter(buf[1:], []byte(s)))
	if n >= len(s) {
		return s
	}
	return buf[:n:n]
}

// packedText scans a chunk body column: text as it is, a blob as packText
// (or the first format 3 build, zstd) wrote it. Scan into
// (*packedText)(&chunk.Text).
type packedText string

// Scan implements sql.Scanner.
func (p *packedText) Scan(v any) error {
	switch v := v.(type) {
	case string:
		*p = packedText(v)
	case []byte:
		b, err := unpackText(v)
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

// unpackText decodes a body blob packText (or the first format 3 build)
// wrote, refusing one that says it decodes to more than maxTextLen.
func unpackText(v []byte) ([]byte, error) {
	if len(v) > 0 && v[0] == tagS2 {
		n, err := s2.DecodedLen(v[1:])
		if err != nil {
			return nil, err
		}
		if n > maxTextLen {
			return nil, fmt.Errorf("S2 block says %d bytes, over %d", n, maxTextLen)
		}
		return s2.Decode(nil, v[1:])
	}
	d, err := textDecoder()
	if err != nil {
		return nil, err
	}
	return d.DecodeAll(v, nil)
}

// bodyCol scans a chunk body column as packedText does, except that a
// body that does not decode leaves its error in err and scans as "", so
// the caller can leave that one row out instead of failing the query.
type bodyCol struct {
	text *string
	err  error
}

// Scan implements sql.Scanner.
func (b *bodyCol) Scan(v any) error {
	b.err = (*packedText)(b.text).Scan(v)
	return nil
}

// corruptBody records a chunk left out because its stored body does not
// decode: the first of a read (n == 0) is logged with err and the chunk's
// attrs (slog key-value pairs: its rid or ordinal, its document);
// corruptDone logs how many a read left out. It returns n+1.
func (x *Index) corruptBody(n int, what string, err error, attrs ...any) int {
	x.corruptBodies.Add(1)
	if n == 0 {
		slog.Warn("corpus index: a chunk's stored body is corrupt; the chunk is left out (re-ingest its document to restore it)",
			append([]any{"read", what, "err", err}, attrs...)...)
	}
	return n + 1
}

// corruptDone logs how many chunks a read left out for corrupt bodies,
// when more than the one corruptBody logged.
func corruptDone(n int, what string) {
	if n > 1 {
		slog.Warn("corpus index: chunks left out for corrupt bodies", "read", what, "chunks", n)
	}
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

// urlSQL reads packURL's form back as the chunk's URL: url is the stored
// column, doc the document URL's expression (docs.doc_url from format 7
// on).
func urlSQL(doc, url string) string {
	return `CASE WHEN typeof(` + url + `) = 'blob' THEN CAST(` + url + ` AS TEXT) WHEN ` + url + ` = '' OR substr(` + url + `, 1, 1) = '#' THEN ` + doc + ` || ` + url + ` ELSE ` + url + ` END`
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

// A chunk's id, text hash and anchor are stored as an empty blob where
// they are what the chunker derives (format 8): the id derivedID
// (collection, document URL, ordinal), the hash the sha256 of the text in
// hex, the anchor the URL's fragment (the URL being the document's with
// "#" and the anchor). A stored id or hash is otherwise packHex's form, an
// anchor text, so an empty blob is never a value. Readers read the
// columns through derivedSQL and fill the chunk with derivedCols.fill.
// The three rules are this package's, fixed with the format: a file keeps
// meaning what it was written to mean if the chunker's rules change.
var derivedMark = []byte{}

// isMark reports whether a stored form is derivedMark.
func isMark(v any) bool {
	b, ok := v.([]byte)
	return ok && len(b) == 0
}

// packID is the stored form of c's id in collection's document docURL.
func packID(collection, docURL string, c *kgagent.Chunk) any {
	if c.ID == derivedID(collection, docURL, c.Ordinal) {
		return derivedMark
	}
	return packHex(c.ID)
}

// packHash is the stored form of c's text hash.
func packHash(c *kgagent.Chunk) any {
	if len(c.Hash) == 2*sha256.Size && c.Hash == textHash(c.Text) {
		return derivedMark
	}
	return packHex(c.Hash)
}

// packAnchor is the stored form of c's anchor in the document docURL.
func packAnchor(docURL string, c *kgagent.Chunk) any {
	if c.Anchor != "" && len(c.URL) == len(docURL)+1+len(c.Anchor) && c.URL == docURL+"#"+c.Anchor {
		return derivedMark
	}
	return c.Anchor
}

// derivedID is the id that format 8 stores as derivedMark: the chunker's
// (corpus.ChunkID) when the format was made, the first 32 hex digits of
// the sha256 of collection, NUL, document URL, NUL, ordinal in decimal.
// It is written out here, not called, because the stored marks mean this
// rule: were corpus.ChunkID to change, a mark read through it would give
// an id no chunk was written with (and that graph.db's triples do not
// name), silently; with the rule here the chunker's new ids are merely
// stored in full (TestDerivedIDRule).
func derivedID(collection, docURL string, ordinal int) string {
	h := sha256.New()
	for _, s := range []string{collection, "\x00", docURL, "\x00", strconv.Itoa(ordinal)} {
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// textHash is the hash the chunker gives a chunk's text.
func textHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// derivedSQL reads the column col as read does, or NULL where it holds
// derivedMark.
func derivedSQL(col, read string) string {
	return `CASE WHEN typeof(` + col + `) = 'blob' AND length(` + col + `) = 0 THEN NULL ELSE ` + read + ` END`
}

// idSQL, hashSQL and anchorSQL read a chunk row's (aliased p) id, hash
// and anchor for derivedCols.
func idSQL(p string) string     { return derivedSQL(p+"id", hexSQL(p+"id")) }
func hashSQL(p string) string   { return derivedSQL(p+"hash", hexSQL(p+"hash")) }
func anchorSQL(p string) string { return derivedSQL(p+"anchor", p+"anchor") }

// derivedCols are a chunk's id, anchor and hash as idSQL, anchorSQL and
// hashSQL read them.
type derivedCols struct{ id, anchor, hash sql.NullString }

// fill sets c's id, anchor and hash, deriving those stored as derivedMark
// from c's collection, document URL, ordinal, URL and text (read before).
func (d *derivedCols) fill(c *kgagent.Chunk) {
	c.ID, c.Anchor, c.Hash = d.id.String, d.anchor.String, d.hash.String
	if !d.id.Valid {
		c.ID = derivedID(c.Collection, c.DocURL, c.Ordinal)
	}
	if !d.anchor.Valid {
		c.Anchor = strings.TrimPrefix(c.URL, c.DocURL+"#")
	}
	if !d.hash.Valid {
		c.Hash = textHash(c.Text)
	}
}
