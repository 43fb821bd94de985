package sqlite

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kgagent/kgagent/graphrag"
)

// The words of a large bulk load in bounded memory (issue 25). finishBulk
// made every entity's word rows at once and sorted them, beside the
// strings of every entity's id and normalised name read whole: ~180 MB of
// Go heap at the 97,977-page point's 930k entities (word rows 81 MB,
// strings 77 MB, their ids 16 MB), the peak of that ingest. Past
// streamEntities entities the rows are made in runs of at most
// wordRunRows rows (and wordRunBytes of the strings they hold), each
// sorted and written front-coded to a temporary file as it fills, and the
// runs are merged from there into the blocks: the rows held at once are a
// run's, whatever the load's size. The strings come from a complete
// string cache when it holds them, else from one pass over strs in id
// order, where each string is met once and gives the words of every
// entity it is the normalised name or the id of.

// streamEntities is the number of a tallied bulk load's entities past
// which finishBulk makes their words in runs (wordRuns); at or below it
// they are made whole in memory, which is faster (the OpenJDK docs' 201k
// entities, 764k words: ~25 MB of rows). A variable: a test lowers it.
var streamEntities = 300_000

// wordRunRows and wordRunBytes bound a run: its rows (32 bytes each) and
// the bytes of the strings made for them (from strs). Variables: a test
// lowers them.
var (
	wordRunRows  = 1 << 18
	wordRunBytes = 8 << 20
)

// wordRuns are an entity load's word rows, each run sorted (by collection,
// word and id, as sortWords), in a temporary file, or, when they all fit
// one run, that run in memory.
type wordRuns struct {
	f    *os.File
	ends []int64   // each run's end offset in f
	mem  []wordRow // the only run, when f is nil
	held int       // the most rows held at once
}

// close removes the runs' file, if any.
func (r *wordRuns) close() {
	if r == nil || r.f == nil {
		return
	}
	r.f.Close()
	os.Remove(r.f.Name())
	r.f = nil
}

// runMaker gathers word rows into runs.
type runMaker struct {
	dir   string
	rows  []wordRow
	bytes int // string bytes made for rows
	runs  wordRuns
	w     *bufio.Writer
	off   int64
	buf   []byte
}

// add takes a row, writing the run out when full.
func (m *runMaker) add(coll int64, word string, id int64) error {
	m.rows = append(m.rows, wordRow{coll, word, id})
	if len(m.rows) >= wordRunRows || m.bytes >= wordRunBytes {
		return m.flush()
	}
	return nil
}

// flush sorts the rows gathered and writes them out as a run: for each
// row, a uvarint of its collection, its word front-coded against the row
// before's (appendWord), then a uvarint of its id. A row repeated is
// written once.
func (m *runMaker) flush() error {
	if len(m.rows) == 0 {
		return nil
	}
	m.runs.held = max(m.runs.held, len(m.rows))
	sortWords(m.rows)
	if m.runs.f == nil {
		f, err := os.CreateTemp(m.dir, "kgagent-words-*.tmp")
		if err != nil && m.dir != "" {
			f, err = os.CreateTemp("", "kgagent-words-*.tmp")
		}
		if err != nil {
			return err
		}
		m.runs.f = f
		m.w = bufio.NewWriterSize(f, 64<<10)
	}
	var prev wordRow
	for i, r := range m.rows {
		if i > 0 && r == prev {
			continue
		}
		b := binary.AppendUvarint(m.buf[:0], uint64(r.collection))
		b = appendWord(b, prev.word, r.word)
		b = binary.AppendUvarint(b, uint64(r.id))
		m.buf = b
		if _, err := m.w.Write(b); err != nil {
			return err
		}
		m.off += int64(len(b))
		prev = r
	}
	if err := m.w.Flush(); err != nil {
		return err
	}
	m.runs.ends = append(m.runs.ends, m.off)
	clear(m.rows) // their strings go
	m.rows, m.bytes = m.rows[:0], 0
	return nil
}

// finish returns the runs: the rows left kept in memory when no run was
// written, else written as the last run.
func (m *runMaker) finish() (*wordRuns, error) {
	if m.runs.f == nil {
		m.runs.held = len(m.rows)
		sortWords(m.rows)
		m.runs.mem, m.rows = m.rows, nil
		return &m.runs, nil
	}
	if err := m.flush(); err != nil {
		m.runs.close()
		return nil, err
	}
	m.rows = nil
	return &m.runs, nil
}

// makeWordRuns makes the word rows of rows (a tally's entities, strs ids
// and reference count) as entityWords makes them, in runs written to a
// temporary file in dir (the system's when that fails). The strings of
// the entities' ids and normalised names come from known when it is not
// nil and holds them all, else from one pass over strs on c; two ids
// name the same string only when they are equal (strs holds each string
// once).
func makeWordRuns(ctx context.Context, c queryer, rows [][6]int64, known *strIDs, dir string) (*wordRuns, error) {
	m := &runMaker{dir: dir}
	var err error
	if known != nil && knowsAll(known, rows, []int{1, 4}) {
		for _, r := range rows {
			id, _ := known.str(r[1])
			norm, _ := known.str(r[4])
			for _, w := range Words(norm, id) {
				if err = m.add(r[0], w, r[1]); err != nil {
					break
				}
			}
		}
	} else {
		err = m.walkStrs(ctx, c, rows)
	}
	if err != nil {
		m.runs.close()
		return nil, err
	}
	return m.finish()
}

// knowsAll reports whether known holds the strings of columns cols of
// every row.
func knowsAll(known *strIDs, rows [][6]int64, cols []int) bool {
	for _, r := range rows {
		for _, k := range cols {
			if _, found := known.str(r[k]); !found {
				return false
			}
		}
	}
	return true
}

// walkStrs adds the word rows of rows in one pass over strs on c: a
// string met that is the normalised name of entities gives them its words
// (Words(norm, "")), and one that is the id of entities gives those whose
// normalised name is another string the id itself as a word (when Words
// takes it: not empty nor too long).
func (m *runMaker) walkStrs(ctx context.Context, c queryer, rows [][6]int64) error {
	n := len(rows)
	if n == 0 {
		return nil
	}
	byNorm, byID := make([]int32, n), make([]int32, n)
	for i := range byNorm {
		byNorm[i], byID[i] = int32(i), int32(i)
	}
	slices.SortFunc(byNorm, func(a, b int32) int { return cmp.Compare(rows[a][4], rows[b][4]) })
	slices.SortFunc(byID, func(a, b int32) int { return cmp.Compare(rows[a][1], rows[b][1]) })
	lo := min(rows[byNorm[0]][4], rows[byID[0]][1])
	hi := max(rows[byNorm[n-1]][4], rows[byID[n-1]][1])
	pn, pi := 0, 0
	var aerr error
	err := eachStr(ctx, c, lo, hi, func(sid int64, str []byte) bool {
		var s string
		if pn < n && rows[byNorm[pn]][4] == sid {
			s = string(str)
			m.bytes += len(s)
			ws := Words(s, "")
			for ; pn < n && rows[byNorm[pn]][4] == sid; pn++ {
				r := &rows[byNorm[pn]]
				for _, w := range ws {
					if aerr = m.add(r[0], w, r[1]); aerr != nil {
						return false
					}
				}
			}
		}
		if pi < n && rows[byID[pi]][1] == sid {
			take := len(str) > 0 && len(str) <= graphrag.MaxNameBytes
			if take && s == "" {
				s = string(str)
				m.bytes += len(s)
			}
			for ; pi < n && rows[byID[pi]][1] == sid; pi++ {
				if r := &rows[byID[pi]]; take && r[1] != r[4] {
					if aerr = m.add(r[0], s, r[1]); aerr != nil {
						return false
					}
				}
			}
		}
		return pn < n || pi < n
	})
	switch {
	case err != nil:
		return err
	case aerr != nil:
		return aerr
	case pn < n:
		return fmt.Errorf("graph store: strs lacks string %d of the entities", rows[byNorm[pn]][4])
	case pi < n:
		return fmt.Errorf("graph store: strs lacks string %d of the entities", rows[byID[pi]][1])
	}
	return nil
}

// each calls add with every row of the runs in order (by collection, word
// and id; a row repeated in two runs comes twice), merging the runs from
// the file: a buffered reader each.
func (r *wordRuns) each(add func(wordRow) error) error {
	if r.f == nil {
		for _, w := range r.mem {
			if err := add(w); err != nil {
				return err
			}
		}
		return nil
	}
	var h runHeap
	var start int64
	for _, end := range r.ends {
		c := &runCursor{r: bufio.NewReaderSize(io.NewSectionReader(r.f, start, end-start), 32<<10)}
		start = end
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	var last wordRow // its word shared by the rows of the same word
	for len(h) > 0 {
		c := h[0]
		if last.word != string(c.word) {
			last.word = string(c.word)
		}
		last.collection, last.id = c.coll, c.id
		if err := add(last); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// runCursor reads one run's rows.
type runCursor struct {
	r    *bufio.Reader
	coll int64
	word []byte
	id   int64
}

// errBadRun is a run that does not decode.
var errBadRun = errors.New("graph store: corrupt word run")

// next reads the next row, reporting false at the run's end.
func (c *runCursor) next() (bool, error) {
	coll, err := binary.ReadUvarint(c.r)
	if err == io.EOF {
		return false, nil
	}
	var l, n, id uint64
	if err == nil {
		l, err = binary.ReadUvarint(c.r)
	}
	if err == nil {
		n, err = binary.ReadUvarint(c.r)
	}
	if err != nil || l > uint64(len(c.word)) || n > 1<<30 {
		return false, errBadRun
	}
	c.word = slices.Grow(c.word[:l], int(n))[:int(l+n)]
	if _, err := io.ReadFull(c.r, c.word[l:]); err != nil {
		return false, errBadRun
	}
	if id, err = binary.ReadUvarint(c.r); err != nil {
		return false, errBadRun
	}
	c.coll, c.id = int64(coll), int64(id)
	return true, nil
}

// runHeap orders the runs' cursors by their rows (container/heap).
type runHeap []*runCursor

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.coll != b.coll {
		return a.coll < b.coll
	}
	if c := bytes.Compare(a.word, b.word); c != 0 {
		return c < 0
	}
	return a.id < b.id
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
