package text

import (
	"fmt"
	"strconv"
	"strings"
)

// kgagent has one stemmer: one table of English endings (suffixTable) and
// one rule walker (foldCut) that strips them, Porter-style, in steps. The
// four folds below are four strengths of it — which steps of the table
// they take — so a fix to an ending lands in one row and shows what it does
// to every fold:
//
//	fold        steps                          used for (stored?)
//	Stem        search, final-e, final-y       search keys: keyword index, lexical
//	                                           embedder and Qdrant sparse vectors (stored)
//	Singular    irregular plurals, entity      graph entity keys (stored)
//	LightStem   light                          the answer writer's sentence ranking
//	PrefixStem  prefix, then undouble          the graph's restriction match
//
// Stem and Singular shape stored data: their outputs must not change
// without a new embedder name or a re-ingest (TestStopListFrozen, and the
// differential tests against the folds as written before they shared this
// table: TestFoldsMatchReferences, FuzzFolds). LightStem's output is
// measured by kgagent eval: with the answer writer on Stem instead, the
// Python docs' questions named the answer in 0.934 of them instead of
// 0.944; on Singular, 0.937 (and the demo site's abstentions rose from
// 0.133 to 0.200).

// suffixTable is every ending a fold knows. A row is an ending; a column
// is a step; the cell says what the step writes in the ending's place:
//
//	.      the step does not know the ending
//	:N     cut it off, when at least N bytes stay before it
//	TO:N   write TO instead, when at least N bytes stay before it
//	=      keep the word as it is (the ending is no inflection: "class",
//	       "status"), ending the step
//
// A step tries its endings longest first (rows of one length in table
// order) and applies the first whose condition holds: a row whose ending
// matches but whose condition fails lets the shorter ones try. A cell that
// writes a new ending (TO) ends the fold: later steps only see words that
// were cut.
const suffixTable = `
ending    search  final-e  final-y  entity  light  prefix
izations  :3      .        .        .       .      .
ization   :3      .        .        .       .      .
ational   :3      .        .        .       .      .
ations    :3      .        .        .       .      .
nesses    :3      .        .        .       .      .
ation     :3      .        .        .       .      .
ments     :3      .        .        .       .      .
izing     :3      .        .        .       .      .
izers     :3      .        .        .       .      .
ness      :3      .        .        .       .      .
ment      :3      .        .        .       .      .
izer      :3      .        .        .       .      .
ized      :3      .        .        .       .      .
izes      :3      .        .        .       .      .
ings      :3      .        .        .       .      .
sses      .       .        .        ss:0    .      .
ches      .       .        .        ch:0    .      .
shes      .       .        .        sh:0    .      .
ying      .       .        .        .       .      :3
ing       :3      .        .        .       :3     :3
ers       :3      .        .        .       .      .
ies       i:3     .        .        y:3     y:2    :3
ied       i:3     .        .        .       .      :3
ize       :3      .        .        .       .      .
xes       .       .        .        x:0     .      .
ses       .       .        .        .       se:1   .
ics       .       .        .        =       .      .
er        :3      .        .        .       .      .
es        :3      .        .        .       :3     :3
ed        :3      .        .        .       :3     :3
ly        :3      .        .        .       .      .
ss        =       .        .        =       =      .
us        =       .        .        =       .      .
is        =       .        .        =       .      .
as        .       .        .        =       .      .
os        .       .        .        =       .      .
s         :3      .        .        :0      :3     :3
e         .       :3       .        .       .      :3
y         .       .        i:3      .       .      :3
`

// undouble is the pseudo-step that drops the last of two equal final
// bytes other than a vowel, when more than three bytes are left ("copping"
// cut to "copp" becomes "cop").
const undouble = "undouble"

// A suffixRule is one cell of suffixTable.
type suffixRule struct {
	ending, to string
	need       int  // the shortest word it applies to: the ending and the bytes that must stay before it
	keep       bool // "=": the word stays as it is
}

// A foldStep is one column of suffixTable: its rules by their ending's last
// byte, longest ending first.
type foldStep struct {
	byLast   [256][]suffixRule
	undouble bool
}

// A fold is a stemmer strength: the steps it takes, in order.
type fold struct {
	minLen    int               // shorter words are left alone
	irregular map[string]string // looked up first, before minLen
	steps     []*foldStep
}

var (
	foldSteps = parseSuffixTable(suffixTable)

	searchFold = newFold(5, nil, "search", "final-e", "final-y")
	entityFold = newFold(5, irregular, "entity")
	lightFold  = newFold(0, nil, "light")
	prefixFold = newFold(0, nil, "prefix", undouble)
)

// parseSuffixTable reads suffixTable into its steps by column name.
func parseSuffixTable(table string) map[string]*foldStep {
	lines := strings.Split(strings.TrimSpace(table), "\n")
	cols := strings.Fields(lines[0])[1:]
	steps := map[string]*foldStep{}
	for _, c := range cols {
		steps[c] = &foldStep{}
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(cols)+1 {
			panic(fmt.Sprintf("text: suffixTable row %q has %d cells, want %d", l, len(f), len(cols)+1))
		}
		rows = append(rows, f)
	}
	// Longest ending first; a stable pass keeps the table order within a length.
	for n := 0; n <= 16; n++ {
		l := 16 - n
		for _, f := range rows {
			if len(f[0]) != l {
				continue
			}
			for i, cell := range f[1:] {
				if cell == "." {
					continue
				}
				r := suffixRule{ending: f[0]}
				if cell == "=" {
					r.keep, r.need = true, len(f[0])
				} else {
					to, least, ok := strings.Cut(cell, ":")
					m, err := strconv.Atoi(least)
					if !ok || err != nil {
						panic(fmt.Sprintf("text: suffixTable cell %q of %q is not TO:N, :N, = or .", cell, f[0]))
					}
					r.to, r.need = to, len(f[0])+m
				}
				st := steps[cols[i]]
				last := r.ending[len(r.ending)-1]
				st.byLast[last] = append(st.byLast[last], r)
			}
		}
	}
	steps[undouble] = &foldStep{undouble: true}
	return steps
}

func newFold(minLen int, irregular map[string]string, steps ...string) *fold {
	f := &fold{minLen: minLen, irregular: irregular}
	for _, s := range steps {
		st, ok := foldSteps[s]
		if !ok {
			panic("text: no step " + s + " in suffixTable")
		}
		f.steps = append(f.steps, st)
	}
	return f
}

// foldCut walks f's steps over w: the folded word is w[:keep] + tail. A
// rule that writes a new ending (TO) ends the fold, so every step reads
// w[:keep] and tail is that rule's TO.
func foldCut[T ~string | ~[]byte](f *fold, w T) (keep int, tail string) {
	keep = len(w)
	if keep < f.minLen {
		return keep, ""
	}
	for _, st := range f.steps {
		if keep == 0 {
			break
		}
		if st.undouble {
			if c := w[keep-1]; keep > 3 && c == w[keep-2] && !isVowel(c) {
				keep--
			}
			continue
		}
		rules := st.byLast[w[keep-1]]
		for i := range rules {
			r := &rules[i]
			if keep < r.need {
				continue
			}
			n := keep - len(r.ending)
			if string(w[n:keep]) != r.ending {
				continue
			}
			if !r.keep {
				if r.to != "" {
					return n, r.to
				}
				keep = n
			}
			break
		}
	}
	return keep, ""
}

func isVowel(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'
}

// apply folds a string.
func (f *fold) apply(w string) string {
	if f.irregular != nil {
		if s, ok := f.irregular[w]; ok {
			return s
		}
	}
	keep, tail := foldCut(f, w)
	if tail == "" {
		return w[:keep]
	}
	return w[:keep] + tail
}

// Stem folds a lower-case word to its search key: it removes one common
// inflectional or derivational suffix (plural s, -es, -ing, -ed, -er, -ly,
// -ment, -ness, -ation, -ize...), then a final e, and maps a final y to i,
// so that encode, encoder, encoders, encoding and encoded share the key
// "encod". Words of four bytes or fewer are left alone.
//
// The keyword index, the lexical embedder's stored vectors and Qdrant's
// stored sparse vectors are written with it: changing it needs a new
// embedder name or a re-ingest (see the package comment).
func Stem(w string) string {
	return searchFold.apply(w)
}

// StemBytes writes Stem(w) over dst[:0] and returns it, without allocating
// when dst has room (the lexical embedder's hot path).
func StemBytes(dst, w []byte) []byte {
	keep, tail := foldCut(searchFold, w)
	return append(append(dst[:0], w[:keep]...), tail...)
}

// Singular strips a simple English plural ending from a lower-case name,
// for naming entities rather than matching words: unlike Stem its result is
// a word a reader recognises ("classes" → "class", "dictionaries" →
// "dictionary"), and it is deliberately conservative: words of four letters
// or fewer and endings that are rarely plurals ("ss", "us", "is", "as",
// "os", "ics") are kept. The graph's entity keys are stored with it.
func Singular(w string) string {
	return entityFold.apply(w)
}

// irregular are plurals (and words that only look plural) the entity
// step of suffixTable gets wrong.
var irregular = map[string]string{
	"series": "series", "species": "species", "news": "news", "aliases": "alias",
	"statuses": "status", "buses": "bus", "indices": "index", "matrices": "matrix",
	"vertices": "vertex", "analyses": "analysis", "movies": "movie", "cookies": "cookie",
	"children": "child", "people": "person", "criteria": "criterion", "axes": "axis",
}

// LightStem folds a lower-case word's inflection only: -ing, -ed, -ies
// (to y), -es (-ses only loses its s) and a plural s (not -ss), so
// "parsing" and "parsed" give "pars" but "parser" stays "parser" and
// "process" and "processes" stay apart. The answer writer (Term) ranks
// sentences by the question's words with it; search, which only has to
// find pages, uses the stronger Stem (see the measurements above).
func LightStem(w string) string {
	return lightFold.apply(w)
}

// PrefixStem cuts one common English ending off a lower-case word and then
// a doubled final consonant, leaving a prefix the word's other forms
// contain: "copying", "copies" and "copied" give "cop", as does "copping".
// The graph matches a question's restriction ("for copying files") against
// item names and descriptions with it.
func PrefixStem(w string) string {
	return prefixFold.apply(w)
}
