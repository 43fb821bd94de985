package sqlite

import (
	"database/sql"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kgagent/kgagent"
)

// TestPackedColumnsRoundTrip: whatever packURL, packHex and packText store,
// urlSQL, hexSQL and packedText read back unchanged, including URLs that
// are not their document's, empty or bare fragments, and ids that are not
// lowercase hex.
func TestPackedColumnsRoundTrip(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE chunks (doc_url TEXT, url, id, hash, body)`); err != nil {
		t.Fatal(err)
	}
	long := "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog again."
	cases := []struct{ doc, url, id, body string }{
		{"http://h/a.html", "http://h/a.html", "0123456789abcdef0123456789abcdef", long},
		{"http://h/a.html", "http://h/a.html#sec-1", "00", "short"},
		{"http://h/a.html", "http://h/a.html.bak", "ABCDEF", ""},
		{"http://h/a.html", "http://h/b.html#x", "abc", long + "é"},
		{"http://h/a.html", "", "", "x"},
		{"http://h/a.html", "#frag", "zz", long},
		{"", "#frag", "0g", long},
		{"", "", "a", ""},
		{"http://h/ü.html", "http://h/ü.html#ß", "ff", "ü"},
	}
	for _, c := range cases {
		if _, err := db.Exec(`INSERT INTO chunks VALUES (?, ?, ?, ?, ?)`, c.doc, packURL(c.doc, c.url), packHex(c.id), packHex(c.id), packText(c.body)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT ` + urlSQL("doc_url", "url") + `, ` + hexSQL("id") + `, ` + hexSQL("hash") + `, body FROM chunks ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var url, id, hash string
		var body packedText
		if err := rows.Scan(&url, &id, &hash, &body); err != nil {
			t.Fatal(err)
		}
		c := cases[i]
		if url != c.url || id != c.id || hash != c.id || string(body) != c.body {
			t.Errorf("case %d: read %q %q %q %q, stored %q %q %q", i, url, id, hash, body, c.url, c.id, c.body)
		}
	}
	if i != len(cases) {
		t.Fatalf("read %d rows of %d", i, len(cases))
	}
	if _, ok := packText(long).([]byte); !ok {
		t.Error("a long repetitive body was not compressed")
	}
	if _, ok := packURL("http://h/a.html", "http://h/a.html#s").(string); !ok {
		t.Error("a fragment of the document's URL was not stored as text")
	}
	// A zstd frame, as the first format 3 build stored bodies, reads back;
	// a corrupt blob of either kind is UNAVAILABLE.
	frame := textDecoderTestEncode(t, long)
	var body packedText
	if err := body.Scan(frame); err != nil || string(body) != long {
		t.Errorf("zstd body: %q %v", body, err)
	}
	for _, bad := range [][]byte{{tagS2, 0xff, 0xff, 0xff}, {0x28, 0xb5, 0x2f, 0xfd, 0x00}} {
		if err := body.Scan(bad); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("corrupt body %x: %v, want %s", bad, err, kgagent.EUNAVAILABLE)
		}
	}
}

// textDecoderTestEncode is s as one zstd frame.
func textDecoderTestEncode(t testing.TB, s string) []byte {
	t.Helper()
	e, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.EncodeAll([]byte(s), nil)
}
