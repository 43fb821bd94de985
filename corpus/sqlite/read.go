package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

var (
	_ corpus.DocumentReader = (*Index)(nil)
	_ corpus.TermsIndex     = (*Index)(nil)
)

// Documents lists the documents of collection ordered by URL, after the URL
// after, at most limit; the title is that of the document's first chunk
// (lowest ordinal, then row id), read in the same statement from the
// document's row id range.
func (x *Index) Documents(ctx context.Context, collection, after string, limit int) ([]corpus.DocumentInfo, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT d.doc_url, d.n, d.title
		FROM docs d WHERE d.collection = ? AND d.doc_url > ? ORDER BY d.doc_url LIMIT ?`, collection, after, limit)
	if err != nil {
		return nil, dbErr(err, "list documents")
	}
	defer rows.Close()
	var out []corpus.DocumentInfo
	for rows.Next() {
		var d corpus.DocumentInfo
		var title sql.NullString
		if err := rows.Scan(&d.URL, &d.Chunks, &title); err != nil {
			return nil, dbErr(err, "list documents")
		}
		if !title.Valid {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: read document title: document %s has no chunk", d.URL)
		}
		d.Title = title.String
		out = append(out, d)
	}
	return out, dbErr(rows.Err(), "list documents")
}

// DocumentChunks returns the chunks of docURL in collection by ordinal.
func (x *Index) DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT `+idSQL("k.")+`, d.collection, d.doc_url, `+urlSQL("d.doc_url", "k.url")+`, COALESCE(k.title, d.title), k.headings, `+anchorSQL("k.")+`, k.ordinal, k.body, `+hashSQL("k.")+`
		FROM docs d JOIN chunks k ON k.rid BETWEEN d.lo AND d.hi WHERE d.collection = ?1 AND d.doc_url = ?2 ORDER BY k.ordinal`, collection, docURL)
	if err != nil {
		return nil, dbErr(err, "read document")
	}
	defer rows.Close()
	var out []kgagent.Chunk
	corrupt := 0
	defer func() { corruptDone(corrupt, "read document "+docURL) }()
	for rows.Next() {
		var c kgagent.Chunk
		var hp string
		var dc derivedCols
		body := bodyCol{text: &c.Text}
		if err := rows.Scan(&dc.id, &c.Collection, &c.DocURL, &c.URL, &c.Title, &hp, &dc.anchor, &c.Ordinal, &body, &dc.hash); err != nil {
			return nil, dbErr(err, "read document")
		}
		if body.err != nil {
			corrupt = x.corruptBody(corrupt, "read document", body.err, "ordinal", c.Ordinal, "doc_url", docURL)
			continue
		}
		dc.fill(&c)
		_ = json.Unmarshal([]byte(hp), &c.HeadingPath)
		if len(c.HeadingPath) == 0 {
			c.HeadingPath = nil
		}
		out = append(out, c)
	}
	return out, dbErr(rows.Err(), "read document")
}
