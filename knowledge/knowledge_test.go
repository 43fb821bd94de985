package knowledge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/knowledge"
)

const moduleIndex = `| _ |
 | __future__ | Future statement definitions
 | abc | Abstract base classes according to :pep:` + "`3119`" + `.
 | argparse | Command-line option and argument parsing library.
 | array | Space efficient arrays of uniformly typed numeric values.
 | ast | Abstract Syntax Tree classes and manipulation.
 | bdb | Debugger framework.
 | binascii | Tools for converting between binary and various ASCII-encoded binary representations.
 | bisect | Array bisection algorithms for binary searching.
 | json | Encode and decode the JSON format.`

const toc = `- csv — CSV File Reading and Writing Module Contents reader() writer() register_dialect() unregister_dialect() get_dialect() list_dialects() field_size_limit() DictReader DictWriter Dialect excel excel_tab unix_dialect Sniffer Sniffer.sniff() Sniffer.has_header() Dialects and Formatting Parameters Reader Objects Writer Objects Examples configparser — Configuration file parser Quick Start Supported Datatypes Fallback Values`

const prose = `JSON (JavaScript Object Notation), specified by RFC 7159, is a lightweight data interchange format inspired by JavaScript object literal syntax. The json module exposes an API familiar to users of the standard library marshal and pickle modules. Use json.dumps to encode an object and json.loads to decode a string.`

const code = `>>> import json
>>> json.dumps(['foo', {'bar': ('baz', None, 1.0, 2)}])
'["foo", {"bar": ["baz", null, 1.0, 2]}]'
>>> print(json.dumps("\"foo\bar"))
"\"foo\bar"
>>> print(json.dumps('\u1234'))
"\u1234"
>>> print(json.dumps('\\'))
"\\"
>>> print(json.dumps({"c": 0, "b": 0, "a": 0}, sort_keys=True))
{"a": 0, "b": 0, "c": 0}`

func TestLinkHeavy(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"module index table", moduleIndex, true},
		{"flattened table of contents", toc, true},
		{"prose", prose, false},
		{"code", code, false},
		{"short", "json | JSON", false},
		// a Javadoc "uses of" table as the crawler extracts it: modifier,
		// name and the named class's one-line description
		{"javadoc class-use digest", "Subclasses of RuntimeException in java.nio\n\nModifier and Type\n\nClass\n\nDescription\n\nclass\n\nBufferOverflowException\n\nUnchecked exception thrown when a relative put operation reaches the target buffer's limit.\n\nclass\n\nBufferUnderflowException\n\nUnchecked exception thrown when a relative get operation reaches the source buffer's limit.\n\nclass\n\nInvalidMarkException\n\nUnchecked exception thrown when an attempt is made to reset a buffer when its mark is not defined.", true},
	} {
		if got := knowledge.LinkHeavy(&corpus.Hit{Chunk: kgagent.Chunk{Text: c.text}}); got != c.want {
			t.Errorf("%s: LinkHeavy = %v, want %v", c.name, got, c.want)
		}
	}
}

type fakeSearch []corpus.Hit

func (f fakeSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	return []corpus.Hit(f), nil
}

type fakeFacts []graphrag.Fact

func (f fakeFacts) Retrieve(ctx context.Context, q, c string) ([]graphrag.Fact, error) {
	return []graphrag.Fact(f), nil
}

func hit(url, title, text string, score float64) corpus.Hit {
	doc, _, _ := strings.Cut(url, "#")
	return corpus.Hit{Chunk: kgagent.Chunk{URL: url, DocURL: doc, Title: title, Text: text}, Score: score}
}

func TestRetrieveRanksDownLinkListsAndNumbersOnce(t *testing.T) {
	s := fakeSearch{
		hit("https://d/py-modindex.html", "Python Module Index", moduleIndex, 0.9),
		hit("https://d/json.html#module-json", "json — JSON encoder and decoder", prose, 0.8),
		hit("https://d/json.html#module-json", "json — JSON encoder and decoder", code, 0.5),
		hit("https://d/pickle.html", "pickle", "The pickle module serialises objects. It is not secure.", 0.3),
	}
	f := fakeFacts{
		{Text: "json.dumps is a function.", SourceURL: "https://d/json.html#module-json", Score: 1},
		{Text: "marshal is a module.", SourceURL: "https://d/marshal.html", Score: 0.5},
	}
	r := knowledge.NewRetriever(s, f, knowledge.RetrieveConfig{})
	ev, err := r.Retrieve(t.Context(), "json", "c", 3)
	if err != nil {
		t.Fatal(err)
	}
	// Retrieve leaves the numbering to its caller, which numbers once
	// (an agent run with its own citation numbers).
	for _, p := range ev.Passages {
		if p.N != 0 {
			t.Fatalf("passage %s numbered %d by Retrieve", p.URL, p.N)
		}
	}
	knowledge.Number(&ev, nil)
	var urls []string
	for _, p := range ev.Passages {
		urls = append(urls, p.URL)
	}
	// k=3 passages cover two pages, so one more is taken to name a third.
	if len(ev.Passages) != 4 || ev.Passages[0].URL != "https://d/json.html#module-json" || ev.Passages[2].URL != "https://d/py-modindex.html" {
		t.Fatalf("passages %v: want the json sections first, the index ranked down below them", urls)
	}
	if !ev.Passages[2].LinkHeavy || ev.Passages[0].LinkHeavy {
		t.Errorf("LinkHeavy marks wrong: %+v", ev.Passages)
	}
	if ev.Passages[0].N != 1 || ev.Passages[1].N != 1 || ev.Passages[2].N != 2 {
		t.Errorf("numbers %d %d %d, want 1 1 2 (equal URLs share a number)", ev.Passages[0].N, ev.Passages[1].N, ev.Passages[2].N)
	}
	if len(ev.Facts) != 2 || ev.Facts[0].N != 1 || ev.Facts[1].N != 4 {
		t.Errorf("facts %+v: want numbers 1 (the json section) and 4 (a new section)", ev.Facts)
	}
}

// TestRetrieveNamesTheSearchsFirstPages: the evidence names every one of
// the first k pages the search ranks, though their passages come several
// to a page (the fifth page's first passage is the search's 13th hit:
// before, the evidence stopped at 2k = 10 passages and 4 pages, so the
// agent's sources named fewer pages than its own search); the first 2k
// passages are kept as before, and past them only a new page's best,
// marked SourceOnly.
func TestRetrieveNamesTheSearchsFirstPages(t *testing.T) {
	var s fakeSearch
	score := 1.0
	add := func(page string, n int) {
		for i := range n {
			s = append(s, hit(fmt.Sprintf("https://d/%s.html#s%d", page, i), page, fmt.Sprintf("Section %d of the %s page says something.", i, page), score))
			score -= 0.01
		}
	}
	add("a", 4)
	add("b", 3)
	add("c", 2)
	add("d", 2)
	add("a", 1)
	add("e", 2)
	add("f", 1)
	var asked int
	r := knowledge.NewRetriever(countingSearch{s, &asked}, nil, knowledge.RetrieveConfig{})
	ev, err := r.Retrieve(t.Context(), "something", "c", 5)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	pages := map[string]bool{}
	for _, p := range ev.Passages {
		urls = append(urls, p.URL)
		pages[p.DocURL] = true
	}
	want := []string{"https://d/a.html#s0", "https://d/a.html#s1", "https://d/a.html#s2", "https://d/a.html#s3", "https://d/b.html#s0",
		"https://d/b.html#s1", "https://d/b.html#s2", "https://d/c.html#s0", "https://d/c.html#s1", "https://d/d.html#s0", "https://d/e.html#s0"}
	if strings.Join(urls, " ") != strings.Join(want, " ") {
		t.Errorf("passages\n%v\nwant\n%v", urls, want)
	}
	if len(pages) != 5 {
		t.Errorf("%d pages, want the search's first 5", len(pages))
	}
	for i, p := range ev.Passages {
		if want := i >= 10; p.SourceOnly != want {
			t.Errorf("passage %d (%s) SourceOnly %v, want %v (only those past 2k)", i, p.URL, p.SourceOnly, want)
		}
	}
	if asked < 25 {
		t.Errorf("asked the search for %d hits, want at least 5k = 25", asked)
	}
}

// countingSearch records the k it was asked for.
type countingSearch struct {
	fakeSearch
	k *int
}

func (c countingSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	*c.k = r.K
	return c.fakeSearch.Search(ctx, r)
}

// listFacts is a graph that also answers shaped questions outright.
type listFacts struct {
	fakeFacts
	list *kgagent.EvidenceList
}

func (f listFacts) Structured(ctx context.Context, q, c string) (*kgagent.EvidenceList, error) {
	return f.list, nil
}

// TestRetrieveCarriesTheGraphList checks that a graph's structured answer
// travels in the evidence, its subject and items numbered with the
// passages (a shared section shares its number).
func TestRetrieveCarriesTheGraphList(t *testing.T) {
	s := fakeSearch{hit("https://d/shutil.html#module-shutil", "shutil", "High-level file operations.", 0.9)}
	l := &kgagent.EvidenceList{Shape: kgagent.ShapeList, Subject: "shutil", Relation: graphrag.TypeFunction, SourceURL: "https://d/shutil.html#module-shutil",
		Items: []kgagent.EvidenceItem{{Name: "shutil.copy", SourceURL: "https://d/shutil.html#shutil.copy"}, {Name: "shutil.copyfile", SourceURL: "https://d/shutil.html#shutil.copyfile"}}}
	r := knowledge.NewRetriever(s, listFacts{list: l}, knowledge.RetrieveConfig{})
	ev, err := r.Retrieve(t.Context(), "What functions does shutil provide?", "c", 3)
	if err != nil {
		t.Fatal(err)
	}
	knowledge.Number(&ev, nil)
	if ev.List == nil || ev.List.N != 1 || ev.List.Items[0].N != 2 || ev.List.Items[1].N != 3 {
		t.Fatalf("list %+v: want the subject numbered 1 (the passage's section), items 2 and 3", ev.List)
	}
	// A graph without Structured leaves the list out.
	ev, err = knowledge.NewRetriever(s, fakeFacts{}, knowledge.RetrieveConfig{}).Retrieve(t.Context(), "What functions does shutil provide?", "c", 3)
	if err != nil || ev.List != nil {
		t.Fatalf("list %+v, %v: want none", ev.List, err)
	}
}

// windowSearch returns the first r.K of its hits, as a search does, and
// records the k of each call.
type windowSearch struct {
	hits  []corpus.Hit
	asked *[]int
}

func (w windowSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	*w.asked = append(*w.asked, r.K)
	hits := w.hits[:min(r.K, len(w.hits))]
	if r.K == corpus.MaxK {
		// A wider window ranks a little differently: its first two
		// hits swap places.
		hits = append([]corpus.Hit{hits[1], hits[0]}, hits[2:]...)
	}
	return hits, nil
}

// TestRetrieveWidensACrowdedWindow: when one page's sections fill the
// knowledge.Window hits asked for (an OpenJDK class-use page has dozens), the search is
// asked for corpus.MaxK hits, so the evidence (and the agent's sources)
// still names the k pages the search ranks first. Before, it named 3 of
// them and the gold page the search ranked 4th was missing from the
// agent's sources (OpenJDK: java.security.SecurityPermission).
func TestRetrieveWidensACrowdedWindow(t *testing.T) {
	var hits []corpus.Hit
	score := 1.0
	add := func(page string, n int) {
		for i := range n {
			hits = append(hits, hit(fmt.Sprintf("https://d/%s.html#s%d", page, i), page, fmt.Sprintf("Section %d of the %s page says something.", i, page), score))
			score -= 0.001
		}
	}
	add("a", 30)
	add("b", 22)
	add("c", 1)
	add("d", 1)
	add("e", 1)
	var asked []int
	r := knowledge.NewRetriever(windowSearch{hits, &asked}, nil, knowledge.RetrieveConfig{})
	ev, err := r.Retrieve(t.Context(), "something", "c", 5)
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	seen := map[string]bool{}
	for _, p := range ev.Passages {
		if !seen[p.DocURL] {
			seen[p.DocURL] = true
			pages = append(pages, p.DocURL)
		}
	}
	if got := strings.Join(pages, " "); got != "https://d/a.html https://d/b.html https://d/c.html https://d/d.html https://d/e.html" {
		t.Errorf("pages %s, want the search's first 5", got)
	}
	if len(asked) != 2 || asked[0] != knowledge.Window || asked[1] != corpus.MaxK {
		t.Errorf("asked for %v hits, want knowledge.Window then corpus.MaxK", asked)
	}
	// The passages of the first window stay as they were; the pages it
	// missed follow, as sources only.
	if ev.Passages[0].URL != "https://d/a.html#s0" {
		t.Errorf("first passage %s, want the first window's first hit", ev.Passages[0].URL)
	}
	for i, p := range ev.Passages {
		if want := i >= 10; p.SourceOnly != want {
			t.Errorf("passage %d (%s) SourceOnly %v, want %v (only those past 2k)", i, p.URL, p.SourceOnly, want)
		}
	}
	// A window that names k pages is not widened.
	asked = nil
	if _, err := r.Retrieve(t.Context(), "something", "c", 1); err != nil || len(asked) != 1 {
		t.Errorf("k=1: asked %v (err %v), want one search", asked, err)
	}
}

// TestRetrieveLeavesTheSearchsHitsAlone: widening a crowded window must
// not write into the slice the search returned. A search may hand out a
// window of hits it keeps (hits[:K] of a held ranking); appending the
// wider window's pages to it overwrote the hits it held past K (and two
// questions at once would write them concurrently).
func TestRetrieveLeavesTheSearchsHitsAlone(t *testing.T) {
	var hits []corpus.Hit
	for i := range 60 {
		page := "a"
		if i >= 55 {
			page = string(rune('b' + i - 55))
		}
		hits = append(hits, hit(fmt.Sprintf("https://d/%s.html#s%d", page, i), page, fmt.Sprintf("Section %d of the %s page.", i, page), 1-float64(i)/1000))
	}
	held := slices.Clone(hits)
	var asked []int
	r := knowledge.NewRetriever(windowSearch{hits, &asked}, nil, knowledge.RetrieveConfig{})
	if _, err := r.Retrieve(t.Context(), "something", "c", 5); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 {
		t.Fatalf("asked %v, want a widened second search", asked)
	}
	for i := range hits {
		if hits[i].URL != held[i].URL {
			t.Fatalf("the search's hit %d is now %s, was %s: Retrieve wrote into the search's slice", i, hits[i].URL, held[i].URL)
		}
	}
}

// embedCounter counts the texts it embeds.
type embedCounter struct{ n atomic.Int64 }

func (e *embedCounter) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.n.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}
func (e *embedCounter) Dimension() int { return 2 }
func (e *embedCounter) Name() string   { return "count-2" }

// embeddingSearch and embeddingFacts embed the question they are asked
// with emb, as the corpus search and the graph's similarity search do.
type embeddingSearch struct {
	fakeSearch
	emb corpus.Embedder
}

func (s embeddingSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	if _, err := corpus.EmbedQueries(ctx, s.emb, []string{r.Query}); err != nil {
		return nil, err
	}
	return s.fakeSearch.Search(ctx, r)
}

type embeddingFacts struct {
	fakeFacts
	emb corpus.Embedder
}

func (f embeddingFacts) Retrieve(ctx context.Context, q, c string) ([]graphrag.Fact, error) {
	if _, err := corpus.EmbedQueries(ctx, f.emb, []string{q}); err != nil {
		return nil, err
	}
	return f.fakeFacts.Retrieve(ctx, q, c)
}

// The passage search and the graph's search embed the question once
// between them (they asked the model once each: twice the work for the
// same vector).
func TestRetrieveEmbedsTheQuestionOnce(t *testing.T) {
	emb := &embedCounter{}
	s := embeddingSearch{fakeSearch{hit("https://d/json.html#module-json", "json", prose, 0.8)}, emb}
	f := embeddingFacts{fakeFacts{{Text: "json.dumps is a function.", SourceURL: "https://d/json.html#json.dumps", Score: 1}}, emb}
	r := knowledge.NewRetriever(s, f, knowledge.RetrieveConfig{})
	for i := range 2 {
		if _, err := r.Retrieve(t.Context(), "how do I write json", "c", 3); err != nil {
			t.Fatal(err)
		}
		if n := emb.n.Load(); n != int64(i+1) {
			t.Fatalf("after %d retrievals the question was embedded %d times, want %d (once each: nothing is kept across requests)", i+1, n, i+1)
		}
	}
}

// TestRetrieveAsksOneWindow: a window of knowledge.Window hits that names
// k pages is searched once. Before, the retriever asked for 5k+5 = 30
// hits; one page's sections filled them (3 pages named), so it searched
// again for corpus.MaxK hits: a second search for about a third of the
// Python docs' known-item questions, for pages the eval's own 50-hit
// search already names.
func TestRetrieveAsksOneWindow(t *testing.T) {
	var hits []corpus.Hit
	score := 1.0
	for _, p := range []struct {
		page string
		n    int
	}{{"a", 20}, {"b", 12}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 20}} {
		for i := range p.n {
			hits = append(hits, hit(fmt.Sprintf("https://d/%s.html#s%d", p.page, i), p.page, fmt.Sprintf("Section %d of the %s page says something.", i, p.page), score))
			score -= 0.001
		}
	}
	var asked []int
	r := knowledge.NewRetriever(windowSearch{hits, &asked}, nil, knowledge.RetrieveConfig{})
	ev, err := r.Retrieve(t.Context(), "something", "c", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != knowledge.Window {
		t.Errorf("asked for %v hits, want one search for knowledge.Window", asked)
	}
	if got := strings.Join(pagesOf(ev), " "); got != "https://d/a.html https://d/b.html https://d/c.html https://d/d.html https://d/e.html" {
		t.Errorf("pages %s, want the search's first 5", got)
	}
}

// pagesOf lists the pages ev's passages name, in order.
func pagesOf(ev kgagent.Evidence) []string {
	var pages []string
	for _, p := range ev.Passages {
		if !slices.Contains(pages, p.DocURL) {
			pages = append(pages, p.DocURL)
		}
	}
	return pages
}

// methodSummary is a Javadoc class page's method summary as the crawler
// flattens it: a table of names, shaped like a link list (LinkHeavy).
const methodSummary = `Modifier and Type | Method | Description
 | void | addPrintJobAttributeListener | Registers a listener for changes in the specified attributes.
 | void | addPrintJobListener | Registers a listener for event occurring during this print job.
 | PrintJobAttributeSet | getAttributes | Obtains this Print Job's set of printing attributes.
 | PrintService | getPrintService | Determines the PrintService object to which this print job object is bound.
 | void | print | Prints a document with the specified job attributes.
 | void | removePrintJobAttributeListener | Removes an attribute listener from this print job.
 | void | removePrintJobListener | Removes a listener from this print job.
 | void | cancel | Stops further processing of a print job.`

// TestRetrieveKeepsTheSearchsFirstPages: a page among the search's first
// k whose passages are shaped like link lists (a Javadoc class page found
// by its method summary) stays among the evidence's first k pages; ranking
// link lists down orders it below the other first pages only. Before, its
// halved score put it below pages the search ranked past k, the first k
// passages named five other pages, and the page the search ranked second
// was missing from the agent's sources (OpenJDK: DocPrintJob, search rank
// 5; CubicCurve2D.Double, rank 2).
func TestRetrieveKeepsTheSearchsFirstPages(t *testing.T) {
	s := fakeSearch{
		hit("https://d/print/package-use.html", "Uses of Package javax.print", "Print job attributes report the status of a print job. A print job prints documents.", 1.0),
		hit("https://d/print/DocPrintJob.html#method-summary", "DocPrintJob", methodSummary, 0.9),
	}
	for i, sc := range []float64{0.8, 0.7, 0.6, 0.5, 0.4} {
		page := fmt.Sprintf("p%d", i+3)
		s = append(s, hit("https://d/print/"+page+".html", page, "The "+page+" page says something about a print job in a sentence.", sc))
	}
	if !knowledge.LinkHeavy(&s[1]) {
		t.Fatal("the method summary is not LinkHeavy: the test no longer tests anything")
	}
	ev, err := knowledge.NewRetriever(s, nil, knowledge.RetrieveConfig{}).Retrieve(t.Context(), "a print job", "c", 5)
	if err != nil {
		t.Fatal(err)
	}
	want := "https://d/print/package-use.html https://d/print/p3.html https://d/print/p4.html https://d/print/p5.html https://d/print/DocPrintJob.html"
	if got := strings.Join(pagesOf(ev), " "); got != want {
		t.Errorf("pages\n%s\nwant the search's first 5, the method summary ranked down among them\n%s", got, want)
	}
}
