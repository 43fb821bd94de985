package graphrag

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

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
					capIdents(d.Definition, func(m string) bool { raise(m); return true })
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
				excNames(text, func(m string) bool { raise(m); return true })
			}
			if len(e.excNames) > 0 && (strings.Contains(text, "rais") || strings.Contains(text, "throw")) {
				capIdents(text, func(m string) bool {
					if e.excNames[lastPart(m)] {
						raise(m)
					}
					return true
				})
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
