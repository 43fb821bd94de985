package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// The write path (internal/groupcommit). Writers queue their work;
// whoever finds the queue idle leads: it runs up to maxGroup queued writes
// in one transaction (without
// savepoints unless one of them fails, see runGroup), commits once, wakes
// the callers and hands the lead to the next waiter. Concurrent ingestion
// workers thus share one commit (one WAL sync) instead of paying one each,
// and each document stays atomic.
//
// Statements inside a transaction run on a context without cancellation:
// modernc.org/sqlite starts a goroutine per statement to watch a context's
// Done channel. Cancellation is checked between batches of rows instead.

// maxGroup caps the writes that share one transaction.
const maxGroup = 64

// rowsPerInsert is how many rows one multi-row INSERT carries (SQLite
// allows 32766 parameters; 64 triples x 15 columns is 960).
const rowsPerInsert = 64

// idsPerQuery is how many entities addRefs releases between cancellation checks.
const idsPerQuery = 200

// writeJob is one queued write.
type writeJob struct {
	ctx  context.Context
	what string
	fn   func(x *wtx) error
	err  error
	// bulk is what fn's last run changed of the entities during a bulk
	// load, applied to the store's tally once its transaction commits.
	bulk *bulkDelta
	// rows are the triples fn's last run inserted during a bulk load, as
	// insertTriples' values with strs ids, and deleted whether it deleted
	// any (bulknames.go): applied to the store's bulkRows at the commit.
	rows    []any
	deleted bool
	// synced is the number of the commit of fn's last run when the
	// writer committed it with synchronous=NORMAL (walSync), 0 when its
	// COMMIT synced it.
	synced uint64
}

// applyBulk adds what g changed in a bulk load to the store's tally and
// rows, once its transaction committed.
func (s *Store) applyBulk(g *writeJob) {
	s.tally.apply(g.bulk)
	if g.deleted {
		s.rows.stop()
	}
	s.rows.add(g.rows)
}

// resetJob forgets what an earlier run of g changed (it runs again).
func resetJob(g *writeJob) {
	g.bulk, g.rows, g.deleted, g.synced = nil, nil, false, 0
}

// wtx is a write transaction: the caller's context (checked between
// batches), a context without cancellation for the statements, and the
// writer connection the transaction runs on.
type wtx struct {
	s    *Store
	job  *writeJob
	ctx  context.Context // the caller's: only for Err
	ectx context.Context // for statements: never canceled
}

// exec runs the prepared statement q with args.
func (x *wtx) exec(q string, args ...any) (sql.Result, error) {
	st, err := x.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(x.ectx, args...)
}

// query runs the prepared statement q with args.
func (x *wtx) query(q string, args ...any) (*sql.Rows, error) {
	st, err := x.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(x.ectx, args...)
}

// stmt returns the writer connection's prepared statement for q. Statements
// are prepared once for the store's life (the connection is held), not once
// per transaction: preparing the multi-row INSERTs again for each of an
// ingestion's transactions was ~2% of its CPU. Only the group's leader calls
// it (groupcommit runs one leader at a time).
func (x *wtx) stmt(q string) (*sql.Stmt, error) {
	w := &x.s.w
	if st, ok := w.stmts[q]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(x.ectx, q)
	if err != nil {
		return nil, err
	}
	if w.stmts == nil {
		w.stmts = map[string]*sql.Stmt{}
	}
	w.stmts[q] = st
	return st, nil
}

// execRaw runs the statement q, prepared once on the driver's connection,
// with args, bypassing database/sql: its Stmt.Exec makes and converts a
// []driver.NamedValue for every call (a multi-row INSERT binds up to 960),
// ~0.9 GB allocated and a sixth of insertRows' CPU in an OpenJDK docs
// ingest. The writer's connection is held for the store's life, so its
// driver statements live as long as its database/sql ones.
func (x *wtx) execRaw(q string, args []any) error {
	_, err := x.execRawRows(q, args, 0)
	return err
}

// execRawRows is execRaw of a multi-row INSERT whose rows are args, ncols
// values each, when ncols > 0: the first value of each row is not bound
// (its rowid, which the INSERT leaves to SQLite) and the last row's rowid
// is returned.
func (x *wtx) execRawRows(q string, args []any, ncols int) (int64, error) {
	w := &x.s.w
	var last int64
	err := w.conn.Raw(func(dc any) error {
		st, ok := w.raw[q]
		if !ok {
			var err error
			if st, err = dc.(driver.ConnPrepareContext).PrepareContext(x.ectx, q); err != nil {
				return err
			}
			if w.raw == nil {
				w.raw = map[string]driver.Stmt{}
			}
			w.raw[q] = st
		}
		nv := w.nv[:0]
		for i, a := range args {
			if ncols > 0 && i%ncols == 0 {
				continue
			}
			if n, ok := a.(int); ok {
				a = int64(n) // what database/sql's conversion does
			}
			nv = append(nv, driver.NamedValue{Ordinal: len(nv) + 1, Value: a})
		}
		w.nv = nv
		res, err := st.(driver.StmtExecContext).ExecContext(x.ectx, nv)
		clear(nv) // no values kept alive
		if err == nil && ncols > 0 {
			last, err = res.LastInsertId()
		}
		return err
	})
	return last, err
}

// writer is the store's single writer connection, held for its life, and
// its prepared statements. Transactions run on it with BEGIN IMMEDIATE and
// COMMIT (not database/sql's Tx, whose statements die with it).
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt // by SQL text
	// raw are execRaw's statements on the driver's connection, nv its
	// arguments' slice, reused.
	raw  map[string]driver.Stmt
	nv   []driver.NamedValue
	strs strCache // strs ids of strings the writer stored or looked up
	// noStrsH: a bulk load dropped the index strs_h (bulk.go); the
	// lookup of strings by hash creates it again before it runs, and
	// the load's finish does. strsHPend: the running transaction created
	// it (noStrsH clears at its commit).
	noStrsH, strsHPend bool
	// waitedWords counts the bulk loads past earlyEntities whose
	// entities' words finishBulk made beside the index builds, after its
	// wait (a test reads it).
	waitedWords int
	// wordsHeld is the most entity word rows finishBulk held at once
	// and wordRuns the runs on file it merged them from (tests read
	// them); dir is the store's directory, where a large load's finish
	// writes those runs (bulkwords.go).
	wordsHeld, wordRuns int
	dir                 string
	// tempFile: begin set temp_store to FILE (while noStrsH)
	tempFile bool
	// words are the entity word edits of the running transaction's
	// writes, in their order, applied to word_blocks once at its end
	// (flushWords; runIsolated at each write's end, inside its
	// savepoint). blockWrites counts the blocks flushWords wrote (tests).
	words       []collEdit
	blockWrites int
	// wal numbers the commits made with synchronous=NORMAL (normal: a
	// bulk load, bulk.go), which the writes wait to be synced after
	// their group (durable.go); seq is the last one's number.
	// normalNext: the running transaction starts a bulk load, after
	// whose commit the writer switches to NORMAL.
	wal                *walSync
	normal, normalNext bool
	seq                uint64
}

// collEdit is a word edit of collection coll (a strs id).
type collEdit struct {
	coll int64
	wordEdit
}

// queueWords queues edits of collection coll's word blocks until the
// transaction's end. Page-by-page writes add entities under common words
// ("in": 30k ids, a ~32 KB block on the OpenJDK docs) in most documents;
// editing the blocks once per transaction instead of once per document
// rewrites such a block once per group commit.
func (x *wtx) queueWords(coll int64, edits []wordEdit) {
	for _, e := range edits {
		x.s.w.words = append(x.s.w.words, collEdit{coll, e})
	}
}

// flushWords applies the queued word edits, a collection at a time, each
// block they fall in read and written once.
func (w *writer) flushWords(x blockStmts) error {
	if len(w.words) == 0 {
		return nil
	}
	slices.SortStableFunc(w.words, func(a, b collEdit) int { return cmp.Compare(a.coll, b.coll) })
	var edits []wordEdit
	for i := 0; i < len(w.words); {
		coll := w.words[i].coll
		edits = edits[:0]
		for ; i < len(w.words) && w.words[i].coll == coll; i++ {
			edits = append(edits, w.words[i].wordEdit)
		}
		n, err := editWords(x, coll, edits)
		w.blockWrites += n
		if err != nil {
			return err
		}
	}
	w.words = w.words[:0]
	return nil
}

// strCache maps strings to their strs ids for the writer, so a write looks
// up in SQL only the strings it has not met yet. ids are committed and
// stay valid until strings are deleted (DeleteCollection clears the
// cache); pend are those learned in the running transaction, kept at its
// commit and dropped at any rollback (also of a savepoint), since strings
// it inserted are then gone. Past maxCachedStrs the committed ones are
// dropped and learned again, so the cache stays bounded on any corpus.
//
// complete is set while the cache holds every string of strs (a bulk load
// into a store whose strs held only "": the writer is the only one to add
// any, and it learns each one it adds). It then holds them in all (strIDs,
// not the maps): a string it lacks is known not to be stored, so internAll
// gives it the next id without looking it up in SQL. Anything that may
// leave a stored string out of the cache ends that for the store's life:
// all outgrowing maxCompleteStrBytes, a savepoint's rollback (all held
// strings of the jobs before it, which stay), clear, the bulk load's
// finish (leave).
type strCache struct {
	ids, pend map[string]int64
	complete  bool
	all       *strIDs // while complete
}

// maxCachedStrs bounds strCache's maps (the Python docs hold ~150,000
// strings). A variable so that a test can lower it.
var maxCachedStrs = 1 << 18

// maxCompleteStrBytes bounds the string bytes a complete cache holds (the
// OpenJDK API docs': 44.7 MB), so that a bulk load's memory stays bounded
// on any corpus: past it the cache is no longer complete. A variable so
// that a test can lower it.
var maxCompleteStrBytes = 48 << 20

func (c *strCache) get(s string) (int64, bool) {
	if c.all != nil {
		return c.all.get(s)
	}
	if id, ok := c.ids[s]; ok {
		return id, true
	}
	id, ok := c.pend[s]
	return id, ok
}

// startComplete makes the cache complete for a strs table that holds only
// "" (id 1).
func (c *strCache) startComplete() {
	c.ids, c.pend = nil, nil
	c.all = newStrIDs()
	c.all.add("")
	c.all.commit()
	c.complete = true
}

// addNew gives s, which a complete cache lacks, the next id, unless the
// cache cannot hold it: then it is no longer complete (false), and s must
// be looked up.
func (c *strCache) addNew(s string) (int64, bool) {
	return c.addNewHash(s, strIDsHash(s))
}

// addNewHash is addNew with s's hash (strIDsHash).
func (c *strCache) addNewHash(s string, h uint64) (int64, bool) {
	if c.all.bytes+len(s) > maxCompleteStrBytes || !c.all.fits(s) {
		return 0, false
	}
	return c.all.addHash(s, h), true
}

// leave ends completeness (its strings stay in strs but the cache forgets
// them). The strIDs stays valid for whoever holds it.
func (c *strCache) leave() {
	c.all, c.complete = nil, false
	c.ids, c.pend = nil, nil
}

// committed keeps pend (or all's new strings).
func (c *strCache) committed() {
	if c.all != nil {
		c.all.commit()
		return
	}
	if len(c.ids)+len(c.pend) > maxCachedStrs {
		c.ids = nil
	}
	if c.ids == nil {
		c.ids = make(map[string]int64, len(c.pend))
	}
	for s, id := range c.pend {
		c.ids[s] = id
	}
	c.pend = nil
}

// rolledBack drops pend: the whole transaction was rolled back.
func (c *strCache) rolledBack() {
	if c.all != nil {
		c.all.rollback()
	}
	c.pend = nil
}

// savepointRolledBack drops pend after a savepoint's rollback: the strings
// of the transaction's jobs before the savepoint, which pend (or all) held
// too, stay in strs, so the cache is no longer complete.
func (c *strCache) savepointRolledBack() {
	if c.all != nil {
		c.leave()
	}
	c.pend = nil
}

// clear drops everything (strings were deleted).
func (c *strCache) clear() {
	c.leave()
}

// begin starts an IMMEDIATE transaction on the writer. While a bulk load
// has dropped strs_h, its sorts use temporary files (temp_store FILE,
// set outside the transaction: SQLite refuses to change it inside one):
// a load whose strings outgrow the complete cache creates strs_h in the
// middle of its crawl, and that sort of ~1.1M strings took ~55 MB more
// outside Go's heap in memory (88 against 32 MB of RSS for strs_h over the
// 1.36M strings of the 33,438 pages of issue 25, and 6.1 against 3.0 s),
// at the crawl's peak.
func (w *writer) begin(ctx context.Context) error {
	w.words = w.words[:0]
	if w.noStrsH != w.tempFile {
		mode := map[bool]string{false: "MEMORY", true: "FILE"}[w.noStrsH]
		if _, err := w.conn.ExecContext(ctx, `PRAGMA temp_store = `+mode); err != nil {
			return err
		}
		w.tempFile = w.noStrsH
	}
	_, err := w.conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	return err
}

// commit commits the writer's transaction; when that fails it is rolled
// back so the connection is ready for the next.
func (w *writer) commit(ctx context.Context) error {
	if _, err := w.conn.ExecContext(ctx, `COMMIT`); err != nil {
		w.rollback(ctx)
		return err
	}
	w.seq = 0
	if w.normal {
		w.seq = w.wal.commit()
	}
	if w.normalNext {
		w.normalNext = false
		if err := w.setSynchronous(ctx, true); err != nil {
			return err
		}
	}
	w.strs.committed()
	if w.strsHPend {
		w.noStrsH, w.strsHPend = false, false
	}
	return nil
}

// rollback ends the writer's transaction without its changes (no error when
// SQLite already rolled it back).
func (w *writer) rollback(ctx context.Context) {
	_, _ = w.conn.ExecContext(ctx, `ROLLBACK`)
	w.words = w.words[:0]
	w.normalNext = false
	w.strs.rolledBack()
	w.strsHPend = false
}

// setSynchronous sets the writer's synchronous mode outside a
// transaction: NORMAL (its commits then wait for walSync) or FULL.
func (w *writer) setSynchronous(ctx context.Context, normal bool) error {
	mode := "FULL"
	if normal {
		mode = "NORMAL"
	}
	if _, err := w.conn.ExecContext(ctx, `PRAGMA synchronous = `+mode); err != nil {
		return err
	}
	w.normal = normal
	return nil
}

// close releases the statements and the connection.
func (w *writer) close() error {
	for _, st := range w.stmts {
		st.Close()
	}
	w.stmts = nil
	_ = w.conn.Raw(func(any) error {
		for _, st := range w.raw {
			st.Close()
		}
		return nil
	})
	w.raw = nil
	return w.conn.Close()
}

// write runs fn in a transaction shared with other queued writes, inside
// its own savepoint: fn's changes are committed whole or not at all.
func (s *Store) write(ctx context.Context, what string, fn func(x *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &writeJob{ctx: ctx, what: what, fn: fn}
	s.writesQ.Do(j, s.runGroup)
	if j.err == nil && j.synced != 0 {
		// Its group committed without an fsync: wait for one here,
		// while the writer runs the next groups (durable.go).
		if err := s.w.wal.wait(j.synced); err != nil {
			j.err = dbErr(ctx, err, what)
		}
	}
	return j.err
}

// runGroup runs the jobs of one group in one transaction. It first runs
// them one after the other with no savepoints: a savepoint makes SQLite copy
// every page a job touches into a journal first, which for index-heavy
// inserts was a sixth of the writer's time. Only when a job fails is the
// transaction rolled back and the group run again with a savepoint per job
// (runIsolated), so that the failure is undone alone. The jobs are pure
// functions of their arguments and the database, so running one twice is
// the same as running it once.
func (s *Store) runGroup(group []*writeJob) {
	if len(group) > 1 && s.runOptimistic(group) {
		return
	}
	s.runIsolated(group)
}

// runOptimistic runs the group in one transaction without savepoints and
// commits it when every job succeeded. It reports false, with nothing
// changed and no job's err set, when a job failed and the group must run
// isolated.
func (s *Store) runOptimistic(group []*writeJob) bool {
	bg := context.Background()
	if err := s.w.begin(bg); err != nil {
		return false
	}
	defer s.writes.Add(1)                // after the commit or rollback: readers recheck data_version
	skipped := make([]error, len(group)) // canceled before their turn
	ran := 0
	for i, g := range group {
		if err := g.ctx.Err(); err != nil {
			skipped[i] = err
			continue
		}
		resetJob(g)
		x := &wtx{s: s, job: g, ctx: g.ctx, ectx: context.WithoutCancel(g.ctx)}
		if err := g.fn(x); err != nil {
			s.w.rollback(bg)
			return false
		}
		ran++
	}
	if ran == 0 {
		s.w.rollback(bg)
		return false
	}
	if err := s.w.flushWords(&wtx{s: s, ctx: bg, ectx: bg}); err != nil {
		s.w.rollback(bg)
		return false
	}
	err := s.w.commit(bg)
	for i, g := range group {
		switch {
		case skipped[i] != nil:
			g.err = skipped[i]
		case err != nil:
			g.err = dbErr(g.ctx, err, g.what)
		default:
			g.synced = s.w.seq
			s.applyBulk(g)
		}
	}
	return true
}

// runIsolated runs the jobs of one group in one transaction, each in its
// own savepoint.
func (s *Store) runIsolated(group []*writeJob) {
	bg := context.Background()
	failAll := func(err error) {
		for _, g := range group {
			if g.err == nil {
				g.err = dbErr(g.ctx, err, g.what)
			}
		}
	}
	if err := s.w.begin(bg); err != nil {
		failAll(err)
		return
	}
	defer s.writes.Add(1) // after the commit or rollback: readers recheck data_version
	ran := 0
	for _, g := range group {
		if err := g.ctx.Err(); err != nil {
			g.err = err
			continue
		}
		resetJob(g)
		x := &wtx{s: s, job: g, ctx: g.ctx, ectx: context.WithoutCancel(g.ctx)}
		if len(group) == 1 {
			if err := runFlushed(x); err != nil {
				s.w.rollback(bg)
				g.err = dbErr(g.ctx, err, g.what)
				return
			}
			ran++
			continue
		}
		if _, err := s.w.conn.ExecContext(bg, `SAVEPOINT w`); err != nil {
			s.w.rollback(bg)
			failAll(err)
			return
		}
		if err := runFlushed(x); err != nil {
			g.err = dbErr(g.ctx, err, g.what)
			s.w.strs.savepointRolledBack() // strings the job inserted are gone
			s.w.strsHPend = false          // may be gone too: created again if so
			if _, rerr := s.w.conn.ExecContext(bg, `ROLLBACK TO w; RELEASE w`); rerr != nil {
				// The transaction is gone (SQLite rolls back whole
				// transactions on some errors): nothing of the group stays.
				s.w.rollback(bg)
				failAll(rerr)
				return
			}
			continue
		}
		if _, err := s.w.conn.ExecContext(bg, `RELEASE w`); err != nil {
			s.w.rollback(bg)
			failAll(err)
			return
		}
		ran++
	}
	if ran == 0 {
		s.w.rollback(bg)
		return
	}
	if err := s.w.commit(bg); err != nil {
		failAll(err)
		return
	}
	for _, g := range group {
		if g.err == nil {
			g.synced = s.w.seq
			s.applyBulk(g)
		}
	}
}

// runFlushed runs x's job and applies its word edits (runIsolated: each
// job's in its own savepoint). When either fails, the edits are dropped.
func runFlushed(x *wtx) error {
	w := &x.s.w
	err := x.job.fn(x)
	if err == nil {
		err = w.flushWords(x)
	}
	if err != nil {
		w.words = w.words[:0]
	}
	return err
}

// insertSQL is a multi-row INSERT of rows rows of the given columns. The
// parameters are anonymous ("?"): the driver looks each parameter's name up
// when binding, a linear search per parameter for numbered ones ("?NNN").
func insertSQL(head string, ncols, rows int) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(" VALUES ")
	row := "(?" + strings.Repeat(",?", ncols-1) + ")"
	for r := range rows {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// insertRows inserts rows (each ncols values, flattened in vals) with
// multi-row INSERTs of head (and tail, such as an ON CONFLICT clause),
// checking for cancellation between statements. With scan set, tail ends
// in a RETURNING clause and scan reads each returned row.
func (x *wtx) insertRows(head, tail string, ncols int, vals []any, scan ...func(*sql.Rows) error) error {
	return x.insertRowsAs(head, tail, ncols, vals, false, scan...)
}

// insertNext inserts rows as insertRows does whose first values are their
// rowids (or INTEGER PRIMARY KEYs), each the next after the table's
// largest, in order: the rowid, not in head, is left to SQLite, which
// then appends the row without looking for one holding it (~15% of the
// inserts' CPU), and each statement's last rowid is checked to be the
// row's.
func (x *wtx) insertNext(head string, ncols int, vals []any) error {
	return x.insertRowsAs(head, "", ncols, vals, true)
}

// insertRowsAs is insertRows, or insertNext when next is set.
func (x *wtx) insertRowsAs(head, tail string, ncols int, vals []any, next bool, scan ...func(*sql.Rows) error) error {
	per := rowsPerInsert
	bound := ncols
	if next {
		bound--
	}
	for len(vals) > 0 {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		n := min(per, len(vals)/ncols)
		key := head + tail + "\x00" + strconv.Itoa(n)
		x.s.stmu.Lock()
		q, ok := x.s.inserts[key]
		if !ok {
			q = insertSQL(head, bound, n) + tail
			if x.s.inserts == nil {
				x.s.inserts = map[string]string{}
			}
			x.s.inserts[key] = q
		}
		x.s.stmu.Unlock()
		if next {
			last, err := x.execRawRows(q, vals[:n*ncols], ncols)
			if err != nil {
				return err
			}
			if want := vals[(n-1)*ncols].(int64); last != want {
				return fmt.Errorf("graph store: %s: row %d inserted as %d", head, want, last)
			}
		} else if len(scan) == 0 {
			if err := x.execRaw(q, vals[:n*ncols]); err != nil {
				return err
			}
		} else if err := x.queryEach(q, vals[:n*ncols], scan[0]); err != nil {
			return err
		}
		vals = vals[n*ncols:]
	}
	return nil
}

// queryEach runs the prepared statement q with args and calls scan on each
// row it returns.
func (x *wtx) queryEach(q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := x.query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Rows are written with the strs ids of their strings (internAll). Their
// values are the rowid, then the columns of insertTriples (insertNext).
const insertTriples = `INSERT INTO triples (collection, doc_url, s_id, s_name, s_type, s_norm, p, o_id, o_name, o_type, o_norm, literal, chunk_id, source_url)`

// internAll sets out[i] to the strs id of the string vals[i], for every
// value but the first of each row of ncols (a rowid or count, which the
// caller sets; vals holds a placeholder there), adding the
// strings strs lacks: looked up in the writer's cache, then, for the rest,
// by their hashes in batches, and those still missing inserted (their ids
// come back from the INSERT). With a complete cache (strCache) the rest are
// not stored: they get the next ids and are inserted with them.
func (x *wtx) internAll(vals []string, out []any, ncols int) error {
	c := &x.s.w.strs
	if c.complete {
		return x.internNew(vals, out, ncols)
	}
	if x.s.w.noStrsH {
		// the lookup below finds strings by hash
		if _, err := x.s.w.conn.ExecContext(x.ectx, createStrsH); err != nil {
			return err
		}
		x.s.w.strsHPend = true
	}
	var miss []string
	seen := map[string]bool{}
	for i, str := range vals {
		if i%ncols == 0 {
			continue
		}
		if _, ok := c.get(str); !ok && !seen[str] {
			seen[str] = true
			miss = append(miss, str)
		}
	}
	learn := func(rows *sql.Rows) error {
		var id int64
		var str string
		if err := rows.Scan(&id, &str); err != nil {
			return err
		}
		if seen[str] {
			if c.pend == nil {
				c.pend = map[string]int64{}
			}
			c.pend[str] = id
		}
		return nil
	}
	for len(miss) > 0 {
		n := min(len(miss), rowsPerInsert*8)
		hashes := make([]any, n)
		for i, m := range miss[:n] {
			hashes[i] = strHash(m)
		}
		q := `SELECT id, s FROM strs WHERE h IN (?` + strings.Repeat(",?", n-1) + `)`
		if err := x.queryEach(q, hashes, learn); err != nil {
			return err
		}
		var add []any
		for _, m := range miss[:n] {
			if _, ok := c.pend[m]; !ok {
				add = append(add, strHash(m), m)
			}
		}
		if err := x.insertRows(`INSERT INTO strs (h, s)`, ` RETURNING id, s`, 2, add, learn); err != nil {
			return err
		}
		miss = miss[n:]
	}
	return fillIDs(c, vals, out, ncols)
}

// internNew is internAll with a complete cache: every string of vals the
// cache lacks gets the next id and is inserted with it (in the order met,
// the ids an INSERT without them would have given). A value equal to the
// one above it (the same column of the row before: a triple's collection,
// page and predicate mostly are) takes that one's id without a lookup,
// and so does "" (id 1: a triple's literal or its object's columns).
func (x *wtx) internNew(vals []string, out []any, ncols int) error {
	c := &x.s.w.strs
	var add []any
	for i, str := range vals {
		if i%ncols == 0 {
			continue
		}
		if i >= ncols && vals[i-ncols] == str {
			out[i] = out[i-ncols]
			continue
		}
		if str == "" {
			out[i] = int64(1) // no allocation: a small integer
			continue
		}
		id, ok := c.all.get(str)
		if !ok {
			if id, ok = c.addNew(str); !ok {
				// Too many strings to hold: the cache is no longer
				// complete. This write's new strings so far are
				// inserted (with their ids); the rest are looked up.
				c.leave()
				if err := x.insertNext(insertStrs, 3, add); err != nil {
					return err
				}
				return x.internAll(vals, out, ncols)
			}
			add = append(add, id, strHash(str), str)
		}
		out[i] = id
	}
	return x.insertNext(insertStrs, 3, add)
}

// insertStrs inserts strings with their hashes; a complete cache gives
// them their ids, the next ones in order (insertNext).
const insertStrs = `INSERT INTO strs (h, s)`

// fillIDs sets out[i] to the cached strs id of vals[i], as internAll
// describes.
func fillIDs(c *strCache, vals []string, out []any, ncols int) error {
	for i, v := range vals {
		if i%ncols == 0 {
			continue
		}
		id, ok := c.get(v)
		if !ok {
			return fmt.Errorf("graph store: string %q not interned", v)
		}
		out[i] = id
	}
	return nil
}

// docPlan is what ReplaceDocument writes, prepared in the caller's
// goroutine before it queues for the single writer, so that the writer
// only runs SQL: the triple rows and the entity reference counts and names
// the new triples bring.
type docPlan struct {
	collection, docURL string
	vals               []string          // triple rows, tripleCols values each, "" first (the rowid's place)
	adds               map[string]int    // entity id -> references the new triples hold
	ents               map[string]entRow // the new triples' entities
	// uniq are the distinct strings of vals but "", in the order first
	// met, with their hashes for strIDs (strSeed); at[i] is vals[i]'s
	// index in uniq, -1 for "" and the rowids' places. A writer with a
	// complete string cache looks each up once (internPlan), not once a
	// value, and hashes none.
	uniq   []string
	hashes []uint64
	at     []int32
}

// entRow is an entity as the entities table stores it.
type entRow struct{ name, typ, norm string }

// tripleCols is the number of columns insertTriples fills.
const tripleCols = 15

// newDocPlan prepares the write of a document's deduplicated triples.
func newDocPlan(collection, docURL string, uniq []kgagent.Triple) *docPlan {
	p := &docPlan{collection: collection, docURL: docURL,
		vals: make([]string, 0, tripleCols*len(uniq)),
		adds: make(map[string]int, len(uniq)),
		ents: make(map[string]entRow, len(uniq))}
	norms := map[string]string{} // name -> NormalizeName(name), computed once
	norm := func(name string) string {
		if n, ok := norms[name]; ok {
			return n
		}
		n := graphrag.NormalizeName(name)
		norms[name] = n
		return n
	}
	// Strings, not boxed in interfaces: internAll turns them into ids,
	// and only those are bound.
	for _, t := range uniq {
		sn, on := norm(t.Subject.Name), norm(t.Object.Name)
		p.vals = append(p.vals, "", collection, docURL,
			t.Subject.ID, t.Subject.Name, t.Subject.Type, sn,
			t.Predicate,
			t.Object.ID, t.Object.Name, t.Object.Type, on,
			t.Literal, t.ChunkID, t.SourceURL)
		p.adds[t.Subject.ID]++
		if _, ok := p.ents[t.Subject.ID]; !ok {
			p.ents[t.Subject.ID] = entRow{t.Subject.Name, t.Subject.Type, sn}
		}
		if t.Literal == "" {
			p.adds[t.Object.ID]++
			if _, ok := p.ents[t.Object.ID]; !ok {
				p.ents[t.Object.ID] = entRow{t.Object.Name, t.Object.Type, on}
			}
		}
	}
	p.index()
	return p
}

// index finds p's distinct strings (uniq, hashes, at).
func (p *docPlan) index() {
	p.at = make([]int32, len(p.vals))
	idx := make(map[string]int32, len(p.vals)/4)
	for i, v := range p.vals {
		switch {
		case i%tripleCols == 0 || v == "":
			p.at[i] = -1
		case i >= tripleCols && p.vals[i-tripleCols] == v:
			p.at[i] = p.at[i-tripleCols] // the same column of the row above
		default:
			k, ok := idx[v]
			if !ok {
				k = int32(len(p.uniq))
				idx[v] = k
				p.uniq = append(p.uniq, v)
			}
			p.at[i] = k
		}
	}
	p.hashes = make([]uint64, len(p.uniq))
	for k, v := range p.uniq {
		p.hashes[k] = strIDsHash(v)
	}
}

// internPlan sets out[i] to the strs id of p.vals[i] (out holding
// insertTriples' rows: the rowids are left to the caller), as internAll
// does, with a complete cache from p's distinct strings: each is looked up
// once (by the hash the caller's goroutine computed) and its id boxed
// once, for all its rows. The new strings get their ids in the order first
// met, as internNew gives them.
func (x *wtx) internPlan(p *docPlan, out []any) error {
	c := &x.s.w.strs
	if !c.complete {
		return x.internAll(p.vals, out, tripleCols)
	}
	ids := make([]any, len(p.uniq))
	var add []any
	for k, str := range p.uniq {
		id, ok := c.all.getHash(str, p.hashes[k])
		if !ok {
			if id, ok = c.addNewHash(str, p.hashes[k]); !ok {
				// Too many strings to hold: as internNew.
				c.leave()
				if err := x.insertNext(insertStrs, 3, add); err != nil {
					return err
				}
				return x.internAll(p.vals, out, tripleCols)
			}
			add = append(add, id, strHash(str), str)
		}
		ids[k] = id
	}
	one := any(int64(1)) // ""
	for i, k := range p.at {
		switch {
		case i%tripleCols == 0:
		case k < 0:
			out[i] = one
		default:
			out[i] = ids[k]
		}
	}
	return x.insertNext(insertStrs, 3, add)
}

// stamp gives collection the next version (see table versions): every
// write of a collection calls it, so a snapshot of an earlier state is
// never taken for the current one.
func (x *wtx) stamp(collection string) error {
	if _, err := x.exec(`UPDATE versions SET version = version + 1 WHERE collection = ''`); err != nil {
		return err
	}
	_, err := x.exec(`INSERT INTO versions (collection, version) SELECT ?, version FROM versions WHERE collection = ''
		ON CONFLICT (collection) DO UPDATE SET version = excluded.version`, collection)
	return err
}

// replace is ReplaceDocument's transaction: retract the document's
// triples, insert the new ones and apply the entity reference deltas of
// both in one pass, so re-indexing an unchanged page rewrites no entity.
// The new triples get consecutive rowids after the table's last, and docs
// records their range.
func (x *wtx) replace(p *docPlan) error {
	refs, err := x.retract(p.collection, p.docURL)
	if err != nil {
		return err
	}
	n := int64(len(p.vals) / tripleCols)
	if n == 0 {
		return x.addRefs(p.collection, refs, nil)
	}
	for id, n := range p.adds {
		refs[id] += n
	}
	var last int64
	rows, err := x.query(`SELECT coalesce(max(rowid), 0) FROM triples`)
	if err != nil {
		return err
	}
	if rows.Next() {
		err = rows.Scan(&last)
	}
	rows.Close()
	if err != nil {
		return err
	}
	if last > math.MaxInt64-n {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "graph store: triple rowids exhausted")
	}
	ids := make([]any, len(p.vals))
	if err := x.internPlan(p, ids); err != nil {
		return err
	}
	for i := range n {
		ids[i*tripleCols] = last + 1 + i
	}
	if err := x.insertNext(insertTriples, tripleCols, ids); err != nil {
		return err
	}
	if x.s.rows.on {
		x.job.rows = ids
	}
	if _, err := x.exec(`INSERT INTO docs (collection, doc_url, lo, hi) VALUES (?, ?, ?, ?)`, p.collection, p.docURL, last+1, last+n); err != nil {
		return err
	}
	if x.s.bulk {
		x.delta().addRows(ids)
		return nil
	}
	return x.addRefs(p.collection, refs, p.ents)
}

// delta is the bulk load's changes to the entities of this run of the job,
// made on first use.
func (x *wtx) delta() *bulkDelta {
	if x.job.bulk == nil {
		x.job.bulk = &bulkDelta{refs: map[int64]int{}, ents: map[int64][3]int64{}}
	}
	return x.job.bulk
}

// retract deletes a document's triples (found by its rowid range; the
// collection and URL are checked all the same) and returns the entity
// references they held, as negative counts for addRefs; during a bulk load
// it counts them in the job's delta (by strs ids) instead and returns none.
func (x *wtx) retract(collection, docURL string) (map[string]int, error) {
	refs := map[string]int{}
	var lo, hi int64
	rows, err := x.query(`DELETE FROM docs WHERE collection = ? AND doc_url = ? RETURNING lo, hi`, collection, docURL)
	if err != nil {
		return nil, err
	}
	found := rows.Next()
	if found {
		err = rows.Scan(&lo, &hi)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil || !found {
		return refs, err
	}
	x.job.deleted = true
	if x.s.bulk {
		if err := x.retractIDs(lo, hi, collection, docURL); err != nil {
			return nil, err
		}
	} else if err := x.retractRefs(lo, hi, collection, docURL, refs); err != nil {
		return nil, err
	}
	_, err = x.exec(`DELETE FROM triples NOT INDEXED WHERE rowid BETWEEN ?1 AND ?2 AND collection = `+strID("?3")+` AND doc_url = `+strID("?4"), lo, hi, collection, docURL)
	return refs, err
}

// retractRefs counts in refs, negatively, the entity references of the
// triples of rowids lo to hi that retract deletes.
func (x *wtx) retractRefs(lo, hi int64, collection, docURL string, refs map[string]int) error {
	rows, err := x.query(`SELECT si.s, oi.s, t.literal = 1 FROM triples AS t NOT INDEXED
		CROSS JOIN strs AS si ON si.id = t.s_id CROSS JOIN strs AS oi ON oi.id = t.o_id
		WHERE t.rowid BETWEEN ?1 AND ?2 AND t.collection = `+strID("?3")+` AND t.doc_url = `+strID("?4"), lo, hi, collection, docURL)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sid, oid string
		var noLit bool
		if err := rows.Scan(&sid, &oid, &noLit); err != nil {
			return err
		}
		refs[sid]--
		if noLit && oid != "" {
			refs[oid]--
		}
	}
	return rows.Err()
}

// retractIDs is retractRefs during a bulk load: the references are counted
// in the job's delta, by the strs ids of the entities and collection.
func (x *wtx) retractIDs(lo, hi int64, collection, docURL string) error {
	rows, err := x.query(`SELECT t.collection, t.s_id, t.o_id, t.literal = 1 FROM triples AS t NOT INDEXED
		WHERE t.rowid BETWEEN ?1 AND ?2 AND t.collection = `+strID("?3")+` AND t.doc_url = `+strID("?4"), lo, hi, collection, docURL)
	if err != nil {
		return err
	}
	defer rows.Close()
	d := x.delta()
	for rows.Next() {
		var coll, sid, oid int64
		var noLit bool
		if err := rows.Scan(&coll, &sid, &oid, &noLit); err != nil {
			return err
		}
		d.coll = coll
		d.refs[sid]--
		if noLit && oid != 1 { // 1: ""
			d.refs[oid]--
		}
	}
	return rows.Err()
}

// upsertNew runs addRefs' upsert of the entities up: rows of refs, then
// the strings of vals (entity rows: a placeholder, collection, id, name,
// type, norm), and inserts the index words of the entities it created.
// The strings are interned first (internAll). The upsert tells,
// by the count it returns, which entities are new: an existing entity holds
// at least one reference already, so its count comes back above the delta.
func (x *wtx) upsertNew(refs map[string]int, ents map[string]entRow, up []string, vals []string) error {
	ids := make([]any, len(vals))
	if err := x.internAll(vals, ids, 6); err != nil {
		return err
	}
	byID := make(map[int64]string, len(vals)/6) // strs id -> entity id
	for i := 0; i < len(vals); i += 6 {
		ids[i] = refs[up[i/6]]
		byID[ids[i+2].(int64)] = vals[i+2]
	}
	coll := ids[1].(int64)
	var words []wordEdit
	var sid int64
	var n int
	if err := x.insertRows(`INSERT INTO entities (refs, collection, id, name, type, norm)`,
		` ON CONFLICT (collection, id) DO UPDATE SET refs = refs + excluded.refs RETURNING id, refs`, 6, ids,
		func(rows *sql.Rows) error {
			if err := rows.Scan(&sid, &n); err != nil {
				return err
			}
			id := byID[sid]
			if n == refs[id] {
				for _, w := range Words(ents[id].norm, id) {
					words = append(words, wordEdit{word: w, id: sid})
				}
			}
			return nil
		}); err != nil {
		return err
	}
	x.queueWords(coll, words)
	return nil
}

// addRefs applies reference-count deltas to the entity table: existing
// entities are updated, new ones inserted with their index words (one
// multi-row upsert), and entities no triple refers to any more are dropped
// with their words.
func (x *wtx) addRefs(collection string, refs map[string]int, ents map[string]entRow) error {
	if x.s.bulk {
		// A bulk load keeps the entities in memory until its end
		// (bulk.go), once this transaction commits: retract and replace
		// counted them in the job's delta.
		return nil
	}
	var up, down []string
	for id, d := range refs {
		switch {
		case d > 0:
			up = append(up, id)
		case d < 0:
			down = append(down, id)
		}
	}
	sort.Strings(up)
	sort.Strings(down)
	var gone []wordEdit // the words of the entities dropped
	var coll int64
	if len(up) > 0 {
		vals := make([]string, 0, 6*len(up))
		for _, id := range up {
			e := ents[id]
			vals = append(vals, "", collection, id, e.name, e.typ, e.norm)
		}
		if err := x.upsertNew(refs, ents, up, vals); err != nil {
			return err
		}
	}
	for i, id := range down {
		if i%idsPerQuery == 0 {
			if err := x.ctx.Err(); err != nil {
				return err
			}
		}
		var left int
		var norm string
		var sid int64
		rows, err := x.query(`UPDATE entities SET refs = refs + ?1 WHERE collection = `+strID("?2")+` AND id = `+strID("?3")+`
			RETURNING refs, (SELECT s FROM strs WHERE id = norm), collection, id`, refs[id], collection, id)
		if err != nil {
			return err
		}
		found := rows.Next()
		if found {
			err = rows.Scan(&left, &norm, &coll, &sid)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return err
		}
		if !found || left > 0 {
			continue
		}
		if _, err := x.exec(`DELETE FROM entities WHERE collection = `+strID("?1")+` AND id = `+strID("?2"), collection, id); err != nil {
			return err
		}
		// Exactly the words it was indexed under (see Words), so no scan
		// of the collection's words.
		for _, w := range Words(norm, id) {
			gone = append(gone, wordEdit{word: w, id: sid, del: true})
		}
	}
	x.queueWords(coll, gone)
	return nil
}
