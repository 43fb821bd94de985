package graphrag

import (
	"context"
	"regexp"
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Extractor turns one document (and the chunks it was cut into) into triples.
// Every triple carries the document's collection and URL, the id of the chunk
// it came from and the URL of its section (page#anchor).
//
// Errors: EINVALID for a document without collection or URL; an LLM
// extractor also returns EUNAVAILABLE when its model cannot be reached.
type Extractor interface {
	Extract(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) ([]kgagent.Triple, error)
}

// BuiltinExtractor is the default extractor: rules over the document's
// structure, no LLM. It emits
//   - page has_section section, for every section;
//   - section mentions term, for salient terms (code identifiers, capitalised
//     phrases and acronyms, link texts), at most MaxMentions per section;
//   - term is_defined_as literal, from definition lists and two- or
//     three-column tables;
//   - X is_a Y and X is_defined_as sentence, from "X is a/an Y" sentences, and
//     X is_a Y from "X (Y)"; an acronym in parentheses becomes an alias;
//   - module/class defines function/class, from API headings (Sphinx
//     signatures such as "json.dumps(obj, *, ...)" with their anchors), module
//     headings ("json — JSON encoder and decoder") and code signatures
//     ("def f(", "class C", "json.dumps(obj)");
//   - page links_to page, with the link text as the target's display name and
//     text alias_of target for API anchors.
//
// The zero value is ready to use.
type BuiltinExtractor struct {
	MaxMentions int // per section; default 25
	MaxTriples  int // per document; default 5000
}

var _ Extractor = BuiltinExtractor{}

var (
	reIsA     = regexp.MustCompile(`^(?:The\s+|An?\s+)?([A-Za-z_][\w.()\-]*(?:\s+[A-Za-z_][\w.()\-]*){0,3})\s+(?:is|are)\s+(?:a|an)\s+(.+)$`)
	reParen   = regexp.MustCompile(`([A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,5}|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(\))?)\s+\(([^()]{2,60})\)`)
	reSigHead = regexp.MustCompile(`^(?:(class|exception|async|abstractmethod|classmethod|staticmethod|method|function|attribute|property|data|coroutine|awaitable)\s+)*([A-Za-z_][\w.]*)\s*(\(.*)?$`)
	reModHead = regexp.MustCompile(`^([A-Za-z_][\w.]*)\s+[—–-]+\s+(.+)$`)
	reDef     = regexp.MustCompile(`^\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)`)
	reCodeSig = regexp.MustCompile(`^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\(`)
)

// Extract implements Extractor.
func (x BuiltinExtractor) Extract(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) ([]kgagent.Triple, error) {
	if err := ValidateCollection(doc.Collection); err != nil {
		return nil, err
	}
	if err := ValidateDocURL(doc.URL); err != nil {
		return nil, err
	}
	if x.MaxMentions <= 0 {
		x.MaxMentions = 25
	}
	if x.MaxTriples <= 0 {
		x.MaxTriples = 5000
	}
	// About six triples per section and one per four links on the Python
	// docs: sized so, out and seen seldom grow.
	est := min(6*len(doc.Sections)+len(doc.Links)/4, x.MaxTriples)
	e := &extraction{x: x, doc: doc, seen: make(map[emitKey]bool, est), aliases: Aliases{}, byAnchor: map[string][]kgagent.Chunk{},
		out: make([]kgagent.Triple, 0, est)}
	for _, c := range chunks {
		e.byAnchor[c.Anchor] = append(e.byAnchor[c.Anchor], c)
	}
	e.page = PageEntity(doc.URL, pageTitle(doc))
	e.linkAliases()
	e.apiKinds()
	seenText := map[string]bool{}
	for _, l := range doc.Links {
		lt := strings.TrimSpace(l.Text)
		if len(lt) >= 3 && len(lt) <= 60 && !seenText[lt] && strings.IndexFunc(lt, unicode.IsLetter) >= 0 {
			seenText[lt] = true
			e.addLinkText(lt)
		}
	}
	for i := range doc.Sections {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e.section(&doc.Sections[i])
	}
	e.links()
	return e.out, nil
}

// addLinkText adds lt to e.linkTexts, indexed by its first word.
func (e *extraction) addLinkText(lt string) {
	li := int32(len(e.linkTexts))
	e.linkTexts = append(e.linkTexts, lt)
	first, _, _ := strings.Cut(lt, " ")
	key := strings.TrimSuffix(first, "()")
	if key == "" {
		return // never a token
	}
	if e.linkKeys == nil {
		e.linkKeys = map[string]int32{}
	}
	h := keyHash(key)
	e.keyBloom[h>>6] |= 1 << (h & 63)
	id, ok := e.linkKeys[key]
	if !ok {
		id = int32(len(e.keyTexts))
		e.linkKeys[key] = id
		e.keyTexts = append(e.keyTexts, nil)
		e.keyStamp = append(e.keyStamp, 0)
	}
	e.keyTexts[id] = append(e.keyTexts[id], li)
}

// keyHash is a cheap hash (0..4095) of a non-empty token, for keyBloom:
// of its length and first, middle and last bytes.
func keyHash(s string) uint {
	k := uint32(s[0]) | uint32(s[len(s)/2])<<8 | uint32(s[len(s)-1])<<16 | uint32(len(s))<<24
	return uint((k * 0x9E3779B1) >> 20)
}

// pageTitle drops a site suffix ("json — ... — Python 3.11 documentation").
func pageTitle(doc kgagent.Document) string {
	t := doc.Title
	if i := strings.LastIndex(t, " — "); i > 0 && strings.Contains(strings.ToLower(t[i:]), "documentation") {
		t = t[:i]
	}
	return t
}

type extraction struct {
	x         BuiltinExtractor
	doc       kgagent.Document
	page      kgagent.Entity
	module    kgagent.Entity  // the page's module, once a module heading is seen
	classes   map[string]bool // ids of the page's class and exception entries
	excNames  map[string]bool // last parts of the page's exception entries (Full, SkipTest)
	jclass    kgagent.Entity  // the Javadoc page's type, once its heading is seen
	out       []kgagent.Triple
	seen      map[emitKey]bool
	aliases   Aliases
	byAnchor  map[string][]kgagent.Chunk
	srcAnchor string           // the anchor of src
	src       string           // SectionURL of the last anchor emit saw
	linkTexts []string         // distinct link texts worth matching in sections
	linkKeys  map[string]int32 // a link text's first word, "()" removed -> key id
	keyTexts  [][]int32        // key id -> indexes of its link texts, ascending
	keyStamp  []int32          // key id -> the salient call that last saw it
	keyBloom  [64]uint64       // bits keyHash of the keys set
	stamp     int32            // salient calls so far
	marked    []int32          // key ids the current salient call saw
	cand      []int32          // link texts the current salient call tries
	anchors   map[string]found // anchorOf's answers, by text
	joined    string           // the sections' text for findAnchor, built on first use
	secEnds   []int            // where each section ends in joined
}

// emitKey is what makes a triple distinct: subject, predicate, object,
// literal and section.
type emitKey struct{ s, p, o, lit, src string }

// chunkFor picks the chunk of the section at anchor that holds evidence, or
// its first chunk.
func (e *extraction) chunkFor(anchor, evidence string) string {
	cs := e.byAnchor[anchor]
	if evidence != "" && len(cs) > 1 { // one chunk is the answer either way
		probe := evidence
		if len(probe) > 80 {
			probe = text.Clip(probe, 80)
		}
		for _, c := range cs {
			if strings.Contains(c.Text, probe) {
				return c.ID
			}
		}
	}
	if len(cs) > 0 {
		return cs[0].ID
	}
	return ""
}

func (e *extraction) emit(s kgagent.Entity, p string, o kgagent.Entity, lit, anchor, evidence string) {
	if len(e.out) >= e.x.MaxTriples || s.ID == "" || s.Name == "" || len(s.Name) > MaxNameBytes {
		return
	}
	if lit == "" && (o.ID == "" || o.Name == "" || len(o.Name) > MaxNameBytes || o.ID == s.ID) {
		return
	}
	if lit != "" {
		o = kgagent.Entity{}
		lit = text.Clip(strings.TrimSpace(lit), 1000)
	}
	if anchor != e.srcAnchor || e.src == "" {
		e.srcAnchor, e.src = anchor, SectionURL(e.doc.URL, anchor)
	}
	src := e.src
	k := emitKey{s.ID, p, o.ID, lit, src}
	if e.seen[k] {
		return
	}
	e.seen[k] = true
	e.out = append(e.out, kgagent.Triple{
		Collection: e.doc.Collection,
		Subject:    s,
		Predicate:  p,
		Object:     o,
		Literal:    lit,
		ChunkID:    e.chunkFor(anchor, evidence),
		DocURL:     e.doc.URL,
		SourceURL:  src,
	})
}

// term makes a term entity, resolving aliases.
func (e *extraction) term(name, typ string) kgagent.Entity {
	name = strings.TrimSpace(name)
	if len(name) > 200 {
		return kgagent.Entity{}
	}
	return e.aliases.Resolve(NewEntity(name, typ))
}

// linkAliases maps link texts to the API names their anchors stand for:
// "dumps()" -> json.dumps.
func (e *extraction) linkAliases() {
	for _, l := range e.doc.Links {
		i := strings.IndexByte(l.URL, '#')
		if i < 0 {
			continue
		}
		frag := l.URL[i+1:]
		if !isIdent(frag) || !strings.Contains(frag, ".") {
			continue
		}
		lt := strings.TrimSpace(l.Text)
		if lt == "" {
			continue
		}
		// e.aliases.Add(lt, NormalizeName(frag)), lt normalised once.
		k := NormalizeName(lt)
		if text.CommonTerms.Has(k) || k == "" {
			continue
		}
		if c := NormalizeName(frag); k != c {
			e.aliases[k] = c
		}
	}
}

func sectionText(s *kgagent.Section) string {
	var b strings.Builder
	for _, bl := range s.Blocks {
		if bl.Kind == kgagent.BlockCode {
			continue
		}
		b.WriteString(bl.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func (e *extraction) section(s *kgagent.Section) {
	sec := SectionEntity(SectionURL(e.doc.URL, s.Anchor), s.Heading)
	e.emit(e.page, PredHasSection, sec, "", s.Anchor, "")
	api := e.apiHeading(s, sec)
	if api.ID == "" {
		api = e.javadoc(s)
	}
	text := sectionText(s)
	for _, t := range e.salient(s, text) {
		if t.ID == api.ID {
			continue
		}
		e.emit(sec, PredMentions, t, "", s.Anchor, t.Name)
	}
	for _, bl := range s.Blocks {
		switch bl.Kind {
		case kgagent.BlockDefList:
			for _, d := range bl.Terms {
				e.definition(d.Term, d.Definition, s.Anchor)
			}
		case kgagent.BlockTable:
			e.table(bl, s.Anchor)
		case kgagent.BlockCode:
			e.code(bl, s.Anchor)
		case kgagent.BlockParagraph, kgagent.BlockList:
			e.sentences(bl.Text, s.Anchor)
		}
	}
}
