package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/sqlitefile"
)

// ReadChunks calls fn with each chunk of collection in the index file at
// path, in the order the rows were written (rid), its text, URL, id and
// hash read back as the store reads them, whatever the file's format
// (packedText, urlSQL, hexSQL). Vectors are not read. The file is opened
// read-only, so nothing is migrated or written: it serves tools outside
// the service that need the indexed text (deploy/chunkdump hands it to
// the bm25s baseline of make bench). An error from fn stops the read and
// is returned; a missing file is ENOTFOUND, a file of a newer format than
// this build reads UNAVAILABLE.
func ReadChunks(ctx context.Context, path, collection string, fn func(kgagent.Chunk) error) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return kgagent.Errorf(kgagent.ENOTFOUND, "corpus index %s does not exist", path)
	}
	db, err := sql.Open("sqlite", sqlitefile.URI(path)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return dbErr(err, "open "+path)
	}
	defer db.Close()
	var ver int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&ver); err != nil {
		return dbErr(err, "open "+path)
	}
	if ver > formatNewest {
		return newerFormat(filepath.Base(path), ver)
	}
	q := `SELECT ` + idSQL("k.") + `, d.collection, d.doc_url, ` + urlSQL("d.doc_url", "k.url") + `, COALESCE(k.title, d.title), k.headings, ` + anchorSQL("k.") + `, k.ordinal, k.body, ` + hashSQL("k.") + `
		FROM ` + collRows + ` ORDER BY d.lo`
	var legacy int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('chunks') WHERE name = 'collection'`).Scan(&legacy); err != nil {
		return dbErr(err, "open "+path)
	}
	if legacy > 0 {
		// an older file (read only here: it is not migrated) holds
		// each row's collection, document URL and title
		q = `SELECT ` + hexSQL("id") + `, collection, doc_url, ` + urlSQL("doc_url", "url") + `, title, headings, anchor, ordinal, body, ` + hexSQL("hash") + `
		FROM chunks WHERE collection = ?1 ORDER BY rid`
	}
	rows, err := db.QueryContext(ctx, q, collection)
	if err != nil {
		return dbErr(err, "read chunks")
	}
	defer rows.Close()
	for rows.Next() {
		var c kgagent.Chunk
		var hp string
		var dc derivedCols
		if err := rows.Scan(&dc.id, &c.Collection, &c.DocURL, &c.URL, &c.Title, &hp, &dc.anchor, &c.Ordinal, (*packedText)(&c.Text), &dc.hash); err != nil {
			return dbErr(err, "read chunks")
		}
		dc.fill(&c)
		_ = json.Unmarshal([]byte(hp), &c.HeadingPath)
		if len(c.HeadingPath) == 0 {
			c.HeadingPath = nil
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return dbErr(rows.Err(), "read chunks")
}
