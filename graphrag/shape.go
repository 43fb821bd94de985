package graphrag

import (
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Relations a Shape asks about besides the item kinds of a list
// (EvidenceList.Relation).
const (
	RelRaises     = "raises"
	RelParameters = "parameters"
	RelDefault    = "default"
	RelAdded      = "added_in"
	RelDeprecated = "deprecated_since"
	RelSubclass   = "subclass_of"
	RelImplements = "implements"
	RelModule     = "module"
	RelCompare    = "compare"
)

// Shape is what a question asks of the graph, recognised from the
// question's structure: its kind (kgagent.ShapeList, ShapeRelation,
// ShapeAttribute, ShapeComparison), the entity it is about, and what it
// wants of it. The zero Shape (Kind "") is a question the graph does not
// answer outright.
type Shape struct {
	Kind     string
	Subject  string // the entity asked about, as written (shutil, json.loads)
	Other    string // the second entity of a comparison
	Relation string // an item kind (TypeFunction, …) for a list; a Rel* constant otherwise
	Param    string // the parameter of a default-value question
	// Restriction are the content words that narrow a list ("for copying
	// files": copying, files).
	Restriction []string
}

// itemKinds maps the nouns of a list question to the entity type listed.
var itemKinds = map[string]string{
	"function": TypeFunction, "functions": TypeFunction, "func": TypeFunction, "funcs": TypeFunction,
	"class": TypeClass, "classes": TypeClass, "type": TypeClass, "types": TypeClass,
	"exception": TypeException, "exceptions": TypeException, "error": TypeException, "errors": TypeException,
	"method": TypeMethod, "methods": TypeMethod,
}

// nonSubjects are words that are never a question's subject: the
// vocabulary of API questions (module, class, raises, defines, since…), not
// English function words, which text.IsQuestionStop already leaves out.
var nonSubjects = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`python module modules package library class classes function functions method methods
		exception exceptions error errors parameter parameters argument arguments args params option options
		default value version deprecated subclass difference between vs versus raise raises raised throw throws
		provide provides define defines have has contain contains offer offers list name accept accepts take takes
		added introduced new since available import imported belong belongs standard difference differences
		compare comparison type types func funcs call calls way ways there defined provided contained offered
		listed exist exists included extend extends implement implements implemented interface interfaces`) {
		nonSubjects[w] = true
	}
}

// qword is a question word: as written (trimmed of punctuation around it,
// "()" dropped) and lower-cased.
type qword struct{ raw, low string }

func questionWords(q string) []qword {
	var out []qword
	for _, f := range strings.Fields(text.ExpandContractions(q)) {
		f = trimWord(f)
		if i := strings.IndexByte(f, '('); i > 0 {
			f = f[:i]
		}
		if f == "" {
			continue
		}
		low := strings.ToLower(f)
		low = strings.TrimSuffix(low, "'s")
		out = append(out, qword{strings.TrimSuffix(f, "'s"), low})
	}
	return out
}

// codeLike reports whether a word names code: dotted, with '_' or digits
// after letters, or camel case.
func codeLike(w string) bool {
	if strings.Contains(w, ".") || strings.Contains(w, "_") {
		return true
	}
	upper := 0
	for i, r := range w {
		if unicode.IsUpper(r) && i > 0 {
			upper++
		}
	}
	return upper > 0
}

// AnalyzeQuestion recognises the shape of a question by its structure:
//   - comparison: "difference between A and B", "A vs B", "compare A and/with B";
//   - attribute: "default value of P in X", "what does P default to in X",
//     "since which version / when was X added / introduced", "is X deprecated";
//   - relation: a raise/throw verb ("what does X raise"), "subclass of" /
//     "inherit from" / "what does X extend", "which interfaces does X
//     implement", "which module is X in" / "import X from", "what
//     arguments / parameters does X accept / take";
//   - list: which/what/list + an item noun (functions, classes, exceptions,
//     errors, methods) + the entity that provides them, optionally narrowed
//     by "for/to/that …" ("for copying files").
//
// The subject is the code-like word (json.loads, os.path), else the word
// before "module"/"class", else the first word that is not a question or
// shape word. The graph decides whether the subject exists.
func AnalyzeQuestion(question string) Shape {
	ws := questionWords(question)
	if len(ws) == 0 {
		return Shape{}
	}
	has := func(w ...string) int {
		for i, x := range ws {
			for _, y := range w {
				if x.low == y {
					return i
				}
			}
		}
		return -1
	}
	hasPrefix := func(p string) int {
		for i, x := range ws {
			if strings.HasPrefix(x.low, p) {
				return i
			}
		}
		return -1
	}
	// Comparison: two names around "and"/"vs"/"versus"/"with".
	if i := has("difference", "differences", "compare", "vs", "versus", "differ"); i >= 0 {
		var names []string
		for _, x := range ws {
			if codeLike(x.raw) {
				names = append(names, x.raw)
			}
		}
		if len(names) < 2 {
			// "difference between A and B" with plain words
			if j := has("between"); j >= 0 && j+3 < len(ws)+1 {
				if k := has("and"); k > j+1 && k+1 < len(ws) {
					names = []string{ws[j+1].raw, ws[k+1].raw}
				}
			}
		}
		if len(names) >= 2 && !strings.EqualFold(names[0], names[1]) {
			return Shape{Kind: kgagent.ShapeComparison, Subject: names[0], Other: names[1], Relation: RelCompare}
		}
	}
	subject := func(skip ...string) string {
		ex := map[string]bool{}
		for _, s := range skip {
			ex[strings.ToLower(s)] = true
		}
		for _, x := range ws {
			if codeLike(x.raw) && !ex[x.low] {
				return x.raw
			}
		}
		for i, x := range ws {
			if (x.low == "module" || x.low == "class" || x.low == "package") && i > 0 {
				if p := ws[i-1]; !text.IsQuestionStop(p.low) && !nonSubjects[p.low] && !ex[p.low] {
					return p.raw
				}
			}
			if (x.low == "module" || x.low == "class") && i+1 < len(ws) {
				if n := ws[i+1]; !text.IsQuestionStop(n.low) && !nonSubjects[n.low] && !ex[n.low] {
					return n.raw
				}
			}
		}
		for _, x := range ws {
			if !text.IsQuestionStop(x.low) && !nonSubjects[x.low] && !ex[x.low] && len(x.low) > 1 && unicode.IsLetter(rune(x.low[0])) {
				return x.raw
			}
		}
		return ""
	}
	// Attributes.
	if i := has("default", "defaults"); i >= 0 {
		var param string
		switch {
		case i+2 < len(ws) && ws[i+1].low == "value" && ws[i+2].low == "of" && i+3 < len(ws):
			param = ws[i+3].raw // default value of P in X
		case i+1 < len(ws) && ws[i+1].low == "of" && i+2 < len(ws):
			param = ws[i+2].raw // default of P
		case ws[i].low == "default" && i > 0 && i+1 < len(ws) && ws[i+1].low == "to":
			// what does P default to in X
			if d := has("does", "do"); d >= 0 && d+1 < i {
				param = ws[d+1].raw
			}
		case i > 0 && !text.IsQuestionStop(ws[i-1].low) && !nonSubjects[ws[i-1].low]:
			param = ws[i-1].raw // P's default / P default
		}
		if param != "" {
			if x := subject(param); x != "" {
				return Shape{Kind: kgagent.ShapeAttribute, Subject: x, Relation: RelDefault, Param: param}
			}
		}
	}
	if hasPrefix("deprecat") >= 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeAttribute, Subject: x, Relation: RelDeprecated}
		}
	}
	if has("version", "versions", "release") >= 0 && (has("since", "which", "what", "when") >= 0) ||
		has("added", "introduced", "appear", "appeared") >= 0 && has("when", "version", "since") >= 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeAttribute, Subject: x, Relation: RelAdded}
		}
	}
	// Relations.
	if i := hasPrefix("rais"); i >= 0 || hasPrefix("throw") >= 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeRelation, Subject: x, Relation: RelRaises}
		}
	}
	if has("implement", "implements", "implemented") >= 0 && has("interface", "interfaces") >= 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeRelation, Subject: x, Relation: RelImplements}
		}
	}
	if i := has("subclass", "inherit", "inherits", "superclass", "base", "extend", "extends"); i >= 0 && (ws[i].low != "base" || has("class") == i+1) {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeRelation, Subject: x, Relation: RelSubclass}
		}
	}
	if i := has("module", "package"); i >= 0 && i > 0 && (ws[i-1].low == "which" || ws[i-1].low == "what") ||
		has("import") >= 0 && has("from") >= 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeRelation, Subject: x, Relation: RelModule}
		}
	}
	if has("arguments", "parameters", "params", "args", "argument", "parameter") >= 0 && has("default") < 0 {
		if x := subject(); x != "" {
			return Shape{Kind: kgagent.ShapeRelation, Subject: x, Relation: RelParameters}
		}
	}
	// Lists: an item noun after which/what/list, or "X functions".
	k := -1
	for i, x := range ws {
		if itemKinds[x.low] != "" && i <= 4 {
			k = i
			break
		}
	}
	if k < 0 || has("which", "what", "list", "name", "show", "enumerate") < 0 {
		return Shape{}
	}
	sh := Shape{Kind: kgagent.ShapeList, Relation: itemKinds[ws[k].low]}
	// "Which X functions ..." names the subject before the noun.
	if k > 0 && !text.IsQuestionStop(ws[k-1].low) && !nonSubjects[ws[k-1].low] && ws[k-1].low != "list" {
		sh.Subject = ws[k-1].raw
	} else {
		sh.Subject = subject()
	}
	if sh.Subject == "" {
		return Shape{}
	}
	if sh.Relation == TypeFunction && strings.Contains(sh.Subject, ".") {
		// "the functions of json.JSONEncoder": a class's are methods
		if r := []rune(lastPart(sh.Subject)); len(r) > 0 && unicode.IsUpper(r[0]) {
			sh.Relation = TypeMethod
		}
	}
	// The restriction: content words after "for", "to" or "that" past the
	// subject and the verb.
	at := -1
	for i := k + 1; i < len(ws); i++ {
		if ws[i].low == "for" || ws[i].low == "to" || ws[i].low == "that" || ws[i].low == "which" {
			at = i
			break
		}
	}
	if at >= 0 {
		for _, x := range ws[at+1:] {
			if !text.IsQuestionStop(x.low) && !nonSubjects[x.low] && !strings.EqualFold(x.raw, sh.Subject) && len(x.low) > 2 {
				sh.Restriction = append(sh.Restriction, x.low)
			}
		}
	}
	return sh
}
