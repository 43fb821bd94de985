package crawler

// parseHTML builds the same tree as html.Parse (golang.org/x/net/html) with
// less work for the pages documentation sites serve: a scanner over the
// page's bytes (slices of one string instead of a string per token), nodes
// and attributes allocated in blocks, and the parts of the HTML5 tree
// construction such pages use (document skeleton, implied end tags of p, li,
// dd, dt, tables with their implied tbody and tr, formatting elements closed
// in order, inline SVG). Anything else — a construct the scanner does not
// read the way the x/net tokenizer would, or a tree-construction step it does
// not implement (foster parenting, reconstructing formatting elements, the
// adoption agency's misnesting repair, select, templates, frames, MathML) —
// makes it give up, and the page goes through html.Parse. The tests compare
// both trees node by node on real pages and on fuzzed markup.

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/kgagent/kgagent"
)

// parseHTML returns the tree html.Parse makes of page, and the string the
// tree's texts and attribute values are slices of ("" when html.Parse made
// it): see detachDoc.
func parseHTML(page []byte) (*xhtml.Node, string, func(), error) {
	if !slowParseOnly {
		if p := parseFastParser(page, !keepSpans); p != nil {
			return p.doc, p.s, p.release, nil
		}
	}
	doc, err := xhtml.Parse(bytes.NewReader(page))
	return doc, "", func() {}, err
}

// nodeBlocks recycles the fast parser's blocks of nodes from page to page
// (zeroed): they were an eighth of what an OpenJDK docs ingest allocated
// (0.97 of 8 GB 40 s in), each block dead once its page is extracted.
var nodeBlocks = sync.Pool{New: func() any { return new([nodeBlock]xhtml.Node) }}

// nodeBlock is how many nodes a block holds.
const nodeBlock = 256

// attrBlocks recycles the blocks the elements' attribute lists come from
// the same way (0.17 GB of those 8).
var attrBlocks = sync.Pool{New: func() any { return new([attrBlock]xhtml.Attribute) }}

// attrBlock is how many attributes a block holds.
const attrBlock = 256

// release zeroes the parser's node and attribute blocks and hands them back
// for the next page: no node of the tree may be used after it (extractHTML
// calls it once the Document, which holds none, is made).
func (p *fastParser) release() {
	for _, b := range p.blocks {
		clear(b[:])
		nodeBlocks.Put(b)
	}
	for _, b := range p.ablocks {
		clear(b[:])
		attrBlocks.Put(b)
	}
	p.blocks, p.ablocks, p.nodes, p.attrs, p.doc = nil, nil, nil, nil, nil
}

// slowParseOnly makes parseHTML use html.Parse alone (the tests compare
// the Documents of both paths).
var slowParseOnly = false

// keepSpans makes the fast parser keep the spans it would read as their
// text (the tests compare the Documents).
var keepSpans = false

// detachDoc copies the strings of doc that point into page, so that a
// Document (an anchor, a language) does not keep the whole page in memory.
func detachDoc(doc *kgagent.Document, page string) {
	if page == "" {
		return
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(page)))
	hi := lo + uintptr(len(page))
	d := func(s *string) {
		if *s == "" {
			return
		}
		if p := uintptr(unsafe.Pointer(unsafe.StringData(*s))); p >= lo && p < hi {
			*s = strings.Clone(*s)
		}
	}
	for _, s := range []*string{&doc.Collection, &doc.URL, &doc.CanonicalURL, &doc.Title, &doc.Lang,
		&doc.ContentType, &doc.ContentHash, &doc.ETag, &doc.LastModified} {
		d(s)
	}
	for i := range doc.Sections {
		s := &doc.Sections[i]
		d(&s.Anchor)
		d(&s.Heading)
		for j := range s.HeadingPath {
			d(&s.HeadingPath[j])
		}
		for j := range s.Blocks {
			b := &s.Blocks[j]
			d((*string)(&b.Kind))
			d(&b.Text)
			d(&b.Lang)
			for _, row := range b.Rows {
				for k := range row {
					d(&row[k])
				}
			}
			for k := range b.Terms {
				d(&b.Terms[k].Term)
				d(&b.Terms[k].Definition)
			}
		}
	}
	for i := range doc.Links {
		d(&doc.Links[i].URL)
		d(&doc.Links[i].Text)
	}
}

// giveUp is the panic value of the fast parser meeting what it does not
// handle: line is where (for the tests' statistics).
type giveUp struct{ line int }

// parseFastParser returns the parser that built the tree, or nil when the
// page needs html.Parse. flat reads spans that hold only text as their
// text (flatten): the tree is then html.Parse's but for those.
func parseFastParser(page []byte, flat bool) *fastParser {
	p, _ := parseFastWhy(page, flat)
	return p
}

// parseFastWhy is parseFastParser with the source line that gave up (0 for
// a NUL byte in the page).
func parseFastWhy(page []byte, flat bool) (p *fastParser, line int) {
	if bytes.IndexByte(page, 0) >= 0 {
		return nil, 0
	}
	// The tree's strings are slices of the page's own bytes, not of a
	// copy (a copy was 0.2 GB of an OpenJDK docs ingest's allocations):
	// nothing changes them while the tree lives (Extract's body is the
	// caller's until it returns), and detachDoc copies those a Document
	// keeps.
	p = &fastParser{s: unsafe.String(unsafe.SliceData(page), len(page)), flat: flat}
	defer func() {
		if r := recover(); r != nil {
			g, ok := r.(giveUp)
			if !ok {
				panic(r)
			}
			p.release() // the partial tree is dropped
			p, line = nil, g.line
		}
	}()
	p.run()
	p.oe, p.afe, p.attr, p.nodes, p.attrs = nil, nil, nil, nil, nil
	return p, -1
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokText
	tokStart
	tokEnd
	tokComment
	tokDoctype
)

// insertion modes (the subset implemented)
type insMode int

const (
	modeInitial insMode = iota
	modeBeforeHTML
	modeBeforeHead
	modeInHead
	modeAfterHead
	modeInBody
	modeText
	modeInTable
	modeInTableBody
	modeInRow
	modeInCell
	modeInCaption
	modeInColumnGroup
	modeAfterBody
	modeAfterAfterBody
)

// maxOpenElements is html.Parse's bound on the stack of open elements (it
// fails beyond); the fast parser gives up well before it.
const maxOpenElements = 500

type fastParser struct {
	s   string // the page
	pos int
	raw string // raw text element whose text comes next ("script", "style", "title")

	// the current token
	kind        tokenKind
	data        string // text, comment or doctype data; tag name
	atom        atom.Atom
	attr        []xhtml.Attribute
	selfClosing bool

	doc        *xhtml.Node
	oe, afe    []*xhtml.Node
	head, form *xhtml.Node
	im, origIM insMode
	quirks     bool
	marker     xhtml.Node // the scope marker in afe (compared by address)

	nodes  []xhtml.Node             // block the next nodes come from
	blocks []*[nodeBlock]xhtml.Node // the node blocks taken (release)
	// the attribute blocks taken (release)
	ablocks []*[attrBlock]xhtml.Attribute
	attrs   []xhtml.Attribute // block the next attribute lists come from

	// flat reads spans that hold only text as their text (flatten).
	flat bool
	// grow is the text node whose Data growBuf holds, the text joined to
	// last; growing holds the others whose Data is yet to be set
	// (appendText, endText).
	grow    *xhtml.Node
	growBuf []byte
	growing map[*xhtml.Node][]byte
}

func (p *fastParser) fail() {
	_, _, line, _ := runtime.Caller(1)
	panic(giveUp{line})
}

func (p *fastParser) newNode(t xhtml.NodeType, a atom.Atom, data string) *xhtml.Node {
	if len(p.nodes) == 0 {
		b := nodeBlocks.Get().(*[nodeBlock]xhtml.Node)
		p.blocks = append(p.blocks, b)
		p.nodes = b[:]
	}
	n := &p.nodes[0]
	p.nodes = p.nodes[1:]
	n.Type, n.DataAtom, n.Data = t, a, data
	return n
}

func (p *fastParser) run() {
	p.doc = p.newNode(xhtml.DocumentNode, 0, "")
	p.im = modeInitial
	for {
		p.next()
		p.process()
		if p.kind == tokEOF {
			p.closeOpen(0) // html.Parse leaves them open
			p.endAllTexts()
			return
		}
	}
}

// ---- scanner ----

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f'
}

// nameByte reports the bytes the fast scanner accepts in tag and attribute
// names (the tokenizer accepts more; anything else gives up).
func nameByte(c byte) bool {
	return isASCIILetter(c) || '0' <= c && c <= '9' || c == '-' || c == '_' || c == ':' || c == '.'
}

// next reads the next token.
func (p *fastParser) next() {
	p.attr = p.attr[:0]
	p.selfClosing = false
	s := p.s
	if p.raw != "" {
		end := p.rawEnd()
		start := p.pos
		p.pos = end
		tag := p.raw
		p.raw = ""
		if end > start {
			p.kind = tokText
			p.data = p.text(start, end, tag == "title")
			return
		}
	}
	start := p.pos
	i := start
	for {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			p.pos = len(s)
			if start < len(s) {
				p.kind = tokText
				p.data = p.text(start, len(s), true)
				return
			}
			p.kind = tokEOF
			return
		}
		i += j
		if i+1 >= len(s) {
			p.fail() // '<' at the end
		}
		c := s[i+1]
		if isASCIILetter(c) || c == '/' || c == '!' || c == '?' {
			break
		}
		i++ // a '<' of the text
	}
	if i > start {
		p.pos = i
		p.kind = tokText
		p.data = p.text(start, i, true)
		return
	}
	switch c := s[i+1]; {
	case isASCIILetter(c):
		p.startTag(i + 1)
	case c == '/':
		p.endTag(i + 2)
	case c == '!':
		p.markup(i + 2)
	default:
		p.bogusComment(i + 1)
	}
}

// bogusComment reads "<?...>" (an XML declaration, a processing
// instruction) from its '?' at i as the tokenizer does: a comment whose
// data runs from the '?' to the first '>'.
func (p *fastParser) bogusComment(i int) {
	e := strings.IndexByte(p.s[i:], '>')
	if e < 0 {
		p.fail() // the comment runs to the end of the page
	}
	p.kind = tokComment
	p.data = p.text(i, i+e, true)
	p.pos = i + e + 1
}

// text is s[start:end] as the tokenizer's Text gives it: newlines
// normalised and, unless raw, character references decoded.
func (p *fastParser) text(start, end int, unescape bool) string {
	t := p.s[start:end]
	if strings.IndexByte(t, '\r') >= 0 {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "\r\n", "\n"), "\r", "\n")
	}
	if unescape && strings.IndexByte(t, '&') >= 0 {
		t = xhtml.UnescapeString(t)
	}
	return t
}

// rawEnd finds the end of the raw text of p.raw starting at p.pos: the
// "</tag" followed by space, '/' or '>'.
func (p *fastParser) rawEnd() int {
	s := p.s
	tag := p.raw
	for i := p.pos; ; {
		j := strings.Index(s[i:], "</")
		if j < 0 {
			p.fail() // the element runs to the end of the page
		}
		i += j
		k := i + 2
		if k+len(tag) < len(s) && asciiEqualFold(s[k:k+len(tag)], tag) {
			switch s[k+len(tag)] {
			case ' ', '\n', '\r', '\t', '\f', '/', '>':
				if tag == "script" && strings.Contains(s[p.pos:i], "<!--") {
					p.fail() // the script data escape states
				}
				return i
			}
		}
		i += 2
	}
}

// asciiEqualFold reports whether s equals lower-case t ignoring ASCII case.
func asciiEqualFold(s, t string) bool {
	for i := 0; i < len(t); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

// lowerName returns s in lower case and its atom.
func lowerName(s string) (string, atom.Atom) {
	var buf [32]byte
	var b []byte
	if len(s) <= len(buf) {
		b = buf[:len(s)]
	} else {
		b = make([]byte, len(s))
	}
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
			changed = true
		}
		b[i] = c
	}
	a := atom.Lookup(b)
	if a != 0 {
		return a.String(), a
	}
	if changed {
		return string(b), 0
	}
	return s, 0
}

// lowerKey returns the attribute name s in lower case: s itself when it
// is (html.Parse's key is an atom's string or a copy: the same text).
func lowerKey(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			k, _ := lowerName(s)
			return k
		}
	}
	return s
}

// startTag reads the start tag whose name begins at i.
func (p *fastParser) startTag(i int) {
	s := p.s
	j := i
	for j < len(s) && nameByte(s[j]) {
		j++
	}
	if j >= len(s) || !(isHTMLSpace(s[j]) || s[j] == '/' || s[j] == '>') {
		p.fail()
	}
	p.kind = tokStart
	p.data, p.atom = lowerName(s[i:j])
	for {
		for j < len(s) && isHTMLSpace(s[j]) {
			j++
		}
		if j >= len(s) {
			p.fail()
		}
		if s[j] == '>' {
			j++
			break
		}
		if s[j] == '/' {
			if j+1 < len(s) && s[j+1] == '>' {
				p.selfClosing = true
				j += 2
				break
			}
			p.fail()
		}
		k := j
		for k < len(s) && nameByte(s[k]) {
			k++
		}
		if k == j || k >= len(s) {
			p.fail()
		}
		key := lowerKey(s[j:k])
		j = k
		for j < len(s) && isHTMLSpace(s[j]) {
			j++
		}
		val := ""
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && isHTMLSpace(s[j]) {
				j++
			}
			if j >= len(s) {
				p.fail()
			}
			switch q := s[j]; q {
			case '"', '\'':
				e := strings.IndexByte(s[j+1:], q)
				if e < 0 {
					p.fail()
				}
				val = p.attrVal(j+1, j+1+e)
				j += e + 2
			case '>':
				p.fail()
			default:
				k := j
				for k < len(s) && !isHTMLSpace(s[k]) && s[k] != '>' {
					k++
				}
				if k >= len(s) || s[k-1] == '/' {
					p.fail()
				}
				val = p.attrVal(j, k)
				j = k
			}
		}
		dup := false
		for _, a := range p.attr {
			if a.Key == key {
				dup = true
				break
			}
		}
		if !dup {
			p.attr = append(p.attr, xhtml.Attribute{Key: key, Val: val})
		}
	}
	p.pos = j
	switch p.atom {
	case atom.Script, atom.Style, atom.Title, atom.Noscript, atom.Iframe, atom.Noembed, atom.Noframes:
		p.raw = p.data
	case atom.Plaintext, atom.Textarea, atom.Xmp:
		p.fail()
	}
}

// attrVal is the attribute value s[start:end] as the tokenizer's TagAttr
// gives it. A character reference without its ';' is decoded differently
// in attributes: the scanner gives up on those.
func (p *fastParser) attrVal(start, end int) string {
	v := p.s[start:end]
	if strings.IndexByte(v, '\r') >= 0 {
		v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	}
	if strings.IndexByte(v, '&') < 0 {
		return v
	}
	for i := 0; i < len(v); i++ {
		if v[i] != '&' {
			continue
		}
		k := i + 1
		if k < len(v) && v[k] == '#' {
			continue
		}
		for k < len(v) && (isASCIILetter(v[k]) || '0' <= v[k] && v[k] <= '9') {
			k++
		}
		if k == i+1 {
			continue // no name
		}
		if k < len(v) && v[k] == ';' {
			// A name ended by ';' is read alike in text and attributes
			// when it is a reference or no prefix of it is: in text
			// "&noti;" is "¬i;" (the longest reference that may lack
			// its ';'), in an attribute it stays as it is.
			if ref := v[i : k+1]; xhtml.UnescapeString(ref) == ref || !strings.HasSuffix(xhtml.UnescapeString(ref), ";") {
				continue
			}
		}
		p.fail()
	}
	return xhtml.UnescapeString(v)
}

// endTag reads the end tag whose name begins at i.
func (p *fastParser) endTag(i int) {
	s := p.s
	j := i
	for j < len(s) && nameByte(s[j]) {
		j++
	}
	if j == i || j >= len(s) || !isASCIILetter(s[i]) {
		p.fail()
	}
	p.kind = tokEnd
	p.data, p.atom = lowerName(s[i:j])
	for j < len(s) && isHTMLSpace(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '>' {
		p.fail()
	}
	p.pos = j + 1
}

// markup reads a comment or a doctype after "<!".
func (p *fastParser) markup(i int) {
	s := p.s
	if strings.HasPrefix(s[i:], "--") {
		i += 2
		e := strings.Index(s[i:], "-->")
		if e < 0 || strings.HasPrefix(s[i:], ">") || strings.HasPrefix(s[i:], "->") || strings.Contains(s[i:i+e], "--!>") {
			p.fail()
		}
		p.kind = tokComment
		p.data = p.text(i, i+e, true)
		p.pos = i + e + 3
		return
	}
	if len(s) >= i+7 && asciiEqualFold(s[i:i+7], "doctype") {
		j := i + 7
		for j < len(s) && isHTMLSpace(s[j]) {
			j++
		}
		e := strings.IndexByte(s[j:], '>')
		if e < 0 {
			p.fail()
		}
		p.kind = tokDoctype
		p.data = p.text(j, j+e, true)
		p.pos = j + e + 1
		return
	}
	p.fail() // CDATA or a bogus comment
}

// ---- tree construction ----

func (p *fastParser) top() *xhtml.Node {
	if len(p.oe) > 0 {
		return p.oe[len(p.oe)-1]
	}
	return p.doc
}

// element makes the element of the current token.
func (p *fastParser) element() *xhtml.Node {
	n := p.newNode(xhtml.ElementNode, p.atom, p.data)
	if len(p.attr) > 0 {
		if cap(p.attrs)-len(p.attrs) < len(p.attr) {
			if len(p.attr) <= attrBlock {
				b := attrBlocks.Get().(*[attrBlock]xhtml.Attribute)
				p.ablocks = append(p.ablocks, b)
				p.attrs = b[:0]
			} else {
				p.attrs = make([]xhtml.Attribute, 0, len(p.attr))
			}
		}
		start := len(p.attrs)
		p.attrs = append(p.attrs, p.attr...)
		n.Attr = p.attrs[start:len(p.attrs):len(p.attrs)]
	}
	return n
}

// addElement appends the current token's element to the current node and
// pushes it.
func (p *fastParser) addElement() *xhtml.Node {
	n := p.element()
	p.top().AppendChild(n)
	p.oe = append(p.oe, n)
	if len(p.oe) > maxOpenElements {
		p.fail()
	}
	return n
}

func (p *fastParser) addVoid() {
	p.addElement()
	p.oe = p.oe[:len(p.oe)-1]
}

func (p *fastParser) addComment(parent *xhtml.Node) {
	parent.AppendChild(p.newNode(xhtml.CommentNode, 0, p.data))
}

func (p *fastParser) addText(t string) {
	if t == "" {
		return
	}
	p.appendText(p.top(), t)
}

// appendText adds the text t at the end of parent, joined to the text node
// there if there is one.
func (p *fastParser) appendText(parent *xhtml.Node, t string) {
	if n := parent.LastChild; n != nil && n.Type == xhtml.TextNode {
		// Text joining the text before it grows in a buffer (Data is set
		// by endText): a <pre> of flattened spans is one text node made
		// of ~100,000 pieces, and n.Data += t copied it each time.
		if n != p.grow {
			if p.grow != nil {
				if p.growing == nil {
					p.growing = map[*xhtml.Node][]byte{}
				}
				p.growing[p.grow] = p.growBuf
			}
			buf, ok := p.growing[n]
			if ok {
				delete(p.growing, n)
			} else {
				buf = append([]byte(nil), n.Data...)
			}
			p.grow, p.growBuf = n, buf
		}
		p.growBuf = append(p.growBuf, t...)
		return
	}
	parent.AppendChild(p.newNode(xhtml.TextNode, 0, t))
}

// endText sets the Data of the text node n if text was joined to it: n
// takes no more text (its parent is popped, or the parse ends).
func (p *fastParser) endText(n *xhtml.Node) {
	if n == p.grow {
		n.Data = string(p.growBuf)
		p.grow, p.growBuf = nil, nil
	} else if buf, ok := p.growing[n]; ok {
		n.Data = string(buf)
		delete(p.growing, n)
	}
}

// endAllTexts ends every text that was joined to (the parse's end).
func (p *fastParser) endAllTexts() {
	if p.grow != nil {
		p.endText(p.grow)
	}
	for n := range p.growing {
		p.endText(n)
	}
}

// maxFlatDepth bounds the element depth at which flatten reads a span as
// its text: deeper, the extractor's depth limits (maxWalkDepth) could tell
// a span from its text.
const maxFlatDepth = 128

// closeOpen is the end of the open elements from index i up, the
// innermost first, as they are popped (or left open at the end): spans
// flattened, and the text each ends with complete (endText).
func (p *fastParser) closeOpen(i int) {
	if !p.flat && p.grow == nil && len(p.growing) == 0 {
		return
	}
	for k := len(p.oe) - 1; k >= i; k-- {
		n := p.oe[k]
		if p.flat && n.DataAtom == atom.Span && n.Namespace == "" && p.flatten(n, k) {
			continue
		}
		if l := n.LastChild; l != nil && l.Type == xhtml.TextNode {
			p.endText(l)
		}
	}
}

// flatten replaces the span n, open at index k of the open elements and
// being popped, by its text when that is all it holds (a syntax
// highlighter's token in a code listing), joined to the text before it,
// and reports whether it did.
// html.Parse's tree keeps the span, but the extractor reads a span as its
// text (inline, see isInline and appendNodeText), except when it has a
// role (main, navigation: prepass, stripBoilerplate) or an id and only
// white space (a label target before a heading: headingAnchor): those
// stay. The span's node, its text's and its attributes go back to their
// blocks when they were the last taken. A Rust source listing of 10 MB
// (x86/avx512f.rs.html) is ~900,000 such spans: its tree took ~22 bytes a
// byte of page before.
func (p *fastParser) flatten(n *xhtml.Node, k int) bool {
	c := n.FirstChild
	if k == 0 || k >= maxFlatDepth || c == nil || c != n.LastChild || c.Type != xhtml.TextNode {
		return false
	}
	id := false
	for _, a := range n.Attr {
		switch a.Key {
		case "role":
			return false
		case "id":
			id = true
		}
	}
	p.endText(c)
	t := c.Data
	if id && strings.TrimSpace(t) == "" {
		return false
	}
	parent := n.Parent
	parent.RemoveChild(n)
	p.reclaim(n, c)
	p.appendText(parent, t)
	return true
}

// reclaim hands the element n and its text c back to the node block (and
// n's attributes to theirs) when they were the last taken.
func (p *fastParser) reclaim(n, c *xhtml.Node) {
	if len(p.blocks) == 0 {
		return
	}
	b := p.blocks[len(p.blocks)-1]
	used := nodeBlock - len(p.nodes)
	if used < 2 || &b[used-2] != n || &b[used-1] != c {
		return
	}
	if m := len(n.Attr); m > 0 {
		if m > len(p.attrs) || &p.attrs[len(p.attrs)-1] != &n.Attr[m-1] {
			return
		}
		clear(p.attrs[len(p.attrs)-m:])
		p.attrs = p.attrs[:len(p.attrs)-m]
	}
	clear(b[used-2 : used])
	p.nodes = b[used-2:]
}

const htmlWhitespace = " \t\r\n\f"

type scopeKind int

const (
	scopeDefault scopeKind = iota
	scopeListItem
	scopeButton
	scopeTable
)

// indexInScope is html's indexOfElementInScope for a stack of HTML
// elements (the fast parser never runs these with foreign elements open).
func (p *fastParser) indexInScope(s scopeKind, tags ...atom.Atom) int {
	for i := len(p.oe) - 1; i >= 0; i-- {
		n := p.oe[i]
		if n.Namespace != "" {
			p.fail()
		}
		if slices.Contains(tags, n.DataAtom) {
			return i
		}
		switch s {
		case scopeListItem:
			if n.DataAtom == atom.Ol || n.DataAtom == atom.Ul {
				return -1
			}
		case scopeButton:
			if n.DataAtom == atom.Button {
				return -1
			}
		case scopeTable:
			if n.DataAtom == atom.Html || n.DataAtom == atom.Table || n.DataAtom == atom.Template {
				return -1
			}
		}
		if s != scopeTable {
			switch n.DataAtom {
			case atom.Applet, atom.Caption, atom.Html, atom.Table, atom.Td, atom.Th, atom.Marquee, atom.Object, atom.Template, atom.Select:
				return -1
			}
		}
	}
	return -1
}

func (p *fastParser) inScope(s scopeKind, tags ...atom.Atom) bool {
	return p.indexInScope(s, tags...) != -1
}

func (p *fastParser) popUntil(s scopeKind, tags ...atom.Atom) bool {
	if i := p.indexInScope(s, tags...); i != -1 {
		p.popTo(i)
		return true
	}
	return false
}

// popTo pops the open elements from index i on. Popping the form element
// would leave html's form pointer on it: the fast parser gives up instead.
func (p *fastParser) popTo(i int) {
	for _, n := range p.oe[i:] {
		if n == p.form {
			p.fail()
		}
	}
	p.closeOpen(i)
	p.oe = p.oe[:i]
}

func (p *fastParser) generateImpliedEndTags() {
	i := len(p.oe) - 1
	for ; i >= 0; i-- {
		switch p.oe[i].DataAtom {
		case atom.Dd, atom.Dt, atom.Li, atom.Optgroup, atom.Option, atom.P, atom.Rb, atom.Rp, atom.Rt, atom.Rtc:
			continue
		}
		break
	}
	p.popTo(i + 1)
}

func (p *fastParser) clearStackToContext(tags ...atom.Atom) {
	for i := len(p.oe) - 1; i >= 0; i-- {
		if a := p.oe[i].DataAtom; a == atom.Html || a == atom.Template || slices.Contains(tags, a) {
			p.popTo(i + 1)
			return
		}
	}
}

// reconstruct is html's reconstructActiveFormattingElements when it has
// nothing to do; when it would clone elements, the fast parser gives up.
func (p *fastParser) reconstruct() {
	if len(p.afe) == 0 {
		return
	}
	n := p.afe[len(p.afe)-1]
	if n == &p.marker || slices.Contains(p.oe, n) {
		return
	}
	p.fail()
}

func (p *fastParser) clearActiveFormattingElements() {
	for len(p.afe) > 0 {
		n := p.afe[len(p.afe)-1]
		p.afe = p.afe[:len(p.afe)-1]
		if n == &p.marker {
			return
		}
	}
}

func attrCompare(a, b xhtml.Attribute) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Val, b.Val)
}

// addFormattingElement is html's: the element, its attributes sorted, and
// the list of active formatting elements keeping at most three equal ones.
func (p *fastParser) addFormattingElement() {
	n := p.addElement()
	slices.SortFunc(n.Attr, attrCompare)
	identical := 0
	for i := len(p.afe) - 1; i >= 0; i-- {
		e := p.afe[i]
		if e == &p.marker {
			break
		}
		if e.Namespace != "" || e.DataAtom != n.DataAtom || !slices.Equal(e.Attr, n.Attr) {
			continue
		}
		identical++
		if identical >= 3 {
			p.afe = slices.Delete(p.afe, i, i+1)
		}
	}
	p.afe = append(p.afe, n)
}

func isSpecial(n *xhtml.Node) bool {
	if n.Namespace != "" {
		p := n.Namespace == "svg" && (n.Data == "foreignObject" || n.Data == "desc" || n.Data == "title")
		return p || n.Namespace == "math"
	}
	switch n.DataAtom {
	case atom.Address, atom.Applet, atom.Area, atom.Article, atom.Aside, atom.Base, atom.Basefont, atom.Bgsound,
		atom.Blockquote, atom.Body, atom.Br, atom.Button, atom.Caption, atom.Center, atom.Col, atom.Colgroup,
		atom.Dd, atom.Details, atom.Dir, atom.Div, atom.Dl, atom.Dt, atom.Embed, atom.Fieldset, atom.Figcaption,
		atom.Figure, atom.Footer, atom.Form, atom.Frame, atom.Frameset, atom.H1, atom.H2, atom.H3, atom.H4,
		atom.H5, atom.H6, atom.Head, atom.Header, atom.Hgroup, atom.Hr, atom.Html, atom.Iframe, atom.Img,
		atom.Input, atom.Keygen, atom.Li, atom.Link, atom.Listing, atom.Main, atom.Marquee, atom.Menu,
		atom.Meta, atom.Nav, atom.Noembed, atom.Noframes, atom.Noscript, atom.Object, atom.Ol, atom.P,
		atom.Param, atom.Plaintext, atom.Pre, atom.Script, atom.Section, atom.Select, atom.Source,
		atom.Style, atom.Summary, atom.Table, atom.Tbody, atom.Td, atom.Template, atom.Textarea,
		atom.Tfoot, atom.Th, atom.Thead, atom.Title, atom.Tr, atom.Track, atom.Ul, atom.Wbr, atom.Xmp:
		return n.Data == n.DataAtom.String()
	}
	return false
}

// process runs the current token through the tree construction.
func (p *fastParser) process() {
	if p.kind == tokStart || p.kind == tokEnd || p.kind == tokText || p.kind == tokComment {
		if top := p.top(); top.Type == xhtml.ElementNode && top.Namespace != "" {
			p.foreign()
			return
		}
	}
	for !p.step() {
	}
}

// step runs the current token in the current insertion mode; false means
// the mode changed and the token is to be run again.
func (p *fastParser) step() bool {
	switch p.im {
	case modeInitial:
		switch p.kind {
		case tokText:
			p.data = strings.TrimLeft(p.data, htmlWhitespace)
			if p.data == "" {
				return true
			}
		case tokComment:
			p.addComment(p.doc)
			return true
		case tokDoctype:
			p.doctype()
			p.im = modeBeforeHTML
			return true
		}
		p.fail() // no doctype: quirks mode and implied elements
	case modeBeforeHTML:
		switch p.kind {
		case tokText:
			p.data = strings.TrimLeft(p.data, htmlWhitespace)
			if p.data == "" {
				return true
			}
		case tokComment:
			p.addComment(p.doc)
			return true
		case tokStart:
			if p.atom == atom.Html {
				p.addElement()
				p.im = modeBeforeHead
				return true
			}
		}
		p.fail()
	case modeBeforeHead:
		switch p.kind {
		case tokText:
			p.data = strings.TrimLeft(p.data, htmlWhitespace)
			if p.data == "" {
				return true
			}
		case tokComment:
			p.addComment(p.top())
			return true
		case tokStart:
			if p.atom == atom.Head {
				p.head = p.addElement()
				p.im = modeInHead
				return true
			}
		}
		p.fail()
	case modeInHead:
		switch p.kind {
		case tokText:
			if s := strings.TrimLeft(p.data, htmlWhitespace); s == "" {
				p.addText(p.data)
				return true
			}
		case tokComment:
			p.addComment(p.top())
			return true
		case tokStart:
			switch p.atom {
			case atom.Base, atom.Basefont, atom.Bgsound, atom.Link, atom.Meta:
				p.addVoid()
				return true
			case atom.Script, atom.Title, atom.Style, atom.Noscript, atom.Noframes:
				// html runs with scripting on: noscript holds raw text.
				p.addElement()
				p.origIM, p.im = p.im, modeText
				return true
			}
		case tokEnd:
			if p.atom == atom.Head {
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeAfterHead
				return true
			}
		}
		p.fail()
	case modeAfterHead:
		switch p.kind {
		case tokText:
			if s := strings.TrimLeft(p.data, htmlWhitespace); s == "" {
				p.addText(p.data)
				return true
			}
		case tokComment:
			p.addComment(p.top())
			return true
		case tokStart:
			if p.atom == atom.Body {
				p.addElement()
				p.im = modeInBody
				return true
			}
		}
		p.fail()
	case modeText:
		switch p.kind {
		case tokText:
			p.addText(p.data)
			return true
		case tokEnd:
			p.oe = p.oe[:len(p.oe)-1]
			p.im = p.origIM
			return true
		}
		p.fail()
	case modeInBody:
		p.inBody()
		return true
	case modeInTable:
		return p.inTable()
	case modeInTableBody:
		return p.inTableBody()
	case modeInRow:
		return p.inRow()
	case modeInCell:
		return p.inCell()
	case modeInCaption:
		return p.inCaption()
	case modeInColumnGroup:
		return p.inColumnGroup()
	case modeAfterBody, modeAfterAfterBody:
		switch p.kind {
		case tokEOF:
			return true
		case tokText:
			if strings.TrimLeft(p.data, htmlWhitespace) == "" {
				p.inBody()
				return true
			}
		case tokComment:
			if p.im == modeAfterBody {
				p.addComment(p.oe[0])
			} else {
				p.addComment(p.doc)
			}
			return true
		case tokStart:
			if p.atom == atom.Html {
				p.fail()
			}
		case tokEnd:
			if p.im == modeAfterBody && p.atom == atom.Html {
				p.im = modeAfterAfterBody
				return true
			}
		case tokDoctype:
			return true
		}
		// Anything else is a parse error html reads in the body.
		p.im = modeInBody
		return false
	}
	p.fail()
	return true
}

// doctype adds the doctype node: html's parseDoctype for a plain
// "<!DOCTYPE name>"; one with public or system identifiers (XHTML pages:
// the PostgreSQL docs) is read by html.Parse itself (doctypeOf).
func (p *fastParser) doctype() {
	d := p.data
	if d == "" {
		p.fail()
	}
	if !strings.ContainsAny(d, htmlWhitespace) {
		p.quirks = d != "html"
		p.doc.AppendChild(p.newNode(xhtml.DoctypeNode, 0, strings.ToLower(d)))
		return
	}
	dt, ok := doctypeOf(d)
	if !ok {
		p.fail()
	}
	p.quirks = dt.quirks
	n := p.newNode(xhtml.DoctypeNode, 0, dt.name)
	n.Attr = dt.attr // shared by the pages with this doctype, read only
	p.doc.AppendChild(n)
}

// parsedDoctype is what html.Parse makes of a doctype token's data.
type parsedDoctype struct {
	name   string
	attr   []xhtml.Attribute // public and system identifiers
	quirks bool
}

// doctypes caches doctypeOf: a site's pages share one doctype or a few.
var doctypes struct {
	sync.Mutex
	m map[string]parsedDoctype
}

// maxDoctypes bounds the doctypes cache; others are parsed each time.
const maxDoctypes = 64

// doctypeOf returns the doctype node and quirks mode html.Parse derives
// from the data d of a doctype token, by parsing a probe page of that
// doctype with html.Parse: its doctype node, and whether a <table> opened
// inside a <p> lands in it (quirks mode, the only tree construction step
// the mode changes) or closes it. false when d would not tokenize back to
// itself in the probe (a character reference, a '>').
func doctypeOf(d string) (parsedDoctype, bool) {
	if strings.ContainsAny(d, "&>") {
		return parsedDoctype{}, false
	}
	doctypes.Lock()
	dt, ok := doctypes.m[d]
	doctypes.Unlock()
	if ok {
		return dt, true
	}
	doc, err := xhtml.Parse(strings.NewReader("<!DOCTYPE " + d + "><p><table>"))
	if err != nil || doc.FirstChild == nil || doc.FirstChild.Type != xhtml.DoctypeNode {
		return parsedDoctype{}, false
	}
	// doc: the doctype, then <html> holding <head> and <body><p>...
	n := doc.FirstChild
	html := n.NextSibling
	if html == nil || html.FirstChild == nil || html.FirstChild.NextSibling == nil {
		return parsedDoctype{}, false
	}
	para := html.FirstChild.NextSibling.FirstChild
	if para == nil || para.DataAtom != atom.P {
		return parsedDoctype{}, false
	}
	dt = parsedDoctype{name: n.Data, attr: slices.Clip(n.Attr), quirks: para.FirstChild != nil && para.FirstChild.DataAtom == atom.Table}
	doctypes.Lock()
	if doctypes.m == nil {
		doctypes.m = map[string]parsedDoctype{}
	}
	if len(doctypes.m) < maxDoctypes {
		doctypes.m[d] = dt
	}
	doctypes.Unlock()
	return dt, true
}

func (p *fastParser) inBody() {
	switch p.kind {
	case tokText:
		d := p.data
		if n := p.top(); n.DataAtom == atom.Pre || n.DataAtom == atom.Listing {
			// as html.Parse: a '\r' first (only "&#13;" gives one), then
			// a '\n'
			if n.FirstChild == nil && d != "" && d[0] == '\r' {
				d = d[1:]
			}
			if n.FirstChild == nil && d != "" && d[0] == '\n' {
				d = d[1:]
			}
		}
		if d == "" {
			return
		}
		p.reconstruct()
		p.addText(d)
	case tokComment:
		p.addComment(p.top())
	case tokDoctype:
	case tokEOF:
	case tokStart:
		p.inBodyStart()
	case tokEnd:
		p.inBodyEnd()
	}
}

func (p *fastParser) inBodyStart() {
	switch a := p.atom; a {
	case atom.Base, atom.Basefont, atom.Bgsound, atom.Link, atom.Meta:
		p.addVoid()
	case atom.Script, atom.Style, atom.Title, atom.Noscript, atom.Noframes, atom.Iframe, atom.Noembed:
		p.addElement()
		p.origIM, p.im = p.im, modeText
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dialog,
		atom.Dir, atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Header,
		atom.Hgroup, atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Search, atom.Section, atom.Summary, atom.Ul:
		p.popUntil(scopeButton, atom.P)
		p.addElement()
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		p.popUntil(scopeButton, atom.P)
		switch p.top().DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			p.oe = p.oe[:len(p.oe)-1]
		}
		p.addElement()
	case atom.Pre, atom.Listing:
		p.popUntil(scopeButton, atom.P)
		p.addElement()
	case atom.Form:
		if p.form != nil {
			p.fail()
		}
		p.popUntil(scopeButton, atom.P)
		p.form = p.addElement()
	case atom.Li, atom.Dd, atom.Dt:
		for i := len(p.oe) - 1; i >= 0; i-- {
			n := p.oe[i]
			if a == atom.Li && n.DataAtom == atom.Li || a != atom.Li && (n.DataAtom == atom.Dd || n.DataAtom == atom.Dt) {
				p.popTo(i)
				break
			}
			if n.DataAtom == atom.Address || n.DataAtom == atom.Div || n.DataAtom == atom.P || !isSpecial(n) {
				continue
			}
			break
		}
		p.popUntil(scopeButton, atom.P)
		p.addElement()
	case atom.Button:
		if p.inScope(scopeDefault, atom.Button) {
			p.fail()
		}
		p.reconstruct()
		p.addElement()
	case atom.A:
		for i := len(p.afe) - 1; i >= 0 && p.afe[i] != &p.marker; i-- {
			if p.afe[i].DataAtom == atom.A {
				p.fail() // an a inside an a: the adoption agency
			}
		}
		p.reconstruct()
		p.addFormattingElement()
	case atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.S, atom.Small, atom.Strike, atom.Strong, atom.Tt, atom.U:
		p.reconstruct()
		p.addFormattingElement()
	case atom.Table:
		if !p.quirks {
			p.popUntil(scopeButton, atom.P)
		}
		p.addElement()
		p.im = modeInTable
	case atom.Area, atom.Br, atom.Embed, atom.Img, atom.Keygen, atom.Wbr, atom.Input:
		p.reconstruct()
		p.addVoid()
	case atom.Param, atom.Source, atom.Track:
		p.addVoid()
	case atom.Hr:
		p.popUntil(scopeButton, atom.P)
		p.addVoid()
	case atom.Svg:
		p.reconstruct()
		p.adjustForeignAttrs()
		p.addElement().Namespace = "svg"
		if p.selfClosing {
			p.oe = p.oe[:len(p.oe)-1]
		}
	case atom.Caption, atom.Col, atom.Colgroup, atom.Frame, atom.Head, atom.Tbody, atom.Td, atom.Tfoot, atom.Th,
		atom.Thead, atom.Tr:
		// html ignores these outside tables
	case atom.Html, atom.Body, atom.Frameset, atom.Template, atom.Plaintext, atom.Nobr,
		atom.Applet, atom.Marquee, atom.Object, atom.Image, atom.Textarea, atom.Xmp, atom.Select, atom.Option,
		atom.Optgroup, atom.Rb, atom.Rtc, atom.Rp, atom.Rt, atom.Math:
		p.fail()
	default:
		p.reconstruct()
		p.addElement()
	}
}

func (p *fastParser) inBodyEnd() {
	switch a := p.atom; a {
	case atom.Body, atom.Html:
		// html leaves the elements open: what follows in the body (after
		// a parse error) goes into the current node.
		if !p.inScope(scopeDefault, atom.Body) {
			return
		}
		p.im = modeAfterBody
		if a == atom.Html {
			p.im = modeAfterAfterBody
		}
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Button, atom.Center, atom.Details,
		atom.Dialog, atom.Dir, atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer,
		atom.Header, atom.Hgroup, atom.Listing, atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.Pre, atom.Search,
		atom.Section, atom.Summary, atom.Ul:
		if !p.inScope(scopeDefault, a) {
			return
		}
		p.generateImpliedEndTags()
		p.popUntil(scopeDefault, a)
	case atom.Form:
		node := p.form
		p.form = nil
		i := p.indexInScope(scopeDefault, atom.Form)
		if node == nil || i == -1 || p.oe[i] != node {
			return
		}
		p.generateImpliedEndTags()
		if i = slices.Index(p.oe, node); i >= 0 {
			p.oe = slices.Delete(p.oe, i, i+1)
		}
	case atom.P:
		if !p.inScope(scopeButton, atom.P) {
			// A stray </p> makes an empty p (html runs an implied <p> and
			// closes it).
			p.top().AppendChild(p.newNode(xhtml.ElementNode, atom.P, atom.P.String()))
			return
		}
		p.popUntil(scopeButton, atom.P)
	case atom.Li:
		p.popUntil(scopeListItem, atom.Li)
	case atom.Dd, atom.Dt:
		p.popUntil(scopeDefault, a)
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		p.popUntil(scopeDefault, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6)
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S, atom.Small,
		atom.Strike, atom.Strong, atom.Tt, atom.U:
		p.endFormatting()
	case atom.Applet, atom.Marquee, atom.Object, atom.Br, atom.Template, atom.Select:
		p.fail()
	default:
		p.endOther()
	}
}

// endFormatting is html's adoption agency when the formatting element has
// no special element above it (else the fast parser gives up).
func (p *fastParser) endFormatting() {
	if cur := p.top(); cur.Data == p.data && !slices.Contains(p.afe, cur) {
		p.oe = p.oe[:len(p.oe)-1]
		return
	}
	var fe *xhtml.Node
	fi := -1
	for j := len(p.afe) - 1; j >= 0; j-- {
		if p.afe[j] == &p.marker {
			break
		}
		if p.afe[j].DataAtom == p.atom {
			fe, fi = p.afe[j], j
			break
		}
	}
	if fe == nil {
		p.endOther()
		return
	}
	feIndex := slices.Index(p.oe, fe)
	if feIndex == -1 {
		p.afe = slices.Delete(p.afe, fi, fi+1)
		return
	}
	if !p.inScope(scopeDefault, p.atom) {
		return
	}
	for _, e := range p.oe[feIndex:] {
		if isSpecial(e) {
			p.fail()
		}
	}
	p.popTo(feIndex)
	p.afe = slices.Delete(p.afe, fi, fi+1)
}

// endOther is html's inBodyEndTagOther.
func (p *fastParser) endOther() {
	for i := len(p.oe) - 1; i >= 0; i-- {
		n := p.oe[i]
		if n.DataAtom == p.atom && (p.atom != 0 || n.Data == p.data) {
			p.popTo(i)
			return
		}
		if isSpecial(n) {
			return
		}
	}
}

// inTableText is the text of the table modes: white space goes into the
// table, anything else would be foster-parented (the fast parser gives up).
func (p *fastParser) inTableText() {
	switch p.top().DataAtom {
	case atom.Table, atom.Tbody, atom.Tfoot, atom.Thead, atom.Tr:
		if strings.Trim(p.data, htmlWhitespace) == "" {
			p.addText(p.data)
			return
		}
	}
	p.fail()
}

func (p *fastParser) inTable() bool {
	switch p.kind {
	case tokText:
		p.inTableText()
		return true
	case tokComment:
		p.addComment(p.top())
		return true
	case tokDoctype, tokEOF:
		return true
	case tokStart:
		switch p.atom {
		case atom.Caption:
			p.clearStackToContext(atom.Table)
			p.afe = append(p.afe, &p.marker)
			p.addElement()
			p.im = modeInCaption
			return true
		case atom.Colgroup:
			p.clearStackToContext(atom.Table)
			p.addElement()
			p.im = modeInColumnGroup
			return true
		case atom.Tbody, atom.Tfoot, atom.Thead:
			p.clearStackToContext(atom.Table)
			p.addElement()
			p.im = modeInTableBody
			return true
		case atom.Td, atom.Th, atom.Tr:
			p.implied(atom.Tbody)
			return false
		}
	case tokEnd:
		switch p.atom {
		case atom.Table:
			if p.popUntil(scopeTable, atom.Table) {
				p.resetInsertionMode()
			}
			return true
		case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
			return true
		}
	}
	p.fail() // foster parenting
	return true
}

// implied inserts the element a, as html's parseImpliedToken does for a
// start tag in the table modes.
func (p *fastParser) implied(a atom.Atom) {
	n := p.newNode(xhtml.ElementNode, a, a.String())
	p.top().AppendChild(n)
	p.oe = append(p.oe, n)
	switch a {
	case atom.Tbody:
		// html clears the stack back to the table first: the fast parser
		// implies a tbody only with the table current.
		if len(p.oe) < 2 || p.oe[len(p.oe)-2].DataAtom != atom.Table {
			p.fail()
		}
		p.im = modeInTableBody
	case atom.Tr:
		p.im = modeInRow
	}
}

func (p *fastParser) inTableBody() bool {
	switch p.kind {
	case tokStart:
		switch p.atom {
		case atom.Tr:
			p.clearStackToContext(atom.Tbody, atom.Tfoot, atom.Thead)
			p.addElement()
			p.im = modeInRow
			return true
		case atom.Td, atom.Th:
			if t := p.top().DataAtom; t != atom.Tbody && t != atom.Thead && t != atom.Tfoot {
				p.fail()
			}
			p.implied(atom.Tr)
			return false
		case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Tfoot, atom.Thead:
			if p.popUntil(scopeTable, atom.Tbody, atom.Thead, atom.Tfoot) {
				p.im = modeInTable
				return false
			}
			return true
		}
	case tokEnd:
		switch p.atom {
		case atom.Tbody, atom.Tfoot, atom.Thead:
			if p.inScope(scopeTable, p.atom) {
				p.clearStackToContext(atom.Tbody, atom.Tfoot, atom.Thead)
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeInTable
			}
			return true
		case atom.Table:
			if p.popUntil(scopeTable, atom.Tbody, atom.Thead, atom.Tfoot) {
				p.im = modeInTable
				return false
			}
			return true
		case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html, atom.Td, atom.Th, atom.Tr:
			return true
		}
	case tokComment:
		p.addComment(p.top())
		return true
	}
	return p.inTable()
}

func (p *fastParser) inRow() bool {
	switch p.kind {
	case tokStart:
		switch p.atom {
		case atom.Td, atom.Th:
			p.clearStackToContext(atom.Tr)
			p.addElement()
			p.afe = append(p.afe, &p.marker)
			p.im = modeInCell
			return true
		case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Tfoot, atom.Thead, atom.Tr:
			if p.inScope(scopeTable, atom.Tr) {
				p.clearStackToContext(atom.Tr)
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeInTableBody
				return false
			}
			return true
		}
	case tokEnd:
		switch p.atom {
		case atom.Tr, atom.Table:
			if p.inScope(scopeTable, atom.Tr) {
				p.clearStackToContext(atom.Tr)
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeInTableBody
				return p.atom == atom.Tr
			}
			return true
		case atom.Tbody, atom.Tfoot, atom.Thead:
			if p.inScope(scopeTable, p.atom) && p.inScope(scopeTable, atom.Tr) {
				p.clearStackToContext(atom.Tr)
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeInTableBody
				return false
			}
			return true
		case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html, atom.Td, atom.Th:
			return true
		}
	}
	return p.inTable()
}

func (p *fastParser) inCell() bool {
	switch p.kind {
	case tokStart:
		switch p.atom {
		case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
			if p.popUntil(scopeTable, atom.Td, atom.Th) {
				p.clearActiveFormattingElements()
				p.im = modeInRow
				return false
			}
			return true
		}
	case tokEnd:
		switch p.atom {
		case atom.Td, atom.Th:
			if !p.popUntil(scopeTable, p.atom) {
				return true
			}
			p.clearActiveFormattingElements()
			p.im = modeInRow
			return true
		case atom.Body, atom.Caption, atom.Col, atom.Colgroup, atom.Html:
			return true
		case atom.Table, atom.Tbody, atom.Tfoot, atom.Thead, atom.Tr:
			if !p.inScope(scopeTable, p.atom) {
				return true
			}
			if p.popUntil(scopeTable, atom.Td, atom.Th) {
				p.clearActiveFormattingElements()
			}
			p.im = modeInRow
			return false
		}
	}
	p.inBody()
	return true
}

func (p *fastParser) inCaption() bool {
	switch p.kind {
	case tokStart:
		switch p.atom {
		case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Td, atom.Tfoot, atom.Thead, atom.Tr:
			if !p.popUntil(scopeTable, atom.Caption) {
				return true
			}
			p.clearActiveFormattingElements()
			p.im = modeInTable
			return false
		}
	case tokEnd:
		switch p.atom {
		case atom.Caption, atom.Table:
			if !p.popUntil(scopeTable, atom.Caption) {
				return true
			}
			p.clearActiveFormattingElements()
			p.im = modeInTable
			return p.atom == atom.Caption
		case atom.Body, atom.Col, atom.Colgroup, atom.Html, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
			return true
		}
	}
	p.inBody()
	return true
}

func (p *fastParser) inColumnGroup() bool {
	switch p.kind {
	case tokText:
		if strings.TrimLeft(p.data, htmlWhitespace) == "" {
			p.addText(p.data)
			return true
		}
	case tokComment:
		p.addComment(p.top())
		return true
	case tokDoctype:
		return true
	case tokStart:
		if p.atom == atom.Col {
			p.addVoid()
			return true
		}
	case tokEnd:
		switch p.atom {
		case atom.Colgroup:
			if p.top().DataAtom == atom.Colgroup {
				p.oe = p.oe[:len(p.oe)-1]
				p.im = modeInTable
			}
			return true
		case atom.Col:
			return true
		}
	case tokEOF:
		return true
	}
	if p.top().DataAtom != atom.Colgroup {
		return true
	}
	p.oe = p.oe[:len(p.oe)-1]
	p.im = modeInTable
	return false
}

// resetInsertionMode is html's for a stack without templates.
func (p *fastParser) resetInsertionMode() {
	for i := len(p.oe) - 1; i >= 0; i-- {
		switch p.oe[i].DataAtom {
		case atom.Td, atom.Th:
			if i > 0 {
				p.im = modeInCell
				return
			}
		case atom.Tr:
			p.im = modeInRow
			return
		case atom.Tbody, atom.Thead, atom.Tfoot:
			p.im = modeInTableBody
			return
		case atom.Caption:
			p.im = modeInCaption
			return
		case atom.Colgroup:
			p.im = modeInColumnGroup
			return
		case atom.Table:
			p.im = modeInTable
			return
		case atom.Body:
			p.im = modeInBody
			return
		case atom.Select, atom.Template, atom.Head, atom.Frameset, atom.Html:
			p.fail()
		}
	}
	p.fail()
}

// foreign runs a token inside an svg element.
func (p *fastParser) foreign() {
	top := p.top()
	if top.Namespace != "svg" || top.Data == "foreignObject" || top.Data == "desc" || top.Data == "title" {
		p.fail() // integration points
	}
	switch p.kind {
	case tokText:
		p.addText(p.data)
	case tokComment:
		p.addComment(top)
	case tokStart:
		if p.atom == atom.Font || p.raw != "" {
			p.fail() // a breakout font, or a tag the scanner read as raw text
		}
		name, ok := svgName(p.data)
		if !ok {
			p.fail() // a breakout tag or an unusual name
		}
		if name != p.data {
			p.data, p.atom = name, atom.Lookup([]byte(name))
		}
		p.adjustForeignAttrs()
		p.addElement().Namespace = "svg"
		if p.selfClosing {
			p.oe = p.oe[:len(p.oe)-1]
		}
	case tokEnd:
		if !strings.EqualFold(top.Data, p.data) {
			p.fail()
		}
		p.oe = p.oe[:len(p.oe)-1]
	}
}

// adjustForeignAttrs renames the current token's attributes as html does
// in SVG (viewbox -> viewBox, xlink:href -> xlink / href).
func (p *fastParser) adjustForeignAttrs() {
	for i := range p.attr {
		a, ok := svgAttr(p.attr[i].Key)
		if !ok {
			p.fail()
		}
		p.attr[i].Namespace, p.attr[i].Key = a.Namespace, a.Key
	}
}

// The SVG names html adjusts, learnt by asking html.Parse once per name:
// its tables are not exported. The caches are bounded; names beyond make
// the fast parser give up.
var svgNames = struct {
	sync.Mutex
	elems map[string]string
	attrs map[string]xhtml.Attribute
}{elems: map[string]string{}, attrs: map[string]xhtml.Attribute{}}

const maxSVGNames = 2048

// svgName is the name html gives the element tag inside svg; false for a
// tag that leaves SVG (a "breakout" tag).
func svgName(tag string) (string, bool) {
	svgNames.Lock()
	defer svgNames.Unlock()
	if n, ok := svgNames.elems[tag]; ok {
		return n, n != ""
	}
	if len(svgNames.elems) >= maxSVGNames {
		return "", false
	}
	n := ""
	if c := svgProbe("<" + tag + ">"); c != nil && c.Type == xhtml.ElementNode && c.Namespace == "svg" && len(c.Attr) == 0 {
		n = c.Data
	}
	svgNames.elems[strings.Clone(tag)] = n
	return n, n != ""
}

// svgAttr is the attribute html makes of key on an SVG element.
func svgAttr(key string) (xhtml.Attribute, bool) {
	svgNames.Lock()
	defer svgNames.Unlock()
	if a, ok := svgNames.attrs[key]; ok {
		return a, a.Key != ""
	}
	if len(svgNames.attrs) >= maxSVGNames {
		return xhtml.Attribute{}, false
	}
	var a xhtml.Attribute
	if c := svgProbe("<g " + key + "=\"\">"); c != nil && c.Namespace == "svg" && c.Data == "g" && len(c.Attr) == 1 {
		a = xhtml.Attribute{Namespace: c.Attr[0].Namespace, Key: c.Attr[0].Key}
	}
	svgNames.attrs[strings.Clone(key)] = a
	return a, a.Key != ""
}

// svgProbe parses <svg>markup and returns the svg element's first child.
func svgProbe(markup string) *xhtml.Node {
	doc, err := xhtml.Parse(strings.NewReader("<!DOCTYPE html><html><head></head><body><svg>" + markup))
	if err != nil {
		return nil
	}
	var find func(n *xhtml.Node) *xhtml.Node
	find = func(n *xhtml.Node) *xhtml.Node {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == xhtml.ElementNode && c.Namespace == "svg" && c.DataAtom == atom.Svg {
				return c.FirstChild
			}
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	return find(doc)
}
