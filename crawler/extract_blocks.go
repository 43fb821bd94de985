package crawler

// The blocks of a section the HTML walker builds: code (with its
// language), tables, lists and definition lists (API signatures among
// them).

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/kgagent/kgagent"
)

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
