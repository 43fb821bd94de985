package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Group commit (internal/groupcommit). ReplaceDocument callers queue their
// writes; whoever finds the queue idle leads: it runs up to maxGroup queued
// writes in one transaction, commits once, updates the search copies and
// wakes the callers, then hands the lead to the next waiter. An
// ingestion's queued page writes (documents and their entity index) write
// concurrently, so they share commits instead of paying one each (the
// Python docs made ~1,050 commits; the store's CPU went 1.00 -> 0.68 s).
// Each document is still atomic: a group is one transaction, and when one
// write of a group fails the transaction is rolled back and each write
// runs again in a transaction of its own, so the failure is its alone.

// maxGroup caps the document writes that share one transaction.
const maxGroup = 32

// writeJob is one queued ReplaceDocument.
type writeJob struct {
	ctx                context.Context
	collection, docURL string
	chunks             []kgagent.Chunk
	vectors            [][]float32
	dim                int
	terms              []chunkTerms        // the chunks' terms, when taken before the write (else nil)
	given              []corpus.ChunkTerms // the chunks' terms as the caller took them (else nil)
	// q8 holds, when terms does, each chunk's vector as the insert
	// quantised it (appendQ8Bytes, dim+4 bytes a chunk): the search copy
	// takes it as it is instead of quantising the vector again
	q8 []byte

	created bool // the write's transaction created the collection

	removed, added []int64    // rowids, set by writeDoc
	sem            []semCarry // semantic vectors kept for added chunks
	version        int64      // the collection's write version after it
	err            error
}

// chunkTerms is chunk i's terms under the field weights w: from the
// caller's terms when it gave them, else tokenised.
func (j *writeJob) chunkTerms(i int, w [3]float32) chunkTerms {
	if j.given != nil {
		return chunkTermsFrom(&j.given[i], w)
	}
	return chunkTermsOf(&j.chunks[i], w)
}

// write queues j and returns when it is committed (or failed).
func (x *Index) write(j *writeJob) error {
	if err := j.ctx.Err(); err != nil {
		return err
	}
	x.writes.Do(j, x.runGroup)
	return j.err
}

// runGroup commits the group's writes in one transaction, or, when one
// fails, each in its own; then it applies the committed ones to the search
// copies, in queue order, still under writeMu so a load cannot miss them.
func (x *Index) runGroup(group []*writeJob) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if len(group) == 1 || !x.runTx(group) {
		for _, g := range group {
			g.removed, g.added, g.err, g.created = nil, nil, nil, false
			if !x.runTx([]*writeJob{g}) && g.err == nil {
				g.err = kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: write failed")
			}
		}
	}
	x.cacheMu.Lock()
	defer x.cacheMu.Unlock()
	for _, g := range group {
		if g.err != nil {
			continue
		}
		m := x.cache[g.collection]
		// created marks every job of the transaction that created the
		// collection; only one that brought chunks has its dimension (a
		// page with no chunks, such as the entity collection's entry of a
		// page without entities, has 0): one queued before it made a copy
		// of 0 dimensions, which the rows then went into unsearchable and
		// its snapshot was stale for the next process (about one Python
		// docs ingest in five left an entity collection's snapshot of 131
		// bytes that serve rebuilt).
		if m == nil && g.created && len(g.added) > 0 && x.keep[g.collection] {
			// kept and new: the copy starts empty, as SQLite's rows did
			m = newMemColl(g.dim, x.weights())
			m.snapVersion.Store(-1)
			x.cache[g.collection] = m
			if x.keepFrom != nil {
				x.keepFrom[g.collection] = 0 // all it holds is the crawl's
			}
		}
		if m == nil {
			continue
		}
		m.version = g.version
		m.remove(g.removed)
		for i, rid := range g.added {
			var ct chunkTerms
			if g.terms != nil {
				ct = g.terms[i]
			} else {
				ct = g.chunkTerms(i, m.weights)
			}
			if g.q8 != nil && m.dim == g.dim {
				m.addQ8With(rid, g.docURL, &ct, g.q8[i*(g.dim+4):(i+1)*(g.dim+4)])
			} else {
				m.addWith(rid, g.docURL, &ct, g.vectors[i])
			}
		}
		for _, c := range g.sem {
			if slot, ok := m.slotOf(g.added[c.i]); ok {
				m.setSemQ8(c.model, slot, c.blob)
			}
		}
		if m.needsCompaction() {
			delete(x.cache, g.collection) // reloaded, compact, on next search
		}
		if x.keep[g.collection] && x.keepMax > 0 && x.keptBytes() > x.keepMax {
			// too big to keep all along: built again when needed
			delete(x.cache, g.collection)
			delete(x.keep, g.collection)
		}
	}
}

// runTx runs jobs in one transaction. A job canceled before its turn is
// skipped with its context's error. It reports false when a job failed
// (with a single job, that job's err is set) and nothing was committed.
func (x *Index) runTx(jobs []*writeJob) bool {
	tx, err := x.db.BeginTx(context.Background(), nil)
	if err != nil {
		for _, g := range jobs {
			g.err = dbErr(err, "begin")
		}
		return len(jobs) == 1
	}
	defer tx.Rollback()
	t := &txWrite{x: x, tx: tx}
	var ran []*writeJob
	for _, g := range jobs {
		if err := g.ctx.Err(); err != nil {
			g.err = err
			continue
		}
		if err := t.writeDoc(g); err != nil {
			g.err = err
			return len(jobs) == 1
		}
		ran = append(ran, g)
	}
	if len(ran) == 0 {
		return true
	}
	for _, g := range ran {
		g.created = t.created[g.collection]
	}
	if err := t.bumpVersions(ran); err != nil {
		for _, g := range ran {
			g.err = err
		}
		return len(jobs) == 1
	}
	if err := tx.Commit(); err != nil {
		for _, g := range jobs {
			if g.err == nil {
				g.err = dbErr(err, "commit")
			}
		}
		return len(jobs) == 1
	}
	return true
}

// insSizes are the row counts of the multi-row INSERTs, largest first: a
// document's chunks go 16 rows per statement, the rest in at most four
// more (8, 4, 2, 1) (see DECISIONS.md for what it saved).
var insSizes = [...]int{16, 8, 4, 2, 1}

// rowParams is the number of parameters of one row in an insert.
const rowParams = 10

// insertSQL is the INSERT of rows chunk rows: rowParams anonymous
// parameters per row (see txWrite.insert). Anonymous, because the driver
// reads every parameter's name before binding it, and a numbered one's
// name costs it an allocation and a parse. A row holds neither its
// collection nor its document URL: its document's docs row does.
func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO chunks(rid, id, url, title, headings, anchor, ordinal, body, hash, vec) VALUES `)
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?" + strings.Repeat(", ?", rowParams-1) + ")")
	}
	return b.String()
}

// writeStmts are the write path's statements, prepared once on the
// database (database/sql keeps each prepared per connection) and bound to
// every write transaction, instead of being parsed again per document.
type writeStmts struct {
	dim, newColl, maxRid, docRids, delDoc, bump, setVersion *sql.Stmt
	delDocRow, setDoc                                       *sql.Stmt
	semOld, semIns                                          *sql.Stmt                // semantic.go
	hitRows                                                 *sql.Stmt                // loadRows (sqlite.go)
	ins                                                     [len(insSizes)]*sql.Stmt // by insSizes
}

// prepareWrites prepares x.st.
func (x *Index) prepareWrites() error {
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&x.st.dim, `SELECT dim FROM collections WHERE name = ?`},
		{&x.st.newColl, `INSERT INTO collections(name, dim) VALUES (?, ?)`},
		{&x.st.maxRid, `SELECT COALESCE(MAX(rid), 0) FROM chunks`},
		{&x.st.docRids, `SELECT rid FROM chunks WHERE ` + docRange("")},
		{&x.st.delDoc, `DELETE FROM chunks WHERE ` + docRange("")},
		{&x.st.delDocRow, `DELETE FROM docs WHERE collection = ?1 AND doc_url = ?2`},
		{&x.st.setDoc, `INSERT OR REPLACE INTO docs(collection, doc_url, lo, hi, n, title) VALUES (?, ?, ?, ?, ?, ?)`},
		{&x.st.bump, `UPDATE writes SET n = n + 1 WHERE id = 1 RETURNING n`},
		{&x.st.setVersion, `UPDATE collections SET version = ? WHERE name = ?`},
		{&x.st.semOld, `SELECT ` + hashSQL("k.") + `, CASE WHEN typeof(k.hash) = 'blob' AND length(k.hash) = 0 THEN k.body END, COALESCE(k.title, (SELECT title FROM docs WHERE collection = ?1 AND doc_url = ?2)), k.headings, s.model, s.vec FROM chunks k JOIN semvecs s ON s.rid = k.rid WHERE ` + docRange("k.")},
		{&x.st.semIns, `INSERT OR REPLACE INTO semvecs(rid, model, vec) VALUES (?, ?, ?)`},
		{&x.st.ins[0], insertSQL(insSizes[0])},
		{&x.st.ins[1], insertSQL(insSizes[1])},
		{&x.st.ins[2], insertSQL(insSizes[2])},
		{&x.st.ins[3], insertSQL(insSizes[3])},
		{&x.st.ins[4], insertSQL(insSizes[4])},
		{&x.st.hitRows, hitRowsSQL},
	} {
		st, err := x.db.Prepare(p.q)
		if err != nil {
			x.closeWrites()
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "prepare corpus index writes")
		}
		*p.s = st
	}
	return nil
}

// closeWrites closes the statements prepareWrites prepared.
func (x *Index) closeWrites() {
	for _, st := range append([]*sql.Stmt{x.st.dim, x.st.newColl, x.st.maxRid, x.st.docRids, x.st.delDoc, x.st.delDocRow, x.st.setDoc, x.st.bump, x.st.setVersion, x.st.semOld, x.st.semIns, x.st.hitRows}, x.st.ins[:]...) {
		if st != nil {
			st.Close()
		}
	}
}

// txWrite is one write transaction's state: the prepared statements bound
// to it (on first use), the dimensions of the collections it checked, the
// next chunk row id, and reusable argument and vector buffers.
type txWrite struct {
	x       *Index
	tx      *sql.Tx
	bound   map[*sql.Stmt]*sql.Stmt
	dims    map[string]int
	created map[string]bool // collections this transaction created
	// nextRid is the row id of the next inserted chunk, 0 until read. Row
	// ids are assigned here, one more than the largest in the table when
	// the transaction began (what SQLite itself gives a row inserted
	// without one, except that a document's deleted rows' ids are not
	// handed out again), so a multi-row INSERT's ids are known.
	nextRid int64
	args    []any
	vecBuf  []byte
	vecEnds []int
	q8      []int8
	q8b     []byte // one vector as appendQ8Bytes gives it
	sparse  []byte // the same packed (packQ8)
	// the last heading path encoded, and its JSON: a document's chunks
	// mostly share their section's
	lastPath []string
	lastHP   string
	// docTitle is the title of the document being written (docTitle)
	docTitle string
}

// stmt is st bound to the transaction.
func (t *txWrite) stmt(st *sql.Stmt) *sql.Stmt {
	if b, ok := t.bound[st]; ok {
		return b
	}
	if t.bound == nil {
		t.bound = map[*sql.Stmt]*sql.Stmt{}
	}
	b := t.tx.Stmt(st)
	t.bound[st] = b
	return b
}

// writeDoc is one document's write inside the transaction: the
// collection's dimension checked (or recorded), the old chunks deleted,
// the new ones inserted. Statements run without cancellation (g.ctx was
// checked before).
func (t *txWrite) writeDoc(g *writeJob) error {
	ctx := context.Background()
	if len(g.chunks) > 0 {
		if err := t.checkDim(ctx, g.collection, g.dim); err != nil {
			return err
		}
	}
	var old map[string][]semCarry
	if t.x.hasSem.Load() && len(g.chunks) > 0 {
		var err error
		if old, err = t.semOld(ctx, g.collection, g.docURL); err != nil {
			return err
		}
	}
	removed, err := t.deleteDoc(ctx, g.collection, g.docURL)
	if err != nil {
		return err
	}
	added := make([]int64, len(g.chunks))
	if len(g.chunks) > 0 && t.nextRid == 0 {
		var mx int64
		if err := t.stmt(t.x.st.maxRid).QueryRowContext(ctx).Scan(&mx); err != nil {
			return dbErr(err, "read row ids")
		}
		t.nextRid = mx + 1
	}
	if len(g.chunks) > 0 && t.nextRid > math.MaxInt64-int64(len(g.chunks)) {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: row ids exhausted")
	}
	t.docTitle = docTitle(g.chunks)
	for i := 0; i < len(g.chunks); {
		k := 0
		for insSizes[k] > len(g.chunks)-i {
			k++
		}
		if err := t.insert(ctx, g, i, k, added); err != nil {
			return err
		}
		i += insSizes[k]
	}
	if len(added) > 0 {
		if _, err := t.stmt(t.x.st.setDoc).ExecContext(ctx, g.collection, g.docURL, added[0], added[len(added)-1], len(added), t.docTitle); err != nil {
			return dbErr(err, "record document")
		}
	}
	g.removed, g.added, g.sem = removed, added, nil
	if len(old) > 0 {
		return t.carrySem(ctx, g, old)
	}
	return nil
}

// checkDim checks that collection holds dim-dimensional vectors, creating
// it when it does not exist.
func (t *txWrite) checkDim(ctx context.Context, collection string, dim int) error {
	have, ok := t.dims[collection]
	if !ok {
		err := t.stmt(t.x.st.dim).QueryRowContext(ctx, collection).Scan(&have)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := t.stmt(t.x.st.newColl).ExecContext(ctx, collection, dim); err != nil {
				return dbErr(err, "create collection")
			}
			if t.created == nil {
				t.created = map[string]bool{}
			}
			t.created[collection] = true
			have = dim
		case err != nil:
			return dbErr(err, "read collection")
		}
		if t.dims == nil {
			t.dims = map[string]int{}
		}
		t.dims[collection] = have
	}
	if have != dim {
		return invalid("collection %q holds %d-dimensional vectors, got %d", collection, have, dim)
	}
	return nil
}

// deleteDoc deletes the chunks of docURL in collection and returns their
// row ids.
func (t *txWrite) deleteDoc(ctx context.Context, collection, docURL string) ([]int64, error) {
	rows, err := t.stmt(t.x.st.docRids).QueryContext(ctx, collection, docURL)
	if err != nil {
		return nil, dbErr(err, "find document")
	}
	var rids []int64
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return nil, dbErr(err, "find document")
		}
		rids = append(rids, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "find document")
	}
	if len(rids) == 0 {
		return nil, nil
	}
	if _, err := t.stmt(t.x.st.delDoc).ExecContext(ctx, collection, docURL); err != nil {
		return nil, dbErr(err, "delete document")
	}
	if _, err := t.stmt(t.x.st.delDocRow).ExecContext(ctx, collection, docURL); err != nil {
		return nil, dbErr(err, "delete document")
	}
	return rids, nil
}

// insert writes g's chunks [from, from+insSizes[k]) with the next row
// ids, recording them in added.
func (t *txWrite) insert(ctx context.Context, g *writeJob, from, k int, added []int64) error {
	st, n := t.x.st.ins[k], insSizes[k]
	args := t.args[:0]
	// Each vector is quantised into t.q8b, then packed (packQ8) onto vb;
	// ends[r] is where row r's bytes end in vb.
	vb, ends := t.vecBuf[:0], t.vecEnds[:0]
	if g.terms != nil && g.q8 == nil {
		g.q8 = make([]byte, len(g.chunks)*(g.dim+4))
	}
	for i := from; i < from+n; i++ {
		t.q8b, t.q8 = appendQ8Bytes(t.q8b[:0], t.q8, g.vectors[i])
		if g.q8 != nil {
			copy(g.q8[i*(g.dim+4):(i+1)*(g.dim+4)], t.q8b)
		}
		// packQ8 returns t.q8b itself for a dense vector: only a sparse
		// result is kept as the scratch, else the next vector would be
		// packed over its own bytes
		if p := packQ8(t.sparse, t.q8b); len(p) < len(t.q8b) {
			t.sparse = p
			vb = append(vb, p...)
		} else {
			vb = append(vb, t.q8b...)
		}
		ends = append(ends, len(vb))
	}
	t.vecBuf, t.vecEnds = vb, ends
	for r, i := 0, from; i < from+n; r, i = r+1, i+1 {
		c := &g.chunks[i]
		rid := t.nextRid
		t.nextRid++
		added[i] = rid
		lo := 0
		if r > 0 {
			lo = ends[r-1]
		}
		var title any = c.Title
		if c.Title == t.docTitle {
			title = nil // the document's (docs.title)
		}
		args = append(args, rid, packID(g.collection, g.docURL, c), packURL(g.docURL, c.URL), title, t.headings(c.HeadingPath), packAnchor(g.docURL, c), c.Ordinal,
			packText(c.Text), packHash(c), vb[lo:ends[r]:ends[r]])
	}
	t.args = args
	_, err := t.stmt(st).ExecContext(ctx, args...)
	clear(args) // drop the references to the chunks
	return dbErr(err, "insert chunk")
}

// docTitle is the title of a document's first chunk by ordinal (the
// earliest written among equal ordinals): its docs row's title, which
// each chunk row of the same title leaves NULL.
func docTitle(chunks []kgagent.Chunk) string {
	first := -1
	for i := range chunks {
		if first < 0 || chunks[i].Ordinal < chunks[first].Ordinal {
			first = i
		}
	}
	if first < 0 {
		return ""
	}
	return chunks[first].Title
}

// headings is the stored JSON of a heading path.
func (t *txWrite) headings(path []string) string {
	if t.lastHP != "" && slices.Equal(path, t.lastPath) {
		return t.lastHP
	}
	t.lastPath, t.lastHP = path, headingsJSON(path)
	return t.lastHP
}

// headingsJSON is json.Marshal of a heading path (never null), written
// directly when every string is printable ASCII that JSON leaves as it is.
func headingsJSON(path []string) string {
	n := 2
	for _, h := range path {
		for i := 0; i < len(h); i++ {
			if c := h[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				hp, _ := json.Marshal(path)
				return string(hp)
			}
		}
		n += len(h) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, h := range path {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, h...)
		b = append(b, '"')
	}
	b = append(b, ']')
	return string(b)
}

// bumpVersions stamps a new version on each collection the jobs wrote,
// once per collection and transaction, and records it in the jobs.
func (t *txWrite) bumpVersions(jobs []*writeJob) error {
	ctx := context.Background()
	versions := map[string]int64{}
	for _, g := range jobs {
		v, ok := versions[g.collection]
		if !ok {
			if err := t.stmt(t.x.st.bump).QueryRowContext(ctx).Scan(&v); err != nil {
				return dbErr(err, "bump version")
			}
			if _, err := t.stmt(t.x.st.setVersion).ExecContext(ctx, v, g.collection); err != nil {
				return dbErr(err, "bump version")
			}
			versions[g.collection] = v
		}
		g.version = v
	}
	return nil
}

// keptBytes is what the kept copies hold (memColl.bytes), under cacheMu.
func (x *Index) keptBytes() int64 {
	var n int64
	for c := range x.keep {
		if m := x.cache[c]; m != nil {
			n += m.bytes
		}
	}
	return n
}
