package crawler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Media types Extract accepts. Anything else is EUNSUPPORTED and the crawler
// counts the page as skipped.
const (
	MediaHTML     = "text/html"
	MediaXHTML    = "application/xhtml+xml"
	MediaPlain    = "text/plain"
	MediaMarkdown = "text/markdown"
)

// maxWalkDepth bounds the recursion over the HTML tree; deeper content is
// flattened into text so that a hostile page cannot blow the stack.
const maxWalkDepth = 256

// MediaType returns the lower-cased media type of a Content-Type header value
// without parameters, sniffing body when the header is empty or unparsable.
func MediaType(contentType string, body []byte) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	return strings.ToLower(mt)
}

// IsTextMedia reports whether Extract accepts the media type mt (as returned
// by MediaType).
func IsTextMedia(mt string) bool {
	switch mt {
	case MediaHTML, MediaXHTML, MediaPlain, MediaMarkdown, "text/x-markdown":
		return true
	}
	return false
}

// Extract turns a fetched page into a kgagent.Document: title, canonical URL,
// language, the main content split into sections along its heading hierarchy
// (with the #anchor of each section), code blocks verbatim, tables as rows,
// definition lists as terms, outgoing links made absolute, and the content
// hash. pageURL must be absolute; contentType is the Content-Type header (the
// body is sniffed when it is empty). HTML, text/plain and text/markdown are
// accepted (text/plain served for a .md URL is read as Markdown).
//
// Errors: EINVALID for a bad pageURL, a body that is not valid text in its
// declared charset (invalid UTF-8, binary garbage) or that holds no text;
// EUNSUPPORTED for a media type that is not text; EFORBIDDEN for a page
// whose <meta name="robots"> says noindex (nofollow drops its links). Collection, ETag,
// LastModified and FetchedAt are left for the caller to fill in.
func Extract(pageURL, contentType string, body []byte) (kgagent.Document, error) {
	base, err := url.Parse(pageURL)
	if err != nil || !base.IsAbs() || base.Host == "" {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EINVALID, "page URL %q is not an absolute URL", text.Truncate(pageURL, 200))
	}
	mt := MediaType(contentType, body)
	if !IsTextMedia(mt) {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EUNSUPPORTED, "content type %q is not HTML, plain text or Markdown", mt)
	}
	text, err := decodeText(body, contentType, mt)
	if err != nil {
		return kgagent.Document{}, err
	}
	var doc kgagent.Document
	switch {
	case mt == MediaHTML || mt == MediaXHTML:
		doc, err = extractHTML(base, text)
		mt = MediaHTML
	case mt == MediaMarkdown || mt == "text/x-markdown" || isMarkdownPath(base.Path):
		doc = extractMarkdown(base, string(text))
		mt = MediaMarkdown
	default:
		doc = extractPlain(base, string(text))
		mt = MediaPlain
	}
	if err != nil {
		return kgagent.Document{}, err
	}
	doc.URL = base.String()
	doc.ContentType = mt
	if doc.CanonicalURL == "" {
		doc.CanonicalURL = doc.URL
	}
	if doc.Title == "" {
		doc.Title = titleFromURL(base)
	}
	for i := range doc.Sections {
		if doc.Sections[i].Level == 0 && doc.Sections[i].Heading == "" {
			doc.Sections[i].Heading = doc.Title
		}
		if len(doc.Sections[i].HeadingPath) == 0 {
			doc.Sections[i].HeadingPath = []string{doc.Sections[i].Heading}
		}
	}
	if !hasText(doc) {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EINVALID, "page has no text content")
	}
	doc.ContentHash = contentHash(doc)
	return doc, nil
}

var metaCharset = regexp.MustCompile(`(?i)<meta[^>]{0,200}charset=["']?([a-z0-9_:.-]{1,40})`)

// decodeText returns body as valid UTF-8: UTF-8 as is (body itself, not a
// copy: the caller must not change it), other declared or meta-declared
// charsets converted, anything else rejected.
func decodeText(body []byte, contentType, mt string) ([]byte, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "page body is binary (holds NUL bytes)")
	}
	if utf8.Valid(body) {
		return body, nil
	}
	var name string
	var certain bool
	if mt == MediaHTML || mt == MediaXHTML {
		_, name, certain = charset.DetermineEncoding(body, contentType)
		if !certain {
			if m := metaCharset.FindSubmatch(body[:min(len(body), 1024)]); m != nil {
				name, certain = string(m[1]), true
			}
		}
	} else if _, params, err := mime.ParseMediaType(contentType); err == nil && params["charset"] != "" {
		name, certain = params["charset"], true
	}
	if certain && name != "" && !strings.EqualFold(name, "utf-8") {
		if enc, _ := charset.Lookup(name); enc != nil {
			out, err := enc.NewDecoder().Bytes(body)
			if err == nil && utf8.Valid(out) {
				return out, nil
			}
		}
	}
	return nil, kgagent.Errorf(kgagent.EINVALID, "page body is not valid UTF-8 and declares no other charset")
}

// htmlExtractor walks the main content of a page and builds sections.
type htmlExtractor struct {
	noindex  bool // <meta name="robots" content="noindex">
	nofollow bool // <meta name="robots" content="nofollow">
	base     *url.URL
	doc      kgagent.Document
	cur      *kgagent.Section
	stack    []heading // open headings, outermost first
	para     []byte    // text of the paragraph being read
	text     textBuf
	prefix   string // admonition title waiting for its paragraph
	sections []kgagent.Section
}

type heading struct {
	level  int
	text   string
	anchor string
}

func extractHTML(base *url.URL, text []byte) (kgagent.Document, error) {
	root, err := html.Parse(bytes.NewReader(text))
	if err != nil {
		return kgagent.Document{}, kgagent.WrapError(kgagent.EINVALID, err, "page is not parsable HTML")
	}
	// The parser always builds html > head, body. Metadata is read with
	// goquery from the (small) head; the body gets one hand-written pass,
	// because a selector per rule would walk a large page ten times.
	htmlNode, head, body := skeleton(root)
	x := &htmlExtractor{base: base}
	if head != nil {
		hq := goquery.NewDocumentFromNode(head)
		// <base href> changes how relative links resolve.
		if href, ok := hq.Find("base[href]").First().Attr("href"); ok {
			if b, err := base.Parse(strings.TrimSpace(href)); err == nil && (b.Scheme == "http" || b.Scheme == "https") {
				x.base = b
			}
		}
		x.doc.Title = normSpace(hq.Find("title").First().Text())
		// <meta name="robots"> (or name="kgagent") noindex / nofollow / none.
		hq.Find("meta[name][content]").Each(func(_ int, m *goquery.Selection) {
			if name := strings.ToLower(m.AttrOr("name", "")); name != "robots" && name != "kgagent" {
				return
			}
			for _, d := range strings.Split(strings.ToLower(m.AttrOr("content", "")), ",") {
				switch strings.TrimSpace(d) {
				case "noindex":
					x.noindex = true
				case "nofollow":
					x.nofollow = true
				case "none":
					x.noindex, x.nofollow = true, true
				}
			}
		})
		if href, ok := hq.Find("link[rel~=canonical]").First().Attr("href"); ok {
			if u := resolveLink(x.base, href); u != "" {
				x.doc.CanonicalURL = u
			}
		}
	}
	if htmlNode != nil {
		x.doc.Lang = attr(htmlNode, "lang")
	}
	if body == nil {
		return x.doc, nil
	}
	if x.noindex {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EFORBIDDEN, "page asks not to be indexed (meta robots noindex)")
	}
	p := &prepass{links: linkResolver{base: x.base}, seen: map[string]bool{}}
	p.walk(body, 0)
	if !x.nofollow {
		x.doc.Links = p.found
	}
	main := p.main
	if main == nil {
		main = p.article
	}
	if main == nil {
		main = body
		stripBoilerplate(main, true, 0)
	} else {
		stripBoilerplate(main, false, 0)
	}
	if x.doc.Title == "" {
		if h1 := findFirst(main, atom.H1, 0); h1 != nil {
			x.doc.Title = x.text.normText(h1)
		}
	}
	x.cur = &kgagent.Section{Level: 0}
	x.walkChildren(main, 0)
	x.flushPara()
	x.closeSection()
	x.doc.Sections = x.sections
	return x.doc, nil
}

// skeleton finds the html, head and body elements of a parsed document.
func skeleton(root *html.Node) (htmlNode, head, body *html.Node) {
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Html {
			htmlNode = c
		}
	}
	if htmlNode == nil {
		return nil, nil, nil
	}
	for c := htmlNode.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Head {
			head = c
		}
		if c.Type == html.ElementNode && (c.DataAtom == atom.Body || c.DataAtom == atom.Frameset) {
			body = c
		}
	}
	return htmlNode, head, body
}

// prepass walks the body once: it drops elements that never hold content
// (scripts, styles, forms controls, embedded objects, Sphinx pilcrows),
// collects the outgoing links (navigation included: they lead to pages),
// and finds the main content candidates.
type prepass struct {
	links         linkResolver
	found         []kgagent.Link
	seen          map[string]bool
	text          textBuf
	main, article *html.Node
}

func (p *prepass) walk(n *html.Node, depth int) {
	if depth > maxWalkDepth*4 {
		return
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type != html.ElementNode {
			c = next
			continue
		}
		switch c.DataAtom {
		case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Iframe, atom.Object,
			atom.Embed, atom.Canvas, atom.Button, atom.Select, atom.Textarea, atom.Input:
			n.RemoveChild(c)
			c = next
			continue
		case atom.A, atom.Area:
			if hasClass(c, "headerlink") {
				n.RemoveChild(c)
				c = next
				continue
			}
			p.link(c)
		case atom.Main:
			if p.main == nil {
				p.main = c
			}
		case atom.Article:
			if p.article == nil {
				p.article = c
			}
		}
		if p.main == nil && attr(c, "role") == "main" {
			p.main = c
		}
		p.walk(c, depth+1)
		c = next
	}
}

func (p *prepass) link(a *html.Node) {
	href, ok := attrOK(a, "href")
	if !ok || strings.Contains(strings.ToLower(attr(a, "rel")), "nofollow") {
		return
	}
	u := p.links.resolve(href)
	if u == "" || p.seen[u] {
		return
	}
	p.seen[u] = true
	p.found = append(p.found, kgagent.Link{URL: u, Text: text.Truncate(p.text.normText(a), 200)})
}

// stripBoilerplate removes navigation inside the main content; for the body
// fallback also headers, footers and asides.
func stripBoilerplate(n *html.Node, body bool, depth int) {
	if depth > maxWalkDepth*4 {
		return
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			drop := false
			switch c.DataAtom {
			case atom.Nav, atom.Aside:
				drop = true
			case atom.Header, atom.Footer:
				drop = body
			}
			switch attr(c, "role") {
			case "navigation", "search":
				drop = true
			case "banner", "contentinfo":
				drop = drop || body
			}
			if drop {
				n.RemoveChild(c)
			} else {
				stripBoilerplate(c, body, depth+1)
			}
		}
		c = next
	}
}

func findFirst(n *html.Node, a atom.Atom, depth int) *html.Node {
	if depth > maxWalkDepth*4 {
		return nil
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			if c.DataAtom == a {
				return c
			}
			if f := findFirst(c, a, depth+1); f != nil {
				return f
			}
		}
	}
	return nil
}

func hasClass(n *html.Node, class string) bool {
	return hasField(attr(n, "class"), class)
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.TrimSpace(a.Val), true
		}
	}
	return "", false
}

// resolveLink makes href absolute against base; it returns "" for links that
// are not http(s) or do not parse. The fragment is kept: it names a section.
func resolveLink(base *url.URL, href string) string {
	href = strings.TrimSpace(href)
	if href == "" || len(href) > maxURLLength {
		return ""
	}
	u, err := base.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}

func (x *htmlExtractor) walkChildren(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		x.walk(c, depth+1)
	}
}

func (x *htmlExtractor) walk(n *html.Node, depth int) {
	switch n.Type {
	case html.TextNode:
		x.para = append(x.para, n.Data...)
		return
	case html.ElementNode:
	default:
		return
	}
	if depth > maxWalkDepth {
		x.para = append(x.para, ' ')
		x.para = appendNodeText(x.para, n, 0)
		x.para = append(x.para, ' ')
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		x.startSection(n)
	case atom.P:
		x.flushPara()
		if hasClass(n, "admonition-title") {
			// Sphinx/MkDocs "Note", "Warning": a prefix of the next paragraph.
			if t := x.text.normText(n); t != "" {
				x.prefix = strings.TrimSuffix(t, ":") + ": "
			}
			return
		}
		x.walkChildren(n, depth)
		x.flushPara()
	case atom.Pre:
		x.flushPara()
		x.addCode(n)
	case atom.Table:
		x.flushPara()
		x.addTable(n)
	case atom.Ul, atom.Ol:
		x.flushPara()
		if holdsHeading(n, 0) {
			// A list of sections (Javadoc's member details: li > section >
			// h3 "read" with the entry under it) is structure, not a list:
			// each heading opens its section as anywhere else.
			x.walkChildren(n, depth)
			x.flushPara()
			return
		}
		x.addList(n)
	case atom.Dl:
		x.flushPara()
		x.addDL(n, depth)
	case atom.Br:
		x.para = append(x.para, '\n')
	case atom.Img:
		x.para = append(x.para, attr(n, "alt")...)
	default:
		if isInline(n.DataAtom) {
			x.walkChildren(n, depth)
			return
		}
		x.flushPara()
		x.walkChildren(n, depth)
		x.flushPara()
	}
}

// holdsHeading reports whether a heading element lies within n (a few
// levels down).
func holdsHeading(n *html.Node, depth int) bool {
	if depth > 6 {
		return false
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			return true
		}
		if holdsHeading(c, depth+1) {
			return true
		}
	}
	return false
}

func isInline(a atom.Atom) bool {
	switch a {
	case atom.A, atom.Span, atom.Code, atom.Em, atom.Strong, atom.B, atom.I, atom.Var,
		atom.Samp, atom.Kbd, atom.Dfn, atom.Abbr, atom.Sub, atom.Sup, atom.Small, atom.Mark,
		atom.Cite, atom.Q, atom.Time, atom.U, atom.S, atom.Tt, atom.Big, atom.Label, atom.Font,
		atom.Del, atom.Ins, atom.Bdi, atom.Bdo, atom.Data, atom.Wbr:
		return true
	}
	return false
}

func (x *htmlExtractor) flushPara() {
	t := normSpaceBytes(x.para)
	x.para = x.para[:0]
	if t != "" && x.prefix != "" {
		t, x.prefix = x.prefix+t, ""
	}
	if t != "" {
		x.cur.Blocks = append(x.cur.Blocks, kgagent.Block{Kind: kgagent.BlockParagraph, Text: t})
	}
}

// A section whose heading has no text under it is kept too: API references
// often put a whole entry (e.g. "module.name — what it does") in a heading.
func (x *htmlExtractor) closeSection() {
	if x.cur != nil && (len(x.cur.Blocks) > 0 || (x.cur.Level > 0 && x.cur.Heading != "")) {
		x.sections = append(x.sections, *x.cur)
	}
}

// startSection opens the section of heading element h.
func (x *htmlExtractor) startSection(h *html.Node) {
	x.flushPara()
	level := int(h.Data[1] - '0')
	x.openSection(level, x.text.normText(h), headingAnchor(h))
}

func (x *htmlExtractor) openSection(level int, text, anchor string) {
	x.closeSection()
	x.prefix = ""
	for len(x.stack) > 0 && x.stack[len(x.stack)-1].level >= level {
		x.stack = x.stack[:len(x.stack)-1]
	}
	x.stack = append(x.stack, heading{level: level, text: text, anchor: anchor})
	path := make([]string, 0, len(x.stack))
	for _, h := range x.stack {
		if h.text != "" {
			path = append(path, h.text)
		}
	}
	x.cur = &kgagent.Section{Anchor: anchor, Heading: text, Level: level, HeadingPath: path}
}

// headingAnchor is the id of the heading, of an anchor inside it, or of the
// section element that encloses it (Sphinx, many static site generators).
func headingAnchor(h *html.Node) string {
	if id := attr(h, "id"); id != "" {
		return id
	}
	for c := h.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.A {
			if id := attr(c, "id"); id != "" {
				return id
			}
			if name := attr(c, "name"); name != "" {
				return name
			}
		}
	}
	// Preceding empty elements are label targets (Sphinx writes
	// <span id="label"></span> before the heading): use the nearest one's id,
	// else, when nothing but such targets precedes the heading, the id of the
	// enclosing section.
	var label string
	onlyTargets := true
	for sib := h.PrevSibling; sib != nil; sib = sib.PrevSibling {
		if sib.Type == html.TextNode && strings.TrimSpace(sib.Data) == "" {
			continue
		}
		if sib.Type == html.ElementNode && (sib.DataAtom == atom.Span || sib.DataAtom == atom.A) && strings.TrimSpace(nodeText(sib)) == "" {
			if label == "" {
				label = attr(sib, "id")
			}
			continue
		}
		onlyTargets = false
		break
	}
	if p := h.Parent; onlyTargets && p != nil && p.Type == html.ElementNode {
		switch p.DataAtom {
		case atom.Section, atom.Div, atom.Article, atom.Header:
			if id := attr(p, "id"); id != "" {
				return id
			}
		}
	}
	if label != "" {
		return label
	}
	return ""
}

func (x *htmlExtractor) addCode(pre *html.Node) {
	text := strings.TrimRight(rawText(pre), "\n\r\t ")
	text = strings.TrimLeft(text, "\n\r")
	if strings.TrimSpace(text) == "" {
		return
	}
	x.cur.Blocks = append(x.cur.Blocks, kgagent.Block{Kind: kgagent.BlockCode, Text: text, Lang: codeLang(pre)})
}

// codeLang reads the language from class="language-x" / "lang-x" on the pre
// or its code child, or Sphinx's "highlight-x" on an enclosing div.
func codeLang(pre *html.Node) string {
	nodes := []*html.Node{pre}
	for c := pre.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Code {
			nodes = append(nodes, c)
		}
	}
	for p, i := pre.Parent, 0; p != nil && i < 3; p, i = p.Parent, i+1 {
		nodes = append(nodes, p)
	}
	for _, n := range nodes {
		for _, cl := range strings.Fields(attr(n, "class")) {
			for _, prefix := range []string{"language-", "lang-", "highlight-"} {
				if l, ok := strings.CutPrefix(cl, prefix); ok && l != "" && l != "default" {
					return l
				}
			}
		}
	}
	return ""
}

func (x *htmlExtractor) addTable(t *html.Node) {
	var rows [][]string
	var caption string
	var visit func(n *html.Node, depth int)
	visit = func(n *html.Node, depth int) {
		if depth > 8 {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Caption:
				caption = x.text.normText(c)
			case atom.Thead, atom.Tbody, atom.Tfoot:
				visit(c, depth+1)
			case atom.Tr:
				var row []string
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
						row = append(row, x.text.normText(td))
					}
				}
				if len(row) > 0 && strings.Join(row, "") != "" {
					rows = append(rows, row)
				}
			}
		}
	}
	visit(t, 0)
	if len(rows) == 0 {
		return
	}
	lines := make([]string, 0, len(rows)+1)
	if caption != "" {
		lines = append(lines, caption)
	}
	for _, r := range rows {
		lines = append(lines, strings.Join(r, " | "))
	}
	x.cur.Blocks = append(x.cur.Blocks, kgagent.Block{Kind: kgagent.BlockTable, Text: strings.Join(lines, "\n"), Rows: rows})
}

func (x *htmlExtractor) addList(l *html.Node) {
	var lines []string
	for li := l.FirstChild; li != nil; li = li.NextSibling {
		if li.Type == html.ElementNode && li.DataAtom == atom.Li {
			if t := x.text.normText(li); t != "" {
				lines = append(lines, "- "+t)
			}
		}
	}
	// Code blocks inside list items stay verbatim blocks of their own.
	if len(lines) > 0 {
		x.cur.Blocks = append(x.cur.Blocks, kgagent.Block{Kind: kgagent.BlockList, Text: strings.Join(lines, "\n")})
	}
}

// addDL adds a definition list. A Sphinx API description (dt class="sig" with
// an id, such as os.path.join) becomes a subsection per signature so that
// each API entry gets its own anchor; any other dl becomes a deflist block.
func (x *htmlExtractor) addDL(dl *html.Node, depth int) {
	if isAPIList(dl) {
		parentLevel := 0
		if len(x.stack) > 0 {
			parentLevel = x.stack[len(x.stack)-1].level
		}
		saved := append([]heading(nil), x.stack...)
		for c := dl.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Dt:
				x.flushPara()
				x.stack = append([]heading(nil), saved...)
				x.openSection(min(parentLevel+1, 6), x.text.normText(c), attr(c, "id"))
			case atom.Dd:
				x.walkChildren(c, depth)
				x.flushPara()
			}
		}
		// Content after the list belongs to the enclosing heading again.
		x.closeSection()
		x.stack = saved
		var text, anchor string
		level := 0
		if len(saved) > 0 {
			top := saved[len(saved)-1]
			text, level, anchor = top.text, top.level, top.anchor
		}
		path := make([]string, 0, len(saved))
		for _, h := range saved {
			path = append(path, h.text)
		}
		x.cur = &kgagent.Section{Heading: text, Level: level, HeadingPath: path, Anchor: anchor}
		return
	}
	var terms []kgagent.Definition
	var pending []string
	for c := dl.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Dt:
			pending = append(pending, x.text.normText(c))
		case atom.Dd:
			def := x.text.normText(c)
			if len(pending) == 0 {
				pending = []string{""}
			}
			for _, t := range pending {
				terms = append(terms, kgagent.Definition{Term: t, Definition: def})
			}
			pending = nil
		case atom.Div: // <div><dt/><dd/></div> is allowed in HTML5
			for g := c.FirstChild; g != nil; g = g.NextSibling {
				if g.Type == html.ElementNode && g.DataAtom == atom.Dt {
					pending = append(pending, x.text.normText(g))
				} else if g.Type == html.ElementNode && g.DataAtom == atom.Dd {
					for _, t := range pending {
						terms = append(terms, kgagent.Definition{Term: t, Definition: x.text.normText(g)})
					}
					pending = nil
				}
			}
		}
	}
	for _, t := range pending {
		terms = append(terms, kgagent.Definition{Term: t})
	}
	if len(terms) == 0 {
		return
	}
	lines := make([]string, len(terms))
	for i, t := range terms {
		lines[i] = t.Term + ": " + t.Definition
	}
	x.cur.Blocks = append(x.cur.Blocks, kgagent.Block{Kind: kgagent.BlockDefList, Text: strings.Join(lines, "\n"), Terms: terms})
}

func isAPIList(dl *html.Node) bool {
	for c := dl.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Dt {
			return attr(c, "id") != "" && strings.Contains(" "+attr(c, "class")+" ", " sig ")
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.TrimSpace(a.Val)
		}
	}
	return ""
}

// nodeText is the text of n with spaces between block elements.
func nodeText(n *html.Node) string {
	return string(appendNodeText(nil, n, 0))
}

// rawText is the text of n exactly as written (for code).
func rawText(n *html.Node) string {
	var b strings.Builder
	var f func(*html.Node, int)
	f = func(n *html.Node, depth int) {
		if depth > maxWalkDepth*4 {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Br {
			b.WriteByte('\n')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			f(c, depth+1)
		}
	}
	f(n, 0)
	return b.String()
}

func titleFromURL(u *url.URL) string {
	p := strings.TrimSuffix(u.Path, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return u.Host
	}
	if s, err := url.PathUnescape(p); err == nil && utf8.ValidString(s) {
		return s
	}
	return p
}

func hasText(doc kgagent.Document) bool {
	for _, s := range doc.Sections {
		for _, b := range s.Blocks {
			if strings.TrimSpace(b.Text) != "" {
				return true
			}
		}
	}
	return false
}

// contentHash is the hex sha256 of the extracted text: title, headings and
// blocks, so that markup-only changes do not count as changes.
func contentHash(doc kgagent.Document) string {
	n := len(doc.Title) + 1
	for _, s := range doc.Sections {
		n += len(s.Anchor) + len(s.Heading) + 2
		for _, b := range s.Blocks {
			n += len(b.Kind) + len(b.Text) + 2
		}
	}
	buf := make([]byte, 0, n)
	buf = append(append(buf, doc.Title...), 0)
	for _, s := range doc.Sections {
		buf = append(append(buf, s.Anchor...), 1)
		buf = append(append(buf, s.Heading...), 0)
		for _, b := range s.Blocks {
			buf = append(append(buf, b.Kind...), 2)
			buf = append(append(buf, b.Text...), 0)
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}
