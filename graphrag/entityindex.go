package graphrag

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// EntityChunks are the entity index entries of a document's triples: one per
// entity with a definition there (is_defined_as), its types and aliases
// added to the text; pages, sections and entities that are only named,
// typed or aliased are left to the name lookup. The chunk's Title is the entity's name, HeadingPath[0] its
// id, and Text its name followed by its definitions.
func EntityChunks(doc kgagent.Document, ts []kgagent.Triple, max int) []kgagent.Chunk {
	type info struct {
		e       kgagent.Entity
		src     string
		defs    []string
		defined bool // has an is_defined_as literal
	}
	byID := map[string]*info{}
	var order []string
	note := func(e kgagent.Entity, src, def string) {
		if e.Type == TypePage || e.Type == TypeSection || e.ID == "" {
			return
		}
		in, ok := byID[e.ID]
		if !ok {
			if len(order) >= max {
				return
			}
			in = &info{e: e, src: src}
			byID[e.ID] = in
			order = append(order, e.ID)
		}
		if def != "" && len(in.defs) < 4 {
			in.defs = append(in.defs, def)
		}
	}
	for _, t := range ts {
		switch t.Predicate {
		case PredMentions, PredHasSection, PredLinksTo:
			continue
		case PredIsDefinedAs:
			note(t.Subject, t.SourceURL, t.Literal)
			if in := byID[t.Subject.ID]; in != nil {
				in.defined = true
			}
		case PredIsA:
			note(t.Subject, t.SourceURL, "a "+t.Object.Name)
		case PredAliasOf:
			note(t.Object, t.SourceURL, "also called "+t.Subject.Name)
		default:
			note(t.Subject, t.SourceURL, "")
			if t.Literal == "" {
				note(t.Object, t.SourceURL, "")
			}
		}
	}
	out := make([]kgagent.Chunk, 0, len(order))
	for _, id := range order {
		in := byID[id]
		if !in.defined {
			continue // named or typed only: the name lookup finds it
		}
		i := len(out)
		text := text.Clip(in.e.Name+"\n"+strings.Join(in.defs, "; "), 2000)
		h := sha256.Sum256([]byte(doc.Collection + "\x00" + doc.URL + "\x00" + id))
		th := sha256.Sum256([]byte(text))
		out = append(out, kgagent.Chunk{
			ID:          hex.EncodeToString(h[:16]),
			DocURL:      doc.URL,
			URL:         in.src,
			Title:       in.e.Name,
			HeadingPath: []string{id, in.e.Type},
			Ordinal:     i,
			Text:        text,
			Hash:        hex.EncodeToString(th[:]),
		})
	}
	return out
}

func (s *Service) entityCollection(collection string) string { return collection + s.cfg.EntitySuffix }

// InternalCollection reports whether an index collection is one of the
// graph's entity indexes ("<collection>" + EntitySuffix), not a user's.
func (s *Service) InternalCollection(name string) bool {
	return s.cfg.Index != nil && strings.HasSuffix(name, s.cfg.EntitySuffix) && len(name) > len(s.cfg.EntitySuffix)
}
