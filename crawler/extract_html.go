package crawler

// The HTML walker of Extract: the prepass (boilerplate, links, the main
// content), then the sections built heading by heading, with the text
// helpers the walker reads nodes with. The blocks a section holds (code,
// tables, lists, definition lists) are in extract_blocks.go.

import (
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

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

// pushHeading closes the headings of stack at level or deeper, opens
// (level, text, anchor) and returns the new stack with the heading path
// (the open headings' texts, outermost first, empty ones left out): the
// sections of HTML pages and of text documents nest the same way.
func pushHeading(stack []heading, level int, text, anchor string) ([]heading, []string) {
	for len(stack) > 0 && stack[len(stack)-1].level >= level {
		stack = stack[:len(stack)-1]
	}
	stack = append(stack, heading{level: level, text: text, anchor: anchor})
	path := make([]string, 0, len(stack))
	for _, h := range stack {
		if h.text != "" {
			path = append(path, h.text)
		}
	}
	return stack, path
}

func extractHTML(base *url.URL, text []byte) (kgagent.Document, error) {
	root, page, release, err := parseHTML(text)
	if err != nil {
		return kgagent.Document{}, kgagent.WrapError(kgagent.EINVALID, err, "page is not parsable HTML")
	}
	// the tree's nodes go back to the parser once the Document (strings
	// only, detached from the page) is made
	defer release()
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
		detachDoc(&x.doc, page)
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
	detachDoc(&x.doc, page)
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
	var path []string
	x.stack, path = pushHeading(x.stack, level, text, anchor)
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
