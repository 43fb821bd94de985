package graphrag

import (
	"sort"
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// links emits page links_to page for links to other pages, with the link
// text as the target's name, and text alias_of the API entity an anchor names.
func (e *extraction) links() {
	self := StripFragment(e.doc.URL)
	lead := ""
	if len(e.doc.Sections) > 0 {
		lead = e.doc.Sections[0].Anchor
	}
	// The links handled (to http(s) pages, up to 500 to other pages), and
	// their texts' anchors found in one pass.
	type link struct{ url, target, text string }
	var links []link
	var texts []string
	n := 0
	for _, l := range e.doc.Links {
		if n >= 500 {
			break
		}
		target := StripFragment(l.URL)
		if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
			continue
		}
		text := strings.TrimSpace(l.Text)
		links = append(links, link{l.URL, target, text})
		texts = append(texts, text)
		if target != self {
			n++
		}
	}
	e.findAnchors(texts)
	for _, l := range links {
		target, lt := l.target, l.text
		anchor := e.anchorOf(lt, lead)
		if target != self {
			e.emit(e.page, PredLinksTo, PageEntity(target, lt), "", anchor, lt)
		}
		if i := strings.IndexByte(l.url, '#'); i >= 0 && lt != "" {
			frag := l.url[i+1:]
			if isIdent(frag) && strings.Contains(frag, ".") {
				alias := NewEntity(lt, TypeTerm)
				api := NewEntity(frag, TypeFunction)
				if target == self && e.hasAnchor(frag) {
					anchor = frag
				}
				if alias.ID != api.ID && !text.CommonTerms.Has(alias.ID) {
					e.emit(alias, PredAliasOf, api, "", anchor, lt)
				}
			}
		}
	}
}

// hasAnchor reports whether a section of the page has anchor a.
func (e *extraction) hasAnchor(a string) bool {
	for i := range e.doc.Sections {
		if e.doc.Sections[i].Anchor == a {
			return true
		}
	}
	return false
}

// anchorOf returns the anchor of the first section whose text holds s
// (found by findAnchors, or one by one for a text findAnchors was not given).
func (e *extraction) anchorOf(s, fallback string) string {
	if s == "" {
		return fallback
	}
	f, ok := e.anchors[s]
	if !ok {
		f.anchor, f.ok = e.findAnchor(s)
		if e.anchors == nil {
			e.anchors = map[string]found{}
		}
		e.anchors[s] = f
	}
	if !f.ok {
		return fallback
	}
	return f.anchor
}

// found is a remembered answer of findAnchor.
type found struct {
	anchor string
	ok     bool
}

// joinSections builds the page's text for findAnchor(s) once: each section's
// heading and blocks, in order, each followed by a NUL byte.
func (e *extraction) joinSections() {
	if e.joined != "" {
		return
	}
	n := 0
	for i := range e.doc.Sections {
		sec := &e.doc.Sections[i]
		n += len(sec.Heading) + 1
		for _, bl := range sec.Blocks {
			n += len(bl.Text) + 1
		}
	}
	var b strings.Builder
	b.Grow(n)
	e.secEnds = make([]int, len(e.doc.Sections))
	for i := range e.doc.Sections {
		sec := &e.doc.Sections[i]
		b.WriteString(sec.Heading)
		b.WriteByte(0)
		for _, bl := range sec.Blocks {
			b.WriteString(bl.Text)
			b.WriteByte(0)
		}
		e.secEnds[i] = b.Len()
	}
	e.joined = b.String()
}

// sectionAt returns the anchor of the section that holds byte at of joined.
func (e *extraction) sectionAt(at int) string {
	return e.doc.Sections[sort.SearchInts(e.secEnds, at+1)].Anchor
}

// findAnchors remembers the answers of findAnchor for all texts at once,
// with one pass over the page's text (firstIndexes) instead of one search
// per text.
func (e *extraction) findAnchors(texts []string) {
	if e.anchors == nil {
		e.anchors = make(map[string]found, len(texts))
	}
	var pats []string
	for _, s := range texts {
		if _, ok := e.anchors[s]; ok || s == "" {
			continue
		}
		if strings.IndexByte(s, 0) >= 0 {
			var f found
			f.anchor, f.ok = e.findAnchorSlow(s)
			e.anchors[s] = f
			continue
		}
		e.anchors[s] = found{} // also marks s as taken
		pats = append(pats, s)
	}
	if len(pats) == 0 {
		return
	}
	e.joinSections()
	for i, at := range firstIndexes(e.joined, pats) {
		if at >= 0 {
			e.anchors[pats[i]] = found{anchor: e.sectionAt(at), ok: true}
		}
	}
}

// findAnchor returns the anchor of the first section whose text holds s:
// one search of the page's text (each section's heading and blocks, in
// order, joined by NUL bytes) rather than one per block.
func (e *extraction) findAnchor(s string) (string, bool) {
	if strings.IndexByte(s, 0) >= 0 {
		// A match could span two blocks of the joined text.
		return e.findAnchorSlow(s)
	}
	e.joinSections()
	at := strings.Index(e.joined, s)
	if at < 0 {
		return "", false
	}
	return e.sectionAt(at), true
}

// findAnchorSlow is findAnchor block by block.
func (e *extraction) findAnchorSlow(s string) (string, bool) {
	for i := range e.doc.Sections {
		sec := &e.doc.Sections[i]
		if strings.Contains(sec.Heading, s) {
			return sec.Anchor, true
		}
		for _, b := range sec.Blocks {
			if strings.Contains(b.Text, s) {
				return sec.Anchor, true
			}
		}
	}
	return "", false
}
