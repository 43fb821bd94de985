package crawler

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unsafe"

	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/kgagent/kgagent"
)

// treeDiff describes the first difference between two trees ("" if none).
func treeDiff(a, b *xhtml.Node, path string) string {
	if a.Type != b.Type || a.DataAtom != b.DataAtom || a.Data != b.Data || a.Namespace != b.Namespace {
		return fmt.Sprintf("%s: node %d %q %q %q != %d %q %q %q", path, a.Type, a.DataAtom, a.Data, a.Namespace, b.Type, b.DataAtom, b.Data, b.Namespace)
	}
	if !slices.Equal(a.Attr, b.Attr) {
		return fmt.Sprintf("%s/%s: attributes %q != %q", path, a.Data, a.Attr, b.Attr)
	}
	ca, cb := a.FirstChild, b.FirstChild
	for i := 0; ca != nil || cb != nil; i++ {
		if ca == nil || cb == nil {
			return fmt.Sprintf("%s/%s: child %d present in one tree only (%v, %v)", path, a.Data, i, ca != nil, cb != nil)
		}
		if ca.Parent != a || cb.Parent != b {
			return fmt.Sprintf("%s/%s: child %d has the wrong parent", path, a.Data, i)
		}
		if d := treeDiff(ca, cb, fmt.Sprintf("%s/%s[%d]", path, a.Data, i)); d != "" {
			return d
		}
		ca, cb = ca.NextSibling, cb.NextSibling
	}
	return ""
}

// checkFast parses page both ways; it returns whether the fast parser took
// it and fails the test if its tree differs from html.Parse's, or its
// flattened tree (parseFastWhy with flat) from html.Parse's flattened by
// refFlatten.
func checkFast(t testing.TB, name string, page []byte) (bool, int) {
	t.Helper()
	fp, line := parseFastWhy(page, false)
	if fp == nil {
		if flat, _ := parseFastWhy(page, true); flat != nil {
			t.Fatalf("%s: the fast parser took the page only when flattening spans", name)
		}
		return false, line
	}
	fast := fp.doc
	ref, err := xhtml.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("%s: the fast parser took a page html.Parse refuses: %v", name, err)
	}
	if d := treeDiff(fast, ref, ""); d != "" {
		t.Fatalf("%s: fast tree differs from html.Parse's: %s", name, d)
	}
	flat, _ := parseFastWhy(page, true)
	if flat == nil {
		t.Fatalf("%s: the fast parser gave up on the page only when flattening spans", name)
	}
	refFlatten(ref, 0)
	if d := treeDiff(flat.doc, ref, ""); d != "" {
		t.Fatalf("%s: flattened fast tree differs from html.Parse's flattened: %s", name, d)
	}
	return true, line
}

// refFlatten is what the fast parser's flatten does, on a finished tree
// (n with k element ancestors): innermost first, each span that holds one
// text node, fewer than maxFlatDepth elements deep, with no role and not
// an id with only white space, becomes its text, joined to the text
// beside it.
func refFlatten(n *xhtml.Node, k int) {
	kc := k
	if n.Type == xhtml.ElementNode {
		kc++
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		refFlatten(c, kc)
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if t := c.FirstChild; c.Type == xhtml.ElementNode && c.DataAtom == atom.Span && c.Namespace == "" && kc > 0 && kc < maxFlatDepth &&
			t != nil && t == c.LastChild && t.Type == xhtml.TextNode {
			keep := false
			for _, a := range c.Attr {
				keep = keep || a.Key == "role" || a.Key == "id" && strings.TrimSpace(t.Data) == ""
			}
			if !keep {
				n.InsertBefore(&xhtml.Node{Type: xhtml.TextNode, Data: t.Data}, c)
				n.RemoveChild(c)
			}
		}
		c = next
	}
	for c := n.FirstChild; c != nil; { // join adjacent texts
		next := c.NextSibling
		if c.Type == xhtml.TextNode && next != nil && next.Type == xhtml.TextNode {
			c.Data += next.Data
			n.RemoveChild(next)
			continue
		}
		c = next
	}
}

var fastParseCases = []string{
	"<!DOCTYPE html><html><head><title>T &amp; u</title></head><body><p>x</p></body></html>",
	"<!DOCTYPE html>\n<html lang=en>\n <head>\n  <meta charset=utf-8>\n  <script>if (a<b) x()</script>\n </head>\n <body>\n<p>a<p>b<div>c</div><ul><li>1<li>2</ul>\n</body>\n</html>\n",
	"<!DOCTYPE HTML><html><head></head><body><p>quirks<table><tr><td>1<td>2</table></body></html>",
	"<!DOCTYPE html><html><head></head><body><p>no quirks<table><tr><td>1<td>2</table></body></html>",
	"<!DOCTYPE html><html><head></head><body><table><caption>c</caption><colgroup><col><col></colgroup><thead><tr><th>h</th></tr></thead><tbody><tr><td>x</td></tr></tbody></table></body></html>",
	"<!DOCTYPE html><html><head></head><body><dl><dt>a<dd>b<dt>c</dl><b>x<i>y</i>z</b><a href=\"q\" class=c>l</a></body></html>",
	"<!DOCTYPE html><html><head></head><body><b><p>x</b>y</p></body></html>",
	"<!DOCTYPE html><html><head></head><body><form><svg viewbox=\"0 0 1 1\" xmlns:xlink=x><path d=\"M\"/><clippath><rect/></clippath></svg><input></form></body></html>",
	"<!DOCTYPE html><html><head></head><body><pre>\nline</pre><pre>\n\nx</pre><a name=a><a name=b></a></a></body></html>",
	"<!DOCTYPE html><html><head></head><body><div><span>a</div>b</span><!-- c &amp; --></body></html><!-- after -->",
	"<!DOCTYPE html><html><head></head><body><b><b><b><b>x</b></b></b></b><p class=\"a&amp;b\" title='&copy&x'>y</body></html>",
	"<!DOCTYPE html><html><head></head><body><h2>a<h3>b</h2>c</h3><li>x</li></body>\n</html>\n",
	"<!DOCTYPE html><html><head></head><body><p>a\r\nb\rc<br/><img src=x alt=\"a\r\nb\"/></p><table> <tr> <td>1</td> </tr> </table>x</body></html>",
	"<!DOCTYPE html><html><head></head><body><table><tr><td>a<table><tr><td>b</td></tr></table></td></tr></table></body></html>",
	"<!DOCTYPE html><html><head></head><body><em><strong>x</em></strong>y</body></html>",
	"<!DOCTYPE html><html><head></head><body><table>text</table></body></html>",
	"<html><body>no doctype</body></html>",
	"<!DOCTYPE HTML><html><head><noscript><style>x</style></noscript></head><body><noscript><div>JS</div></noscript><iframe src=x><p>raw</p></iframe><noembed>a</noembed><p>x</p></body></html>",
	"<!DOCTYPE html><html><head></head><body><div></p><table><tr><td></p></td></tr></table></div></body></html>",
	"<!DOCTYPE html><html><head></head><body><custom-el Data-X=1>a</custom-el><a><b>1</a>2</b></body></html>",
	// in text "&noti;" is "¬i;", in an attribute it stays as it is
	"<!DOCTYPE html><html><head></head><body><p title=\"&notin;&noti;\" class=&notit;>&noti;</p></body></html>",
	// html.Parse drops a '\r' (from "&#13;") and then a '\n' at the start of a <pre>
	"<!DOCTYPE html><html><head></head><body><pre>&#13;\nx</pre><pre>&#13;&#10;y</pre><listing>&#13;z</listing></body></html>",
	// spans the extractor reads as their text (flatten) and ones it does not
	"<!DOCTYPE html><html><head></head><body><main><pre class=\"rust\"><span class=\"kw\">fn</span> <span class=\"ident\">f</span>(<span class=\"op\">&amp;</span>) {}\n<span id=\"2\">2</span>\n</pre>" +
		"<pre><span>\nfirst</span><span class=w> </span><span><span>nested</span></span><span></span><span>a<b>b</b></span></pre>" +
		"<p><span id=\"label\"> </span><span id=l2>x</span><span role=\"navigation\">nav</span><span>open at p's end</p>" +
		"<table><tr><td><span>cell</span> text</td></tr></table><span title=t>at the end",
	// below maxFlatDepth spans stay elements
	"<!DOCTYPE html><html><head></head><body>" + strings.Repeat("<div>", 124) + "<span>1</span><div><span>2</span><div><span>3</span></div></div></body></html>",
}

func TestParseFastMatchesParse(t *testing.T) {
	taken := 0
	for i, c := range fastParseCases {
		if ok, _ := checkFast(t, fmt.Sprintf("case %d", i), []byte(c)); ok {
			taken++
		}
	}
	for _, p := range samplePages(t) {
		if ok, line := checkFast(t, p.name, p.body); !ok {
			t.Errorf("%s: the fast parser gave up (line %d)", p.name, line)
		}
	}
	if taken < len(fastParseCases)/2 {
		t.Errorf("the fast parser took only %d of %d cases", taken, len(fastParseCases))
	}
}

// xhtmlCases are pages the fast parser must take: an XML declaration first
// (a bogus comment to html.Parse), doctypes with public and system
// identifiers, quirky and not, and processing instructions elsewhere.
var xhtmlCases = []string{
	// as the PostgreSQL docs begin
	"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\" \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">" +
		"<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" /><title>SELECT</title></head>" +
		"<body><p>a<table><tr><td>x</td></tr></table></body></html>",
	// quirks mode: the <table> stays in the <p>
	"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.0 Transitional//EN\"><html><head></head><body><p>a<table><tr><td>x</td></tr></table></body></html>",
	"<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\"><html><head></head><body><p>a<table><tr><td>x</td></tr></table></body></html>",
	"<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\"\n  \"http://www.w3.org/TR/html4/loose.dtd\"><html><head></head><body><p>a<table><tr><td>x</td></tr></table></body></html>",
	"<!doctype html system 'about:legacy-compat'><html><head></head><body><p>a<table></table></body></html>",
	"<?xml version='1.0'?><!DOCTYPE html><html><?pi in html?><head><?pi in head?></head><body><p>x<?php echo 1 ?>y</p></body></html><?after?>",
}

func TestParseFastXHTML(t *testing.T) {
	for i, c := range xhtmlCases {
		if ok, line := checkFast(t, fmt.Sprintf("case %d", i), []byte(c)); !ok {
			t.Errorf("case %d: the fast parser gave up (line %d)", i, line)
		}
	}
}

// TestParseFastDocs compares the trees on every page of a documentation
// tree: KGAGENT_FASTPARSE_DIRS (colon-separated) or the Python docs.
func TestParseFastDocs(t *testing.T) {
	dirs := filepath.SplitList(os.Getenv("KGAGENT_FASTPARSE_DIRS"))
	if len(dirs) == 0 {
		if testing.Short() {
			t.Skip("short")
		}
		dirs = []string{pyDocsDir(t, false)}
	}
	for _, dir := range dirs {
		why := map[int]int{}
		pages, taken := 0, 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			pages++
			ok, line := checkFast(t, p, b)
			if ok {
				taken++
			} else {
				why[line]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		lines := make([]int, 0, len(why))
		for l := range why {
			lines = append(lines, l)
		}
		sort.Slice(lines, func(i, j int) bool { return why[lines[i]] > why[lines[j]] })
		var w []string
		for _, l := range lines {
			w = append(w, fmt.Sprintf("line %d: %d", l, why[l]))
		}
		t.Logf("%s: %d pages, fast parser took %d; gave up at %s", dir, pages, taken, strings.Join(w, ", "))
	}
}

func FuzzParseFast(f *testing.F) {
	for _, c := range slices.Concat(fastParseCases, xhtmlCases) {
		f.Add([]byte(c))
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "site", "*", "*.html"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		checkFast(t, "input", page)
	})
}

// fillStrings sets every string reachable in v (slices grown to one
// element) to a one-byte slice of page, and returns how many it set.
func fillStrings(v reflect.Value, page string, n *int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(page[*n%len(page) : *n%len(page)+1])
		*n++
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillStrings(v.Field(i), page, n)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := 0; i < v.Len(); i++ {
			fillStrings(v.Index(i), page, n)
		}
	}
}

// aliased counts the strings reachable in v that point into page.
func aliased(v reflect.Value, page string) int {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		lo := uintptr(unsafe.Pointer(unsafe.StringData(page)))
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= lo && p < lo+uintptr(len(page)) {
			return 1
		}
	case reflect.Struct:
		c := 0
		for i := 0; i < v.NumField(); i++ {
			c += aliased(v.Field(i), page)
		}
		return c
	case reflect.Slice:
		c := 0
		for i := 0; i < v.Len(); i++ {
			c += aliased(v.Index(i), page)
		}
		return c
	}
	return 0
}

// TestDetachDoc: every string of a Document that points into the page is
// copied (a Document field added later must be added to detachDoc too).
func TestDetachDoc(t *testing.T) {
	page := strings.Repeat("<p>page</p>", 100)
	var doc kgagent.Document
	n := 0
	fillStrings(reflect.ValueOf(&doc).Elem(), page, &n)
	if got := aliased(reflect.ValueOf(doc), page); got != n || n < 15 {
		t.Fatalf("filled %d strings, %d alias the page", n, got)
	}
	before := fmt.Sprint(doc)
	detachDoc(&doc, page)
	if got := aliased(reflect.ValueOf(doc), page); got != 0 {
		t.Errorf("%d strings still point into the page: %+v", got, doc)
	}
	if after := fmt.Sprint(doc); after != before {
		t.Errorf("detachDoc changed the document: %s -> %s", before, after)
	}
	// Strings outside the page stay as they are.
	other := strings.Clone(page)
	doc2 := doc
	detachDoc(&doc2, other)
	if unsafe.StringData(doc2.Title) != unsafe.StringData(doc.Title) {
		t.Error("a string outside the page was copied")
	}
}

// genCommon is the markup genHTML draws from: the elements and tree
// construction steps documentation pages use; genRare adds markup the fast
// parser mostly gives up on.
var genCommon = []string{
	"<p>", "</p>", "<p class=x>", "<li>", "</li>", "<ul>", "</ul>", "<ol>", "</ol>", "<dl>", "</dl>", "<dt>", "</dt>", "<dd>", "</dd>",
	"<div>", "</div>", "<div id=d>", "<span>", "</span>", "<section id=s>", "</section>", "<nav>", "</nav>",
	"<h2>", "</h2>", "<h3 id=h>", "</h3>", "<pre>", "</pre>", "<pre>\n", "<br>", "<br/>", "<hr>", "<img alt=i src=x>",
	"<b>", "</b>", "<i>", "</i>", "<em>", "</em>", "<strong>", "</strong>", "<code>", "</code>", "<a href=\"u\">", "<a name=n class=c>", "</a>",
	"<table>", "</table>", "<tr>", "</tr>", "<td>", "</td>", "<th>", "</th>", "<tbody>", "</tbody>", "<thead>", "</thead>",
	"<caption>", "</caption>", "<colgroup>", "</colgroup>", "<col>", "</body>", "</html>",
	"<span title=\"&noti;&amp;\">", "&#13;\n", "&#32;",
	"<form>", "</form>", "<input type=text>", "<button>", "</button>",
	"<svg viewbox=\"0 0 1 1\">", "</svg>", "<path d=\"M0\"/>", "<clippath>", "</clippath>",
	"<script>a<b</script>", "<style>p{}</style>", "<noscript><p>n</p></noscript>", "<title>t&amp;</title>",
	"<!-- c -->", "<custom-el>", "</custom-el>", "text ", "a &amp; b ", "&lt;x&gt; ", " ", "\n", "x\r\ny",
}

var genRare = []string{
	"<textarea>", "<frameset>", "<!DOCTYPE html>", "<head>", "<template>", "<math>", "<nobr>", "<select>", "</select>",
	"<body>", "<foreignObject>", "<a <b>", "<p a=b/>", "</br>", "<?x?>", "<!x>", "<option>", "<xmp>",
}

// genHTML turns b into a page: a doctype, head and body, then markup
// drawn from genCommon (and genRare unless common).
func genHTML(b []byte, common bool) []byte {
	var sb strings.Builder
	if len(b) > 0 && b[0]%4 == 0 {
		sb.WriteString("<!DOCTYPE HTML>\n")
	} else {
		sb.WriteString("<!DOCTYPE html>\n")
	}
	sb.WriteString("<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>T</title></head>\n<body>\n")
	n := len(genCommon)
	if !common {
		n += len(genRare)
	}
	for _, c := range b {
		if i := int(c) % n; i < len(genCommon) {
			sb.WriteString(genCommon[i])
		} else {
			sb.WriteString(genRare[i-len(genCommon)])
		}
	}
	return []byte(sb.String())
}

// TestParseFastGenerated compares the trees on generated pages.
func TestParseFastGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	taken, n := 0, 3000
	why := map[int]int{}
	for i := 0; i < n; i++ {
		b := make([]byte, 1+r.IntN(40))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		page := genHTML(b, i%2 == 0)
		ok, line := checkFast(t, fmt.Sprintf("generated %q", page), page)
		if ok {
			taken++
		} else {
			why[line]++
		}
	}
	t.Logf("gave up at (line: pages) %v", why)
	if taken < n/4 {
		t.Errorf("the fast parser took %d of %d generated pages", taken, n)
	}
	t.Logf("fast parser took %d of %d generated pages", taken, n)
}

func FuzzParseFastGenerated(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte("\x10\x20\x30\x40\x50"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFast(t, "generated", genHTML(b, len(b) > 0 && b[0]%2 == 0))
	})
}

// TestExtractSameWithFastParser extracts pages with and without the fast
// parser: the Documents must be equal, detachDoc's copies included. It is
// weaker than the tree comparisons (the extractor ignores some tree
// differences, e.g. a <pre>'s leading newline) but checks the whole path.
// The sample site and the cases always; the Python library pages unless
// -short; every page under KGAGENT_FASTPARSE_DIRS (colon-separated) when
// set.
func TestExtractSameWithFastParser(t *testing.T) {
	pages := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "site", "*", "*.html"))
	if !testing.Short() {
		if dir := pyDocsDir(t, false); dir != "" {
			more, _ := filepath.Glob(filepath.Join(dir, "library", "*.html"))
			files = append(files, more...)
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("KGAGENT_FASTPARSE_DIRS")) { // every page of these
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range slices.Concat(fastParseCases, xhtmlCases) {
		pages[fmt.Sprintf("http://127.0.0.1:8080/case%d.html", i)] = []byte(c)
	}
	defer func() { slowParseOnly = false }()
	for _, name := range files { // read one at a time: a docs tree is hundreds of MB
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checkSameDocument(t, "http://127.0.0.1:8080/"+filepath.ToSlash(name), b)
	}
	for u, b := range pages {
		checkSameDocument(t, u, b)
	}
	t.Logf("%d pages", len(files)+len(pages))
}

// checkSameDocument fails t when page's Document differs between the fast
// parser and html.Parse.
func checkSameDocument(t *testing.T, u string, b []byte) {
	t.Helper()
	{
		slowParseOnly = false
		fast, errFast := Extract(u, "text/html; charset=utf-8", b)
		slowParseOnly = true
		slow, errSlow := Extract(u, "text/html; charset=utf-8", b)
		if fmt.Sprint(errFast) != fmt.Sprint(errSlow) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: documents differ with the fast parser:\n%+v (%v)\n%+v (%v)", u, fast, errFast, slow, errSlow)
		}
	}
}

// TestExtractRecyclesNodes: the fast parser's node and attribute blocks go
// back to pools after each page's extraction and come out zeroed, so pages
// extracted again, in another order and on four goroutines at once, give
// the same Documents; and once warm, an extraction allocates no new blocks
// (the big page here allocated 2.9 MB an extraction before, 1.05 MB now).
func TestExtractRecyclesNodes(t *testing.T) {
	var urls []string
	pages := map[string][]byte{}
	for _, p := range samplePages(t) {
		urls, pages[p.url] = append(urls, p.url), p.body
	}
	for i, c := range fastParseCases {
		u := fmt.Sprintf("http://127.0.0.1:8080/case%d.html", i)
		urls, pages[u] = append(urls, u), []byte(c)
	}
	var big strings.Builder
	big.WriteString("<!DOCTYPE html><html><head><title>Big</title></head><body><main><h1>Big page</h1>")
	for i := range 1500 {
		fmt.Fprintf(&big, "<p class=\"para\" id=\"p%d\">Paragraph %d with <a class=\"ref\" title=\"T%d\" href=\"p%d.html\">a link</a> and <code>code%d</code>.</p>\n", i, i, i, i, i)
	}
	big.WriteString("</main></body></html>")
	urls, pages["http://127.0.0.1:8080/big.html"] = append(urls, "http://127.0.0.1:8080/big.html"), []byte(big.String())
	type result struct {
		doc kgagent.Document
		err string
	}
	first := map[string]result{}
	for _, u := range urls {
		d, err := Extract(u, "text/html; charset=utf-8", pages[u])
		first[u] = result{d, fmt.Sprint(err)}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range urls {
				u := urls[(len(urls)-1-i+g*7)%len(urls)]
				d, err := Extract(u, "text/html; charset=utf-8", pages[u])
				if want := first[u]; want.err != fmt.Sprint(err) || !reflect.DeepEqual(want.doc, d) {
					t.Errorf("%s: extracted again with recycled nodes, the Document differs", u)
				}
			}
		}()
	}
	wg.Wait()
	if raceOn {
		return // sync.Pool drops items at random under the race detector
	}
	b := pages["http://127.0.0.1:8080/big.html"]
	if p := parseFastParser(b, true); p == nil {
		t.Fatal("the big page is not taken by the fast parser")
	}
	// the least of three rounds: a collection may empty the pools in one
	got := uint64(1 << 62)
	for range 3 {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		const n = 10
		for range n {
			if _, err := Extract("http://127.0.0.1:8080/big.html", "text/html; charset=utf-8", b); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&ms1)
		got = min(got, (ms1.TotalAlloc-ms0.TotalAlloc)/n)
	}
	// 2,897,109 bytes an extraction without the pools, 1,452,685 with the
	// nodes' alone, 1,045,939 with both, 841,134 with the page read in
	// place (not copied to a string)
	t.Logf("%d bytes allocated an extraction of the big page (%d bytes)", got, len(b))
	if got > 950000 {
		t.Errorf("an extraction of the big page allocated %d bytes, want at most 950,000 (node or attribute blocks not recycled, the page copied?)", got)
	}
}

// TestFlattenedListing: a code listing whose highlighter wrapped each
// token in a span (as rustdoc's source pages and Sphinx's do) parses
// with flattening into a handful of nodes instead of three per token
// (span, text and the text between spans), and extracts to the same code
// block. A 10 MB Rust source page's tree was ~108 MB before, ~3 MB after
// (plus the 10 MB page string).
func TestFlattenedListing(t *testing.T) {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>src</title></head><body><main><h1>lib.rs</h1><pre class=\"src-line-numbers\">")
	const lines = 2000
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "<span id=\"%d\">%d</span>\n", i, i)
	}
	b.WriteString("</pre><pre class=\"rust\"><code>")
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "<span class=\"kw\">fn</span> <span class=\"ident\">f%d</span>(<span class=\"ident\">x</span>: <span class=\"kw-2\">&amp;</span><span class=\"ident\">u8</span>) {}\n", i)
	}
	b.WriteString("</code></pre></main></body></html>")
	page := []byte(b.String())
	nodes := func(flat bool) int {
		p := parseFastParser(page, flat)
		if p == nil {
			t.Fatal("the fast parser gave up on the listing")
		}
		defer p.release()
		if flat && len(p.blocks) != 1 {
			t.Errorf("the flattened listing took %d node blocks, want 1", len(p.blocks))
		}
		n := 0
		var count func(*xhtml.Node)
		count = func(x *xhtml.Node) {
			n++
			for c := x.FirstChild; c != nil; c = c.NextSibling {
				count(c)
			}
		}
		count(p.doc)
		return n
	}
	kept, flat := nodes(false), nodes(true)
	t.Logf("%d bytes: %d nodes, %d flattened", len(page), kept, flat)
	if kept < 6*lines || flat > 30 {
		t.Errorf("listing of %d lines: %d nodes with its spans, %d flattened; want at least %d and at most 30", lines, kept, flat, 6*lines)
	}
	defer func() { keepSpans = false }()
	keepSpans = true
	want, err := Extract("http://127.0.0.1:8080/src/lib.rs.html", "text/html", page)
	if err != nil {
		t.Fatal(err)
	}
	keepSpans = false
	got, err := Extract("http://127.0.0.1:8080/src/lib.rs.html", "text/html", page)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("the flattened listing extracts differently (%v):\n%+v\n%+v", err, got, want)
	}
	if n := len(got.Sections[0].Blocks); n != 2 || !strings.Contains(got.Sections[0].Blocks[1].Text, "fn f2000(x: &u8) {}") {
		t.Errorf("the listing's code blocks: %+v", got.Sections[0].Blocks)
	}
}

// TestExtractKeepsNoBody: the parse reads the body in place, and the
// Document shares none of its bytes: overwriting the body after Extract
// changes nothing in it.
func TestExtractKeepsNoBody(t *testing.T) {
	for _, p := range samplePages(t) {
		b := p.body
		want, err := Extract(p.url, "text/html; charset=utf-8", bytes.Clone(b))
		if err != nil {
			continue
		}
		got, _ := Extract(p.url, "text/html; charset=utf-8", b)
		for i := range b {
			b[i] = 'x'
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the Document changed with the body it was extracted from", p.name)
		}
	}
}

// samplePage is a page of the sample site (testdata/site): its file, the
// URL the tests give it and its bytes.
type samplePage struct {
	name, url string
	body      []byte
}

// samplePages reads the sample site's pages.
func samplePages(t testing.TB) []samplePage {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "site", "*", "*.html"))
	var ps []samplePage
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, samplePage{name: name, url: "http://127.0.0.1:8080/" + filepath.ToSlash(name), body: b})
	}
	return ps
}
