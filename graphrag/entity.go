package graphrag

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Limits on triple fields. Names longer than MaxNameBytes are rejected with
// EINVALID rather than truncated, so two different long names never merge.
const (
	MaxNameBytes      = 1024      // entity names and ids
	MaxPredicateBytes = 256       // predicates
	MaxLiteralBytes   = 16 * 1024 // literal objects
	MaxURLBytes       = 4096      // DocURL, SourceURL, ChunkID
)

// Entity types the built-in extractor assigns.
const (
	TypePage     = "page"
	TypeSection  = "section"
	TypeTerm     = "term"
	TypeModule   = "module"
	TypeFunction = "function"
	TypeClass    = "class"
	TypeConcept  = "concept"
	// API entries of a more specific kind than function or class.
	TypeException = "exception" // an exception class (Sphinx "exception X")
	TypeMethod    = "method"    // a function entry of a class
)

// Predicates the extractors emit. LLM extraction may add free predicates,
// which are normalised with NormalizePredicate.
const (
	PredHasSection  = "has_section"
	PredMentions    = "mentions"
	PredIsDefinedAs = "is_defined_as"
	PredIsA         = "is_a"
	PredDefines     = "defines"
	PredLinksTo     = "links_to"
	PredAliasOf     = "alias_of"
	// Read from an API entry's own section (signature, field lists and
	// version notes), each with that section as source.
	PredRaises          = "raises"           // API entry raises exception
	PredHasParameter    = "has_parameter"    // literal: "name" or "name=default"
	PredHasSignature    = "has_signature"    // literal: the entry's signature as written
	PredAddedIn         = "added_in"         // literal: the version of "New in version X"
	PredDeprecatedSince = "deprecated_since" // literal: the version of "Deprecated since version X"
	PredSubclassOf      = "subclass_of"      // class or exception is a subclass of another
)

// NormalizeName folds an entity name to the key entities are merged by:
// Unicode lower case, surrounding punctuation and quotes stripped, a trailing
// "()" dropped, inner whitespace and dashes collapsed to one space, and the
// last word of a plain-word name made singular ("Dictionaries" ->
// "dictionary"). Code identifiers (with '.', '_', digits, backquotes or
// "()") keep their spelling apart from case, so json.dumps, dumps() and
// json.dump stay distinct.
func NormalizeName(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return ""
	}
	s, ok := foldASCII(name)
	if !ok {
		s = foldRunes(name)
	}
	s = strings.Trim(s, ". ")
	if s == "" {
		return ""
	}
	// Only the last word changes: s's words are joined by single spaces.
	i := strings.LastIndexByte(s, ' ')
	if last := s[i+1:]; isPlainWord(last) && !strings.ContainsAny(name, "()`_") {
		if w := text.Singular(last); w != last {
			s = s[:i+1] + w
		}
	}
	return s
}

// foldRunes is the word folding of NormalizeName: letters, digits and
// "_.+#" kept (lower case), every run of other characters one space between
// kept ones.
func foldRunes(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	space := false
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '+' || r == '#':
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			// Whitespace, dashes, quotes, brackets and other punctuation
			// separate words.
			space = true
		}
	}
	return b.String()
}

// foldClass classifies ASCII bytes for foldASCII: 0 separates words, 1 is
// kept as is, 2 is an upper-case letter.
var foldClass = func() (t [256]byte) {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '.', c == '+', c == '#':
			t[c] = 1
		case c >= 'A' && c <= 'Z':
			t[c] = 2
		}
	}
	return t
}()

// foldASCII is foldRunes for an ASCII name (ok false otherwise), returning
// name itself when it is folded already.
func foldASCII(name string) (string, bool) {
	folded := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= utf8.RuneSelf {
			return "", false
		}
		switch foldClass[c] {
		case 2:
			folded = false
		case 0:
			// A single space between kept bytes stays as it is.
			if c != ' ' || i == 0 || i == len(name)-1 || foldClass[name[i-1]] == 0 || foldClass[name[i+1]] == 0 {
				folded = false
			}
		}
	}
	if folded {
		return name, true
	}
	b := make([]byte, 0, len(name))
	space := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch foldClass[c] {
		case 0:
			space = true
			continue
		case 2:
			c += 'a' - 'A'
		}
		if space && len(b) > 0 {
			b = append(b, ' ')
		}
		space = false
		b = append(b, c)
	}
	return string(b), true
}

// isPlainWord reports whether w is made of letters only (no code punctuation).
func isPlainWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return w != ""
}

// NormalizePredicate folds a predicate to snake_case: lower case, words joined
// by '_' ("Is Part Of" -> "is_part_of").
func NormalizePredicate(p string) string { return text.JoinWords(p, '_') }

// EntityID returns the stable id of a named entity: its normalised name.
// Pages and sections have their own ids (PageEntity, SectionEntity) so a page
// titled "json" does not merge with the module json.
func EntityID(name string) string { return NormalizeName(name) }

// NewEntity returns the entity with the given display name and type and the
// id EntityID(name).
func NewEntity(name, typ string) kgagent.Entity {
	name = collapseSpace(name)
	return kgagent.Entity{ID: EntityID(name), Name: name, Type: typ}
}

// PageEntity is the node of a crawled page, identified by its URL (without
// fragment).
func PageEntity(url, title string) kgagent.Entity {
	url = StripFragment(url)
	if strings.TrimSpace(title) == "" {
		title = url
	}
	return kgagent.Entity{ID: "page:" + url, Name: text.Clip(collapseSpace(title), MaxNameBytes), Type: TypePage}
}

// SectionEntity is the node of one section of a page, identified by the
// section URL (page#anchor).
func SectionEntity(sectionURL, heading string) kgagent.Entity {
	if strings.TrimSpace(heading) == "" {
		heading = sectionURL
	}
	return kgagent.Entity{ID: "section:" + sectionURL, Name: text.Clip(collapseSpace(heading), MaxNameBytes), Type: TypeSection}
}

// collapseSpace is strings.Join(strings.Fields(s), " "), without the
// allocations when s has no other white space than single inner spaces.
func collapseSpace(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r',
			c == ' ' && (i == 0 || i == len(s)-1 || s[i+1] == ' '):
			return strings.Join(strings.Fields(s), " ")
		}
	}
	return s
}

// StripFragment returns u without its "#fragment".
func StripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// SectionURL joins a page URL and a section anchor.
func SectionURL(docURL, anchor string) string {
	docURL = StripFragment(docURL)
	if anchor == "" {
		return docURL
	}
	return docURL + "#" + anchor
}

// Aliases maps normalised alternative names to the id of the entity they
// stand for (e.g. "gil" -> "global interpreter lock"). The zero value is
// ready to use.
type Aliases map[string]string

// Add records alias as another name of the entity with id canonical.
// An alias equal to its canonical id is ignored.
func (a Aliases) Add(alias, canonical string) {
	k := NormalizeName(alias)
	if k == "" || k == canonical {
		return
	}
	a[k] = canonical
}

// Resolve returns e with its id replaced by the canonical id when its
// normalised name is a known alias.
func (a Aliases) Resolve(e kgagent.Entity) kgagent.Entity {
	if c, ok := a[e.ID]; ok {
		e.ID = c
	}
	return e
}

// ValidateTriple checks one triple before it is stored: collection and DocURL
// as given, a subject and a predicate, exactly one kind of object, valid
// UTF-8, and every field within its limit. It returns an EINVALID *kgagent.Error
// naming the problem, or nil.
func ValidateTriple(collection, docURL string, t kgagent.Triple) error {
	if err := ValidateCollection(collection); err != nil {
		return err
	}
	return validTriple(collection, docURL, t)
}

// validTriple is ValidateTriple of a triple of a valid collection.
func validTriple(collection, docURL string, t kgagent.Triple) error {
	if t.Collection != collection {
		return kgagent.Errorf(kgagent.EINVALID, "triple collection %q is not %q", text.Truncate(t.Collection, 80), text.Truncate(collection, 80))
	}
	if t.DocURL != docURL {
		return kgagent.Errorf(kgagent.EINVALID, "triple doc_url %q is not %q", text.Truncate(t.DocURL, 80), text.Truncate(docURL, 80))
	}
	if err := validEntity("subject", t.Subject, true); err != nil {
		return err
	}
	if t.Predicate == "" || len(t.Predicate) > MaxPredicateBytes || !utf8.ValidString(t.Predicate) {
		return kgagent.Errorf(kgagent.EINVALID, "predicate must be 1..%d bytes of UTF-8", MaxPredicateBytes)
	}
	if t.Literal != "" {
		if t.Object != (kgagent.Entity{}) {
			return kgagent.Errorf(kgagent.EINVALID, "triple has both a literal and an object entity")
		}
		if len(t.Literal) > MaxLiteralBytes || !utf8.ValidString(t.Literal) {
			return kgagent.Errorf(kgagent.EINVALID, "literal must be at most %d bytes of UTF-8", MaxLiteralBytes)
		}
	} else if err := validEntity("object", t.Object, true); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"chunk_id", t.ChunkID}, {"source_url", t.SourceURL}} {
		if len(f.v) > MaxURLBytes || !utf8.ValidString(f.v) {
			return kgagent.Errorf(kgagent.EINVALID, "%s must be at most %d bytes of UTF-8", f.name, MaxURLBytes)
		}
	}
	return nil
}

// ValidateTriples checks collection, docURL and every triple, so a store can
// reject a whole batch before it writes anything.
func ValidateTriples(collection, docURL string, triples []kgagent.Triple) error {
	if err := ValidateCollection(collection); err != nil {
		return err
	}
	if err := ValidateDocURL(docURL); err != nil {
		return err
	}
	for i, t := range triples {
		if err := validTriple(collection, docURL, t); err != nil {
			if e, ok := err.(*kgagent.Error); ok {
				if e.Details == nil {
					e.Details = map[string]any{}
				}
				e.Details["index"] = i
			}
			return err
		}
	}
	return nil
}

// ValidateCollection checks a collection name a store is given: a user's
// collection or an internal one such as its entity index
// (kgagent.ValidateStoredCollection).
func ValidateCollection(c string) error {
	return kgagent.ValidateStoredCollection(c)
}

// ValidateDocURL checks a document URL: 1..MaxURLBytes bytes of UTF-8.
func ValidateDocURL(u string) error {
	if u == "" || len(u) > MaxURLBytes || !utf8.ValidString(u) {
		return kgagent.Errorf(kgagent.EINVALID, "doc_url must be 1..%d bytes of UTF-8", MaxURLBytes)
	}
	return nil
}

func validEntity(role string, e kgagent.Entity, required bool) error {
	if required && (e.ID == "" || e.Name == "") {
		return kgagent.Errorf(kgagent.EINVALID, "%s needs an id and a name", role)
	}
	if len(e.ID) > MaxURLBytes+16 || len(e.Name) > MaxNameBytes {
		return kgagent.Errorf(kgagent.EINVALID, "%s name is over %d bytes", role, MaxNameBytes)
	}
	if len(e.Type) > MaxPredicateBytes {
		return kgagent.Errorf(kgagent.EINVALID, "%s type is over %d bytes", role, MaxPredicateBytes)
	}
	if !utf8.ValidString(e.ID) || !utf8.ValidString(e.Name) || !utf8.ValidString(e.Type) {
		return kgagent.Errorf(kgagent.EINVALID, "%s is not valid UTF-8", role)
	}
	return nil
}
