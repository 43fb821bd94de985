package graphrag

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// salient returns the section's salient terms, most specific first.
func (e *extraction) salient(s *kgagent.Section, body string) []kgagent.Entity {
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
		if t.ID == "" || text.CommonTerms.Has(t.ID) || text.PoorSubjects.Has(t.ID) {
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
	for _, class := range codeTokens(body, saw) {
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
		if lt := e.linkTexts[li]; strings.Contains(body, lt) {
			add(lt, TypeTerm)
		}
	}
	if full() {
		return out
	}
	capPhrases(body, func(m string) bool {
		words := strings.Fields(m)
		for len(words) > 1 && text.PoorSubjects.Has(strings.ToLower(words[0])) {
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
	acronyms(body, func(m string) bool {
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
