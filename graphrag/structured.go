package graphrag

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// MaxListItems is how many items a structured answer lists; the rest are
// counted in EvidenceList.More.
const MaxListItems = 20

// Structured answers a question whose shape the graph answers outright
// (AnalyzeQuestion) from the triples of the entity it names, through
// Store.Find only, so every Store gives the same answer:
//   - list: the entries the subject defines in their own sections (an API
//     entry's "defines" triple whose section is the entry's anchor), of the
//     kind asked, narrowed by the question's restriction against their
//     descriptions;
//   - relation: the subject's raises, has_parameter and subclass_of
//     triples, or the module that defines it;
//   - attribute: a parameter's default, added_in, deprecated_since;
//   - comparison: both entities' descriptions and parameters side by side.
//
// Each item carries the section that states it. It returns nil (no error)
// when the question has no such shape or the graph holds no answer, so the
// caller falls back to retrieval. Errors: the store's.
func (s *Service) Structured(ctx context.Context, question, collection string) (*kgagent.EvidenceList, error) {
	if err := ValidateCollection(collection); err != nil {
		return nil, err
	}
	sh := AnalyzeQuestion(question)
	if sh.Kind == "" || sh.Subject == "" || len(sh.Subject) > MaxNameBytes || len(sh.Other) > MaxNameBytes {
		return nil, nil
	}
	g := graphQuery{s: s.cfg.Store, coll: collection}
	var l *kgagent.EvidenceList
	var err error
	switch {
	case sh.Kind == kgagent.ShapeList:
		l, err = g.list(ctx, sh)
	case sh.Kind == kgagent.ShapeComparison:
		l, err = g.compare(ctx, sh)
	default:
		l, err = g.relation(ctx, sh)
	}
	if l == nil || err != nil {
		return nil, err
	}
	if l.Shape != kgagent.ShapeComparison {
		// By name: every store lists the same items in the same order.
		slices.SortStableFunc(l.Items, func(a, b kgagent.EvidenceItem) int {
			return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.Name, b.Name))
		})
	}
	if len(l.Items) > MaxListItems {
		l.More = len(l.Items) - MaxListItems
		l.Items = l.Items[:MaxListItems]
	}
	return l, nil
}

// graphQuery runs a Structured question's lookups on one collection.
type graphQuery struct {
	s    Store
	coll string
}

// ownSection reports whether url is the section of the entity id itself:
// its anchor names the entity (Sphinx "#shutil.copyfile", "#module-shutil";
// Javadoc "#read(byte[])" for FileInputStream.read, by its last part), or,
// without an anchor, the page is named after it (Javadoc's
// FileInputStream.html).
func ownSection(url, id string) bool {
	page, anchor, ok := strings.Cut(url, "#")
	if !ok || anchor == "" {
		page = page[strings.LastIndexByte(page, '/')+1:]
		base, html := strings.CutSuffix(page, ".html")
		return html && NormalizeName(base) == id
	}
	anchor = strings.TrimPrefix(anchor, "module-")
	if i := strings.IndexByte(anchor, '('); i >= 0 {
		anchor = anchor[:i]
	}
	n := NormalizeName(anchor)
	return n == id || !strings.Contains(anchor, ".") && n != "" && n == lastPart(id)
}

// entry is an entity's own section: its description there and the URL.
type entry struct {
	name, text, url string
}

// entry finds the description of id from its own section (the section
// anchored at its name), else the first one the graph has.
func (g graphQuery) entry(ctx context.Context, id string) (entry, error) {
	ts, err := g.s.Find(ctx, Pattern{Collection: g.coll, S: id, P: PredIsDefinedAs, Limit: 50})
	if err != nil || len(ts) == 0 {
		return entry{}, err
	}
	best := ts[0]
	for _, t := range ts {
		if ownSection(t.SourceURL, t.Subject.ID) {
			best = t
			break
		}
	}
	return entry{name: best.Subject.Name, text: firstSentence(best.Literal), url: best.SourceURL}, nil
}

// firstSentence is the first sentence of a description, at most about 200
// bytes.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	// Not before byte 11, not at "e.g. " nor after a dotted name.
	for i := 11; i+1 < len(s); i++ {
		if (text.SentenceRule{Abbrev: true}).End(s, i) {
			s = s[:i+1]
			break
		}
	}
	return kgagent.Snippet(s, 200)
}

// entries finds the own-section entry of each id in one Expand of one hop
// (the embedded store answers it from memory; a remote one in one round
// trip), falling back to entry for an id whose description was not among
// the triples the hop kept.
func (g graphQuery) entries(ctx context.Context, ids []string) ([]entry, error) {
	out := make([]entry, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	ts, err := g.s.Expand(ctx, g.coll, ids, ExpandLimits{Hops: 1, TriplesPerEntity: 40})
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	own := make([]bool, len(ids))
	for _, t := range ts {
		i, ok := at[t.Subject.ID]
		if !ok || t.Predicate != PredIsDefinedAs || own[i] {
			continue
		}
		mine := ownSection(t.SourceURL, t.Subject.ID)
		if out[i].url == "" || mine {
			out[i] = entry{name: t.Subject.Name, text: firstSentence(t.Literal), url: t.SourceURL}
			own[i] = mine
		}
	}
	for i, id := range ids {
		if own[i] {
			continue
		}
		e, err := g.entry(ctx, id)
		if err != nil {
			return nil, err
		}
		if e.url != "" {
			out[i] = e
		}
	}
	return out, nil
}

// kindMatches reports whether an entry of type typ answers a list of want.
func kindMatches(want, typ string) bool {
	switch want {
	case TypeFunction:
		return typ == TypeFunction || typ == TypeMethod
	case TypeMethod:
		return typ == TypeMethod || typ == TypeFunction
	}
	return typ == want
}

func (g graphQuery) list(ctx context.Context, sh Shape) (*kgagent.EvidenceList, error) {
	ts, err := g.s.Find(ctx, Pattern{Collection: g.coll, S: sh.Subject, P: PredDefines, Limit: 1000})
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	var items []kgagent.EvidenceItem
	var ids []string
	seen := map[string]int{}
	subject := ts[0].Subject
	for _, t := range ts {
		// An API entry defines its items in the items' own sections; a
		// code example naming shutil.copyfileobj elsewhere does not.
		if t.Object.ID == "" || !ownSection(t.SourceURL, t.Object.ID) || !kindMatches(sh.Relation, t.Object.Type) {
			continue
		}
		if i, dup := seen[t.Object.ID]; dup {
			// overloads (Javadoc's read(), read(byte[])): the first section
			// by URL, whatever order the store returned them in
			if t.SourceURL < items[i].SourceURL {
				items[i].SourceURL = t.SourceURL
			}
			continue
		}
		seen[t.Object.ID] = len(items)
		subject = t.Subject
		items = append(items, kgagent.EvidenceItem{Name: t.Object.Name, Kind: t.Object.Type, SourceURL: t.SourceURL})
		ids = append(ids, t.Object.ID)
	}
	if len(items) == 0 {
		return nil, nil
	}
	es, err := g.entries(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i].Text = es[i].text
	}
	l := &kgagent.EvidenceList{Shape: kgagent.ShapeList, Subject: subject.Name, Relation: sh.Relation, Items: items}
	if narrowed := restrict(items, sh.Restriction); len(narrowed) > 0 && len(narrowed) < len(items) {
		l.Items = narrowed
		l.Restriction = strings.Join(sh.Restriction, " ")
	}
	if err := g.lead(ctx, l, subject.ID); err != nil {
		return nil, err
	}
	return l, nil
}

// lead sets the list's own section and summary from the subject's entry;
// without one, the first item's section stands for it.
func (g graphQuery) lead(ctx context.Context, l *kgagent.EvidenceList, id string) error {
	e, err := g.entry(ctx, id)
	if err != nil {
		return err
	}
	l.SourceURL, l.Summary = e.url, e.text
	if e.name != "" {
		l.Subject = e.name
	}
	if l.SourceURL == "" && len(l.Items) > 0 {
		l.SourceURL = l.Items[0].SourceURL
	}
	return nil
}

// restrict keeps the items a restriction describes: its first word (the
// head: "copying" in "for copying files") matched by stem in the item's
// description or name.
func restrict(items []kgagent.EvidenceItem, words []string) []kgagent.EvidenceItem {
	if len(words) == 0 {
		return nil
	}
	head := text.PrefixStem(words[0])
	if len(head) < 3 {
		return nil
	}
	var out []kgagent.EvidenceItem
	for _, it := range items {
		if strings.Contains(strings.ToLower(lastPart(it.Name)), head) {
			out = append(out, it)
			continue
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(it.Text), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		}) {
			if text.PrefixStem(w) == head {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

func (g graphQuery) relation(ctx context.Context, sh Shape) (*kgagent.EvidenceList, error) {
	l := &kgagent.EvidenceList{Shape: sh.Kind, Subject: sh.Subject, Relation: sh.Relation, Param: sh.Param}
	id := NormalizeName(sh.Subject)
	if sh.Relation == RelModule {
		ts, err := g.s.Find(ctx, Pattern{Collection: g.coll, O: sh.Subject, P: PredDefines, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if ownSection(t.SourceURL, t.Object.ID) && t.Subject.Type == TypeModule {
				l.Subject = t.Object.Name
				l.Items = []kgagent.EvidenceItem{{Name: t.Subject.Name, Kind: TypeModule, SourceURL: t.SourceURL}}
				l.SourceURL = t.SourceURL
				return l, nil
			}
		}
		return nil, nil
	}
	pred := map[string]string{RelRaises: PredRaises, RelParameters: PredHasParameter, RelDefault: PredHasParameter,
		RelAdded: PredAddedIn, RelDeprecated: PredDeprecatedSince, RelSubclass: PredSubclassOf, RelImplements: PredImplements}[sh.Relation]
	if pred == "" {
		return nil, nil
	}
	ts, err := g.s.Find(ctx, Pattern{Collection: g.coll, S: sh.Subject, P: pred, Limit: 200})
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	// The subject's own section states its facts; other pages' mentions
	// count only when it has none.
	own := ts[:0:0]
	for _, t := range ts {
		if ownSection(t.SourceURL, t.Subject.ID) {
			own = append(own, t)
		}
	}
	if len(own) > 0 {
		ts = own
	}
	seen := map[string]int{}
	var exc []string
	for _, t := range ts {
		name, kind := t.Literal, ""
		if name == "" {
			name, kind = t.Object.Name, t.Object.Type
		}
		if sh.Relation == RelDefault {
			p, v, ok := strings.Cut(name, "=")
			if strings.TrimLeft(strings.TrimSpace(p), "*") != sh.Param {
				continue
			}
			if !ok {
				v = "none: " + sh.Param + " is required"
			}
			name = strings.TrimSpace(v)
		}
		if i, dup := seen[name]; dup {
			if t.SourceURL < l.Items[i].SourceURL {
				l.Items[i].SourceURL = t.SourceURL
			}
			continue
		}
		seen[name] = len(l.Items)
		l.Subject = t.Subject.Name
		id = t.Subject.ID
		l.Items = append(l.Items, kgagent.EvidenceItem{Name: name, Kind: kind, SourceURL: t.SourceURL})
		if sh.Relation == RelRaises || sh.Relation == RelSubclass {
			exc = append(exc, t.Object.ID)
		}
		if sh.Relation != RelRaises && sh.Relation != RelParameters && sh.Relation != RelImplements {
			break // one value
		}
	}
	if len(l.Items) == 0 {
		return nil, nil
	}
	if len(exc) > 0 {
		es, err := g.entries(ctx, exc)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			l.Items[i].Text = es[i].text
		}
	}
	if err := g.lead(ctx, l, id); err != nil {
		return nil, err
	}
	if l.SourceURL == "" {
		l.SourceURL = l.Items[0].SourceURL
	}
	return l, nil
}

func (g graphQuery) compare(ctx context.Context, sh Shape) (*kgagent.EvidenceList, error) {
	l := &kgagent.EvidenceList{Shape: kgagent.ShapeComparison, Subject: sh.Subject, Other: sh.Other, Relation: RelCompare}
	for _, name := range []string{sh.Subject, sh.Other} {
		e, err := g.entry(ctx, name)
		if err != nil {
			return nil, err
		}
		if e.url == "" {
			return nil, nil // both sides or nothing
		}
		// The signature as written keeps the parameters' order, which
		// no store keeps for has_parameter triples.
		sigs, err := g.s.Find(ctx, Pattern{Collection: g.coll, S: name, P: PredHasSignature, Limit: 40})
		if err != nil {
			return nil, err
		}
		label := e.name
		for _, sg := range sigs {
			if sg.SourceURL == e.url {
				label = sg.Literal
				break
			}
		}
		l.Items = append(l.Items, kgagent.EvidenceItem{Name: label, Text: e.text, SourceURL: e.url, Of: e.name})
	}
	l.Subject, l.Other = l.Items[0].Of, l.Items[1].Of
	l.SourceURL = l.Items[0].SourceURL
	return l, nil
}
