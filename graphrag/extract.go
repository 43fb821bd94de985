package graphrag

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

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

// stopStarts are words that make a poor subject of "X is a Y".
var stopStarts = map[string]bool{
	"it": true, "this": true, "that": true, "there": true, "which": true, "what": true, "he": true, "she": true,
	"they": true, "one": true, "each": true, "here": true, "result": true, "return": true, "the": true, "a": true,
	"an": true, "these": true, "those": true, "its": true, "such": true, "if": true, "when": true, "so": true,
}

// stopTerms are capitalised words and phrases too common to be salient.
var stopTerms = map[string]bool{
	"the": true, "a": true, "an": true, "this": true, "if": true, "in": true, "for": true, "note": true,
	"see": true, "new": true, "when": true, "it": true, "changed": true, "deprecated": true, "example": true,
	"ok": true, "id": true, "i": true, "ii": true, "e.g": true, "i.e": true, "etc": true, "also": true,
	"table of content": true, "next": true, "previous": true, "index": true, "here": true, "this page": true,
	"link": true, "source": true, "home": true, "top": true, "up": true, "back": true, "more": true,
	"read more": true, "click here": true, "permalink": true, "show source": true, "report a bug": true,
}

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
		text := strings.TrimSpace(l.Text)
		if text == "" {
			continue
		}
		// e.aliases.Add(text, NormalizeName(frag)), text normalised once.
		k := NormalizeName(text)
		if stopTerms[k] || k == "" {
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

// apiHeading recognises Sphinx API entries and module headings, returning the
// API entity ("" id when the heading is prose).
func (e *extraction) apiHeading(s *kgagent.Section, sec kgagent.Entity) kgagent.Entity {
	h := strings.TrimSpace(s.Heading)
	// "@contextlib.contextmanager": a decorator is a function entry.
	h, decorator := strings.CutPrefix(h, "@")
	first := firstParagraph(s)
	// Module heading: "json — JSON encoder and decoder", anchor "module-json".
	if mayModHead(h) && (strings.HasPrefix(s.Anchor, "module-") || s.Level <= 1) {
		if m := reModHead.FindStringSubmatch(h); m != nil && isIdent(m[1]) {
			mod := NewEntity(m[1], TypeModule)
			if s.Anchor == "module-"+m[1] || e.module.ID == "" {
				e.module = mod
			}
			e.emit(mod, PredIsDefinedAs, kgagent.Entity{}, m[2], s.Anchor, "")
			e.emit(sec, PredMentions, mod, "", s.Anchor, "")
			if parent, _, ok := splitQualified(m[1]); ok {
				e.emit(NewEntity(parent, TypeModule), PredDefines, mod, "", s.Anchor, "")
			}
			return mod
		}
	}
	if !maySigHead(h) {
		return kgagent.Entity{}
	}
	m := reSigHead.FindStringSubmatch(h)
	if m == nil {
		return kgagent.Entity{}
	}
	kind, name, params := m[1], m[2], m[3]
	if params == "" && kind == "" && (!isIdent(s.Anchor) || !strings.Contains(s.Anchor, ".")) {
		return kgagent.Entity{} // a one-word prose heading
	}
	qualified := name
	if isIdent(s.Anchor) && (s.Anchor == name || strings.HasSuffix(s.Anchor, "."+lastPart(name))) {
		qualified = s.Anchor
	}
	parent, _, qualifiedOK := splitQualified(qualified)
	ptyp := TypeModule
	if qualifiedOK {
		if r, _ := utf8.DecodeRuneInString(lastPart(parent)); unicode.IsUpper(r) || e.classes[NormalizeName(parent)] {
			ptyp = TypeClass
		}
	}
	typ := TypeFunction
	switch {
	case kind == "exception":
		typ = TypeException
	case kind == "class":
		typ = TypeClass
	case params == "" && !decorator:
		typ = TypeTerm // an attribute or data
	case ptyp == TypeClass:
		typ = TypeMethod
	}
	ent := NewEntity(qualified, typ)
	e.emit(sec, PredMentions, ent, "", s.Anchor, "")
	if first != "" {
		e.emit(ent, PredIsDefinedAs, kgagent.Entity{}, first, s.Anchor, first)
	}
	if qualifiedOK {
		e.emit(NewEntity(parent, ptyp), PredDefines, ent, "", s.Anchor, "")
	} else if e.module.ID != "" {
		e.emit(e.module, PredDefines, ent, "", s.Anchor, "")
	}
	if s.Anchor != "" { // an API entry has its anchor; a page title has none
		if params != "" {
			e.emit(ent, PredHasSignature, kgagent.Entity{}, name+params, s.Anchor, "")
		}
		e.apiFacts(s, ent, params)
	}
	return ent
}

// apiKinds notes the page's class and exception entries before the
// sections are read, so that a method of a lower-case class (mmap.mmap)
// is typed a method and an exception named without "Error" (queue.Full)
// is known as one where another entry raises it.
func (e *extraction) apiKinds() {
	for i := range e.doc.Sections {
		h := strings.TrimSpace(e.doc.Sections[i].Heading)
		kind, rest, ok := strings.Cut(h, " ")
		if !ok || kind != "class" && kind != "exception" {
			continue
		}
		name := rest
		if j := strings.IndexAny(name, "( "); j >= 0 {
			name = name[:j]
		}
		if !isIdent(name) {
			continue
		}
		if e.classes == nil {
			e.classes, e.excNames = map[string]bool{}, map[string]bool{}
		}
		e.classes[NormalizeName(name)] = true
		if a := e.doc.Sections[i].Anchor; isIdent(a) {
			e.classes[NormalizeName(a)] = true
		}
		if kind == "exception" {
			e.excNames[lastPart(name)] = true
		}
	}
}

var (
	reVersionNote = regexp.MustCompile(`^(New in version|Deprecated since version|Changed in version|Deprecated, removed in version)\s+(\d+(?:\.\d+)*)`)
	reSubclass    = regexp.MustCompile(`(?i)\bsubclass(?:es)? of (?:the )?(?:built-in |builtin )?(?:class |exception )?([A-Za-z_][\w.]*)`)
	reExcName     = regexp.MustCompile(`\b([A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration|ExceptionGroup)\b|\bException\b`)
	reCapIdent    = regexp.MustCompile(`\b(?:[A-Za-z_]\w*\.)*[A-Z]\w+\b`)
)

// apiFacts reads the relations of an API entry from its own section: the
// parameters of its signature (with their defaults), the exceptions its
// description names (a "Raises" field, or exception names in its prose,
// version notes left out), "New in version" and "Deprecated since
// version" notes, and "Subclass of X" for classes and exceptions. Each
// triple's source is the entry's section.
func (e *extraction) apiFacts(s *kgagent.Section, ent kgagent.Entity, params string) {
	for _, p := range sigParams(params) {
		e.emit(ent, PredHasParameter, kgagent.Entity{}, p, s.Anchor, "")
	}
	raised := map[string]bool{}
	raise := func(name string) {
		name = strings.Trim(name, ".")
		if name == "" || raised[name] || NormalizeName(name) == ent.ID {
			return
		}
		raised[name] = true
		e.emit(ent, PredRaises, e.term(name, TypeException), "", s.Anchor, name)
	}
	subclassSeen := false
	for bi, bl := range s.Blocks {
		switch bl.Kind {
		case kgagent.BlockDefList:
			for _, d := range bl.Terms {
				t := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(d.Term), ":")))
				if t == "raises" || t == "throws" || t == "raise" {
					for _, m := range reCapIdent.FindAllString(d.Definition, -1) {
						raise(m)
					}
				}
			}
		case kgagent.BlockParagraph, kgagent.BlockList:
			text := strings.TrimSpace(bl.Text)
			if m := reVersionNote.FindStringSubmatch(text); m != nil {
				switch m[1] {
				case "New in version":
					// A bare note dates the entry; "New in version 3.8: the
					// dirs_exist_ok parameter" dates a part of it.
					if rest := strings.TrimSpace(text[len(m[0]):]); rest == "" || rest == "." {
						e.emit(ent, PredAddedIn, kgagent.Entity{}, m[2], s.Anchor, "")
					}
				case "Deprecated since version", "Deprecated, removed in version":
					e.emit(ent, PredDeprecatedSince, kgagent.Entity{}, m[2], s.Anchor, "")
				}
				continue // history: what used to be raised is not raised now
			}
			if strings.HasPrefix(text, "Raises an auditing event") {
				continue
			}
			// A class's description names exceptions it derives from or
			// holds ("Subclass of ValueError"): only raising sentences count.
			if ent.Type == TypeFunction || ent.Type == TypeMethod || strings.Contains(text, "rais") || strings.Contains(text, "throw") {
				for _, m := range reExcName.FindAllString(text, -1) {
					raise(m)
				}
			}
			if len(e.excNames) > 0 {
				for _, m := range reCapIdent.FindAllString(text, -1) {
					if e.excNames[lastPart(m)] && (strings.Contains(text, "rais") || strings.Contains(text, "throw")) {
						raise(m)
					}
				}
			}
			if !subclassSeen && bi < 3 && (ent.Type == TypeClass || ent.Type == TypeException) {
				if m := reSubclass.FindStringSubmatch(text); m != nil && m[1] != "of" {
					subclassSeen = true
					typ := TypeClass
					if ent.Type == TypeException {
						typ = TypeException
					}
					e.emit(ent, PredSubclassOf, e.term(strings.Trim(m[1], "."), typ), "", s.Anchor, m[0])
				}
			}
		}
	}
}

// sigParams splits a signature's parameter list "(src, dst, *,
// follow_symlinks=True)" into its parameters ("src", "dst",
// "follow_symlinks=True"): markers (*, /) and self left out, stars kept
// on *args and **kwargs.
func sigParams(params string) []string {
	params = strings.TrimSpace(params)
	if !strings.HasPrefix(params, "(") {
		return nil
	}
	end := strings.LastIndexByte(params, ')')
	if end < 0 {
		end = len(params)
	}
	// "fdst[, length]": optional parameters are parameters
	inner := strings.NewReplacer("[", "", "]", "").Replace(params[1:end])
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(inner); i++ {
		if i < len(inner) {
			switch inner[i] {
			case '(', '[', '{':
				depth++
				continue
			case ')', ']', '}':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		p := strings.TrimSpace(inner[start:i])
		start = i + 1
		p = strings.Trim(p, "[] ")
		if p == "" || p == "*" || p == "/" || p == "self" || p == "..." || len(p) > 200 {
			continue
		}
		if len(out) == 32 {
			break
		}
		out = append(out, p)
	}
	return out
}

func firstParagraph(s *kgagent.Section) string {
	for _, b := range s.Blocks {
		if b.Kind == kgagent.BlockParagraph && strings.TrimSpace(b.Text) != "" {
			return text.Clip(strings.TrimSpace(b.Text), 600)
		}
	}
	return ""
}

func lastPart(q string) string {
	if i := strings.LastIndexByte(q, '.'); i >= 0 {
		return q[i+1:]
	}
	return q
}

func splitQualified(q string) (parent, last string, ok bool) {
	i := strings.LastIndexByte(q, '.')
	if i <= 0 || i == len(q)-1 {
		return "", q, false
	}
	return q[:i], q[i+1:], true
}

// salient returns the section's salient terms, most specific first.
func (e *extraction) salient(s *kgagent.Section, text string) []kgagent.Entity {
	var out []kgagent.Entity
	add := func(name, typ string) {
		if len(out) >= e.x.MaxMentions {
			return
		}
		name = strings.TrimSpace(name)
		if utf8.RuneCountInString(name) < 2 || strings.IndexFunc(name, unicode.IsLetter) < 0 {
			return
		}
		t := e.term(name, typ)
		if t.ID == "" || stopTerms[t.ID] || stopStarts[t.ID] {
			return
		}
		for i := range out { // at most MaxMentions
			if out[i].ID == t.ID {
				return
			}
		}
		out = append(out, t)
	}
	// add ignores terms once out is full, so each pass below stops there.
	full := func() bool { return len(out) >= e.x.MaxMentions }
	// A link text is a candidate when its first word (without "()") is a
	// token of the section: mark the keys seen, then take their texts in
	// the order of e.linkTexts.
	var saw func(string)
	e.stamp++
	e.marked = e.marked[:0]
	if len(e.linkKeys) > 0 {
		saw = func(tok string) {
			if h := keyHash(tok); e.keyBloom[h>>6]&(1<<(h&63)) == 0 {
				return // not a key: most tokens
			}
			if id, ok := e.linkKeys[tok]; ok && e.keyStamp[id] != e.stamp {
				e.keyStamp[id] = e.stamp
				e.marked = append(e.marked, id)
			}
		}
	}
	for _, class := range codeTokens(text, saw) {
		for _, m := range class {
			add(m, TypeTerm)
		}
	}
	cand := e.cand[:0]
	for _, id := range e.marked {
		cand = append(cand, e.keyTexts[id]...)
	}
	slices.Sort(cand)
	e.cand = cand
	for _, li := range cand {
		if full() {
			return out
		}
		if lt := e.linkTexts[li]; strings.Contains(text, lt) {
			add(lt, TypeTerm)
		}
	}
	if full() {
		return out
	}
	capPhrases(text, func(m string) bool {
		words := strings.Fields(m)
		for len(words) > 1 && stopStarts[strings.ToLower(words[0])] {
			words = words[1:]
		}
		if len(words) > 1 {
			add(strings.Join(words, " "), TypeConcept)
		}
		return !full()
	})
	if full() {
		return out
	}
	acronyms(text, func(m string) bool {
		add(m, TypeConcept)
		return !full()
	})
	return out
}

// definition emits term is_defined_as literal, and the API facts of a
// signature-like term.
func (e *extraction) definition(term, def, anchor string) {
	term = strings.TrimSpace(term)
	def = strings.TrimSpace(def)
	if term == "" || def == "" || len(term) > 200 {
		return
	}
	name := term
	if i := strings.IndexByte(term, '('); i > 0 && isIdent(strings.TrimSpace(term[:i])) {
		name = strings.TrimSpace(term[:i])
	}
	ent := e.term(name, TypeTerm)
	if ent.ID == "" {
		return
	}
	e.emit(ent, PredIsDefinedAs, kgagent.Entity{}, def, anchor, def)
	e.isA(name, def, anchor)
}

// table treats two- and three-column tables as glossaries: first column
// defined as the rest of the row.
func (e *extraction) table(bl kgagent.Block, anchor string) {
	if len(bl.Rows) < 2 {
		return
	}
	for i, row := range bl.Rows {
		if i == 0 || len(row) < 2 || len(row) > 3 || i > 200 {
			continue
		}
		k := strings.TrimSpace(row[0])
		if k == "" || len(k) > 80 {
			continue
		}
		def := strings.TrimSpace(strings.Join(row[1:], " — "))
		e.definition(k, strings.Trim(def, " —"), anchor)
	}
}

// code finds definitions and signatures in code blocks.
func (e *extraction) code(bl kgagent.Block, anchor string) {
	owner := e.module
	if owner.ID == "" {
		owner = e.page
	}
	// The lines of strings.Split(bl.Text, "\n"), the first 501.
	for i, rest, more := 0, bl.Text, true; more && i <= 500; i++ {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
		if mayDef(line) {
			if m := reDef.FindStringSubmatch(line); m != nil {
				typ := TypeFunction
				if m[1] == "class" {
					typ = TypeClass
				}
				e.emit(owner, PredDefines, NewEntity(m[2], typ), "", anchor, strings.TrimSpace(line))
				continue
			}
		}
		// A signature line such as "json.dumps(obj, *, ...)" (not a REPL
		// example or an assignment); the cheap tests first.
		if !strings.HasSuffix(strings.TrimSpace(line), ")") || strings.Contains(line, ">>>") {
			continue
		}
		if m := reCodeSig.FindStringSubmatch(line); m != nil {
			if parent, last, ok := splitQualified(m[1]); ok && last != "" {
				ptyp := TypeModule
				if r, _ := utf8.DecodeRuneInString(lastPart(parent)); unicode.IsUpper(r) {
					ptyp = TypeClass
				}
				e.emit(NewEntity(parent, ptyp), PredDefines, NewEntity(m[1], TypeFunction), "", anchor, strings.TrimSpace(line))
			}
		}
	}
}

// mayDef reports whether line starts (after \s*) with "def", "class" or
// "async", as every match of reDef does: a cheap test before the regexp.
func mayDef(line string) bool {
	i := 0
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	t := line[i:]
	return strings.HasPrefix(t, "def") || strings.HasPrefix(t, "class") || strings.HasPrefix(t, "async")
}

// sentences finds "X is a/an Y" and "X (Y)" definitions.
func (e *extraction) sentences(text, anchor string) {
	for rest := text; rest != ""; {
		var sent string
		sent, rest = nextSentence(rest)
		if sent == "" {
			continue
		}
		if mayIsA(sent) {
			e.isA("", sent, anchor)
		}
		if !mayParen(sent) {
			continue
		}
		parens(sent, 8, func(x, y string) { e.paren(x, y, anchor, sent) })
	}
}

// isA handles "X is a/an Y ..." in sent; a non-empty subject replaces X when
// sent is a definition ("a compact way ..." under a term).
func (e *extraction) isA(subject, sent, anchor string) {
	sent = strings.TrimSpace(sent)
	var x, rest string
	if subject != "" {
		low := strings.ToLower(sent)
		for _, art := range []string{"a ", "an "} {
			if strings.HasPrefix(low, art) {
				x, rest = subject, sent[len(art):]
			}
		}
		if x == "" {
			return
		}
	} else {
		m := reIsA.FindStringSubmatch(sent)
		if m == nil {
			return
		}
		x, rest = m[1], m[2]
		if stopStarts[strings.ToLower(strings.Fields(x)[0])] {
			return
		}
	}
	y := headNoun(rest)
	if y == "" {
		return
	}
	xe, ye := e.term(x, TypeTerm), e.term(y, TypeConcept)
	if xe.ID == "" || ye.ID == "" {
		return
	}
	e.emit(xe, PredIsA, ye, "", anchor, sent)
	if subject == "" {
		e.emit(xe, PredIsDefinedAs, kgagent.Entity{}, sent, anchor, sent)
	}
}

// headNoun returns the noun phrase at the start of s: up to four words,
// stopping at a relative clause, preposition or punctuation.
func headNoun(s string) string {
	stop := map[string]bool{"that": true, "which": true, "who": true, "where": true, "when": true, "whose": true,
		"with": true, "used": true, "to": true, "for": true, "by": true, "in": true, "on": true, "and": true,
		"or": true, "from": true, "as": true, "of": true, "is": true, "are": true, "but": true, "if": true, "than": true}
	var words []string
	for _, w := range strings.Fields(s) {
		clean := strings.TrimRight(w, ".,;:!?)")
		if stop[strings.ToLower(clean)] || clean == "" {
			break
		}
		if len(words) > 0 && strings.HasSuffix(clean, "ed") {
			break
		}
		words = append(words, clean)
		if clean != w || len(words) == 4 {
			break
		}
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Join(words, " ")
}

// paren handles "X (Y)": an acronym in either place is an alias of the
// other; a short lower-case Y is a type of X.
func (e *extraction) paren(x, y, anchor, sent string) {
	x, y = strings.TrimSpace(x), strings.TrimSpace(y)
	for {
		w, rest, ok := strings.Cut(x, " ")
		if !ok || !stopStarts[strings.ToLower(w)] {
			break
		}
		x = rest
	}
	if x == "" || y == "" {
		return
	}
	if isAcronymOf(y, x) {
		full := e.term(x, TypeConcept)
		e.emit(NewEntity(y, TypeConcept), PredAliasOf, full, "", anchor, sent)
		return
	}
	if isAcronymOf(x, y) {
		full := e.term(y, TypeConcept)
		e.emit(NewEntity(x, TypeConcept), PredAliasOf, full, "", anchor, sent)
		return
	}
	words := strings.Fields(y)
	if len(words) > 3 || stopStarts[strings.ToLower(words[0])] {
		return
	}
	for _, w := range words {
		for _, r := range w {
			if !unicode.IsLetter(r) && r != '-' {
				return
			}
		}
		switch strings.ToLower(w) {
		case "or", "and", "to", "of", "in", "for", "with", "as", "see", "default", "optional", "deprecated", "new", "changed", "version", "e.g", "i.e", "eg", "ie", "not", "only", "also", "required":
			return
		}
	}
	if r, _ := utf8.DecodeRuneInString(y); !unicode.IsLower(r) {
		return
	}
	xe := e.term(x, TypeTerm)
	if xe.ID == "" || stopTerms[xe.ID] || stopStarts[xe.ID] {
		return
	}
	e.emit(xe, PredIsA, e.term(y, TypeConcept), "", anchor, sent)
}

// isAcronymOf reports whether short (2..8 upper-case letters) is made of the
// initials of long's words.
func isAcronymOf(short, long string) bool {
	if len(short) < 2 || len(short) > 8 || strings.ToUpper(short) != short {
		return false
	}
	var initials strings.Builder
	for _, w := range strings.FieldsFunc(long, func(r rune) bool { return r == ' ' || r == '-' }) {
		for i, r := range w {
			if i == 0 || unicode.IsUpper(r) {
				initials.WriteRune(unicode.ToUpper(r))
			}
		}
	}
	ini := initials.String()
	return len(ini) >= 2 && (ini == short || (len(ini) > len(short) && subsequence(short, ini)))
}

func subsequence(short, long string) bool {
	i := 0
	for j := 0; j < len(long) && i < len(short); j++ {
		if long[j] == short[i] {
			i++
		}
	}
	return i == len(short) && long[0] == short[0]
}

// mayModHead reports whether h starts as every match of reModHead does:
// [A-Za-z_][\w.]*, white space, a dash. It is the cheap test run before the
// regexp.
func mayModHead(h string) bool {
	i, j, ok := headName(h)
	if !ok {
		return false
	}
	r := h[j:]
	return j > i && (strings.HasPrefix(r, "-") || strings.HasPrefix(r, "—") || strings.HasPrefix(r, "–"))
}

// headName scans the name h starts with ([A-Za-z_][\w.]*): it returns where
// the name ends and where the white space after it ends, or false when h
// does not start with a name.
func headName(h string) (end, next int, ok bool) {
	if h == "" || !isUpperByte(h[0]) && !isLowerByte(h[0]) && h[0] != '_' {
		return 0, 0, false
	}
	i := 1
	for i < len(h) && (isWordByte(h[i]) || h[i] == '.') {
		i++
	}
	j := i
	for j < len(h) && isSpace(h[j]) {
		j++
	}
	return i, j, true
}

// sigKinds are the words reSigHead allows before an API name.
var sigKinds = map[string]bool{
	"class": true, "exception": true, "async": true, "abstractmethod": true, "classmethod": true,
	"staticmethod": true, "method": true, "function": true, "attribute": true, "property": true,
	"data": true, "coroutine": true, "awaitable": true,
}

// maySigHead reports whether h can match reSigHead: its first word
// ([A-Za-z_][\w.]*, all of it, or the expression fails) is the name, so
// white space and then the end or "(" follow it, or it is one of sigKinds
// followed by white space. It is the cheap test run before the regexp.
func maySigHead(h string) bool {
	i, j, ok := headName(h)
	if !ok {
		return false
	}
	return j == len(h) || h[j] == '(' || j > i && sigKinds[h[:i]]
}

// isSpace is the regexp package's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// mayParen reports whether s has what every match of reParen needs: a "("
// after whitespace, which follows a byte that can end the X of "X (Y)"
// ([\w\-)]), and then 2 to 60 characters other than "(" and ")" and a ")".
// It is the cheap test run before the regexp.
func mayParen(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] != '(' || !isSpace(s[i-1]) {
			continue
		}
		j := i - 1
		for j >= 0 && isSpace(s[j]) {
			j--
		}
		if j < 0 || !isWordByte(s[j]) && s[j] != '-' && s[j] != ')' {
			continue
		}
		n := 0 // characters inside, as regexp counts them (a bad byte is one)
		for _, r := range s[i+1:] {
			if r == '(' || r == ')' {
				if r == ')' && n >= 2 && n <= 60 {
					return true
				}
				break
			}
			n++
			if n > 60 {
				break
			}
		}
	}
	return false
}

// mayIsA reports whether s holds whitespace, "is" or "are", whitespace, "a"
// or "an", whitespace: what every match of reIsA needs, tested before the
// regexp.
func mayIsA(s string) bool {
	for _, w := range [2]string{"is", "are"} {
		for off := 0; ; {
			i := strings.Index(s[off:], w)
			if i < 0 {
				break
			}
			i += off
			off = i + 1
			if i == 0 || !isSpace(s[i-1]) {
				continue
			}
			j := i + len(w)
			k := j
			for k < len(s) && isSpace(s[k]) {
				k++
			}
			if k == j || k >= len(s) || s[k] != 'a' {
				continue
			}
			k++
			if k < len(s) && s[k] == 'n' && k+1 < len(s) && isSpace(s[k+1]) {
				return true
			}
			if k < len(s) && isSpace(s[k]) {
				return true
			}
		}
	}
	return false
}

// nextSentence returns the first sentence of text (trimmed, maybe empty)
// and the text after it: text is cut at ". ", "! ", "? " and newlines.
func nextSentence(s string) (sent, rest string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || text.EndsSentence(s, i) {
			return strings.TrimSpace(s[:i+1]), s[i+1:]
		}
	}
	return strings.TrimSpace(s), ""
}

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
		target, text := l.target, l.text
		anchor := e.anchorOf(text, lead)
		if target != self {
			e.emit(e.page, PredLinksTo, PageEntity(target, text), "", anchor, text)
		}
		if i := strings.IndexByte(l.url, '#'); i >= 0 && text != "" {
			frag := l.url[i+1:]
			if isIdent(frag) && strings.Contains(frag, ".") {
				alias := NewEntity(text, TypeTerm)
				api := NewEntity(frag, TypeFunction)
				if target == self && e.hasAnchor(frag) {
					anchor = frag
				}
				if alias.ID != api.ID && !stopTerms[alias.ID] {
					e.emit(alias, PredAliasOf, api, "", anchor, text)
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

// CodeTokens finds code identifiers in text in one pass, returned in four
// classes in order of salience: dotted names (os.path.join, json.dumps()),
// calls (print()), snake_case and CamelCase words. Every token seen (code or
// not, "()" removed) is added to seen when it is not nil.
func CodeTokens(text string, seen map[string]bool) [4][]string {
	if seen == nil {
		return codeTokens(text, nil)
	}
	return codeTokens(text, func(tok string) { seen[tok] = true })
}

// codeTokens is CodeTokens calling saw (when not nil) with every token seen.
func codeTokens(text string, saw func(string)) [4][]string {
	var out [4][]string
	isTok := func(c byte) bool {
		return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(text); {
		if !isTok(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isTok(text[j]) {
			j++
		}
		tok := strings.Trim(text[i:j], ".")
		call := strings.HasPrefix(text[j:], "()")
		// tok+"()" as a slice of text when the "()" follows tok there.
		withCall := ""
		if call {
			if text[j-1] != '.' { // tok ends at j
				withCall = text[j-len(tok) : j+2]
			} else {
				withCall = tok + "()"
			}
			j += 2
		}
		i = j
		if tok == "" {
			continue
		}
		if saw != nil {
			saw(tok)
		}
		if c := tok[0]; c >= '0' && c <= '9' {
			continue
		}
		name := tok // with "()" for a call
		if call {
			name = withCall
		}
		switch {
		case strings.Contains(tok, "."):
			if dottedName(tok) {
				out[0] = append(out[0], name)
			}
		case call:
			out[1] = append(out[1], name)
		case isSnake(tok):
			out[2] = append(out[2], tok)
		case isCamel(tok):
			out[3] = append(out[3], tok)
		}
	}
	return out
}

// dottedName reports whether every dot-separated part of tok is non-empty
// and does not start with a digit.
func dottedName(tok string) bool {
	start := true
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case c == '.':
			if start {
				return false
			}
			start = true
		case start:
			if isDigitByte(c) {
				return false
			}
			start = false
		}
	}
	return !start
}

// The matchers below are hand-written forms of regular expressions that
// were a third of the extractor's time (FuzzMatchers checks that they agree
// with the expressions). \w and \b are ASCII, as in package regexp.

// isWordByte reports whether c is a \w byte: [0-9A-Za-z_].
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isLowerByte(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpperByte(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// isIdent matches ^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$: a dotted identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	start := true // at the first byte of a part
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if start {
				return false
			}
			start = true
		case start:
			if !isUpperByte(c) && !isLowerByte(c) && c != '_' {
				return false
			}
			start = false
		case !isWordByte(c):
			return false
		}
	}
	return !start
}

// isSnake matches ^[a-z][a-z0-9]*_[a-z0-9_]+$: snake_case.
func isSnake(s string) bool {
	if len(s) < 3 || !isLowerByte(s[0]) {
		return false
	}
	under := -1 // the first '_'
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			if under < 0 {
				under = i
			}
		case !isLowerByte(c) && !isDigitByte(c):
			return false
		}
	}
	return under > 0 && under < len(s)-1
}

// isCamel matches ^[A-Z][a-z0-9]+[A-Z]\w*$: CamelCase.
func isCamel(s string) bool {
	if len(s) < 3 || !isUpperByte(s[0]) {
		return false
	}
	i := 1
	for i < len(s) && (isLowerByte(s[i]) || isDigitByte(s[i])) {
		i++
	}
	if i == 1 || i == len(s) || !isUpperByte(s[i]) {
		return false
	}
	for i++; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// capPhrases calls f with each match of \b[A-Z][a-z]+(?: [A-Z][a-z]+){1,3}\b
// in text, leftmost first, as FindAllString finds them, until f returns
// false: two to four capitalised words.
func capPhrases(text string, f func(string) bool) {
	for i := 0; i < len(text); i++ {
		if !isUpperByte(text[i]) || i > 0 && isWordByte(text[i-1]) {
			continue
		}
		// Ends of the capitalised words from i: "Foo", "Foo Bar", ...
		var ends [4]int
		n := 0
		j := i
		for n < 4 {
			k := j + 1
			for k < len(text) && isLowerByte(text[k]) {
				k++
			}
			if k == j+1 {
				break // no [a-z]+
			}
			ends[n] = k
			n++
			if k+1 >= len(text) || text[k] != ' ' || !isUpperByte(text[k+1]) {
				break
			}
			j = k + 1
		}
		// The longest run of two or more words that ends at a word
		// boundary (each word's [a-z]+ is maximal, or the next word
		// could not follow it).
		for m := n - 1; m >= 1; m-- {
			if e := ends[m]; e == len(text) || !isWordByte(text[e]) {
				if !f(text[i:e]) {
					return
				}
				i = e - 1
				break
			}
		}
	}
}

// acronyms calls f with each match of \b[A-Z][A-Z0-9]{1,7}\b in text,
// leftmost first, until f returns false: words of two to eight capitals and
// digits that start with a capital.
func acronyms(text string, f func(string) bool) {
	for i := 0; i < len(text); {
		if !isWordByte(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isWordByte(text[j]) {
			j++
		}
		if w := text[i:j]; len(w) >= 2 && len(w) <= 8 && isUpperByte(w[0]) && isCapsDigits(w[1:]) {
			if !f(w) {
				return
			}
		}
		i = j
	}
}

// isCapsDigits reports whether s is made of [A-Z0-9].
func isCapsDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isUpperByte(s[i]) && !isDigitByte(s[i]) {
			return false
		}
	}
	return true
}

// parens calls f with the groups (X and Y) of each match of reParen in s,
// leftmost first, as FindAllStringSubmatch(s, n) finds them: at most n (all
// when n < 0).
// reParen, run on every sentence with a "(", was a tenth of the
// extractor's time.
//
// The expression's shape makes every choice of the backtracking matcher
// forced: each word or identifier part runs to its last [\w\-] or \w byte
// (a shorter one would be followed by a byte that \s, "." or "(" cannot
// match), and after each run of white space the next byte says whether X
// goes on (a capital) or ends ("("); Y is every character up to the next
// parenthesis, which must be ")".
func parens(s string, n int, f func(x, y string)) {
	if n < 0 {
		n = len(s) + 1
	}
	for pos := 0; pos < len(s) && n > 0; n-- {
		found := false
		for x0 := pos; x0 < len(s); x0++ {
			if xEnd, ys, ye, ok := parenAt(s, x0); ok {
				f(s[x0:xEnd], s[ys:ye])
				pos = ye + 1
				found = true
				break
			}
		}
		if !found {
			return
		}
	}
}

// parenAt matches reParen at s[x0:]: X is s[x0:xEnd], Y s[ys:ye], and the
// match ends after s[ye] (")").
func parenAt(s string, x0 int) (xEnd, ys, ye int, ok bool) {
	c := s[x0]
	if isUpperByte(c) {
		// [A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,5}
		i := x0
		for words := 1; ; words++ {
			i++
			for i < len(s) && (isWordByte(s[i]) || s[i] == '-') {
				i++
			}
			j := i
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j == i || j == len(s) {
				break
			}
			if s[j] == '(' {
				if ys, ye, ok := parenTail(s, j); ok {
					return i, ys, ye, true
				}
				break
			}
			if !isUpperByte(s[j]) || words == 6 {
				break
			}
			i = j
		}
	}
	if !isUpperByte(c) && !isLowerByte(c) && c != '_' {
		return 0, 0, 0, false
	}
	// [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?
	i := x0 + 1
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	for i+1 < len(s) && s[i] == '.' && (isUpperByte(s[i+1]) || isLowerByte(s[i+1]) || s[i+1] == '_') {
		i += 2
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
	}
	if strings.HasPrefix(s[i:], "()") {
		i += 2
	}
	j := i
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if j == i || j == len(s) || s[j] != '(' {
		return 0, 0, 0, false
	}
	if ys, ye, ok := parenTail(s, j); ok {
		return i, ys, ye, true
	}
	return 0, 0, 0, false
}

// parenTail matches \(([^()]{2,60})\) at s[j:] (s[j] is "("), returning
// where the group starts and ends.
func parenTail(s string, j int) (ys, ye int, ok bool) {
	n := 0
	for k := j + 1; k < len(s); {
		switch s[k] {
		case ')':
			return j + 1, k, n >= 2
		case '(':
			return 0, 0, false
		}
		if s[k] < utf8.RuneSelf {
			k++
		} else {
			_, w := utf8.DecodeRuneInString(s[k:])
			k += w
		}
		if n++; n > 60 {
			return 0, 0, false
		}
	}
	return 0, 0, false
}
