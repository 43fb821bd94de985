package extractive

import (
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// question is what Compose reads from the question.
// yesNoRe matches questions answered by yes or no.
var yesNoRe = regexp.MustCompile(`(?i)^\s*(does|do|is|are|can|could|will|should|has|have|was|were)\b`)

type question struct {
	terms []string // content terms (no stop or frame words)
	// answerType is the noun a what/which question asks for ("language"
	// in "What language is Lumen written in?"): the docs may state the
	// answer without the word.
	answerType string
	specific   []string // names the evidence must contain: proper nouns, identifiers
	kind       string   // the noun of a which/what question ("module"), or ""
	howTo      bool     // "how do I ...", "how to ..."
	yesNo      bool     // "Does Lumen run on Windows?"
	cue        int
	// action is the verb the question asks how to do ("upgrade" in "How
	// do I upgrade …"), lower-cased, or "" (actionWord).
	action string
	// idiom is the phrasal verb that says its action ("get rid of": action
	// "remove"), as written, lower case, or nil (idiomAction).
	idiom []string
	// object is the head of its action's object ("cluster" in "upgrade
	// my cluster from Lumen 2"), lower-cased, or "" (objectHead).
	object string
	// versions are the question's names written with a version ("Lumen
	// 2"): a passage naming that version is about what is asked.
	versions []string
	// compounds are its names of several words ("AWS Lambda"), which the
	// evidence must hold as phrases.
	compounds []string
	// seq is the Term of each of its words that may say what it is about
	// (text.QuestionWords), in order, repeats kept: the phrase a passage
	// may hold (phraseRun).
	seq []string
	// said maps each term to the word of the question it came from
	// ("backups" for "backup"), for abstentions that name it.
	said map[string]string
	// floor is the cosine from which a section found is close enough in
	// meaning to answer it (answerMin); 0 until the wording is judged:
	// semanticAnswerMin.
	floor float64
}

// filler are words that pad a question without saying what it is about
// and that text.IsQuestionStop lets through, since search still ranks by
// them ("since" in "since which version"): the answer writer neither
// requires them of the evidence nor names them in an abstention.
var filler = map[string]bool{"actually": true, "almost": true, "already": true, "although": true, "anyway": true, "enough": true,
	"etc": true, "even": true, "ever": true, "hence": true, "however": true, "instead": true, "lot": true,
	"lots": true, "many": true, "maybe": true, "much": true, "perhaps": true, "quite": true, "rather": true,
	"really": true, "since": true, "somehow": true, "still": true, "therefore": true, "though": true,
	"thus": true, "unless": true, "upon": true, "yet": true}

// namable reports whether a word of the question may be named in an
// abstention: not a stop word, filler word, digit run or fragment of one
// letter.
func namable(w string) bool {
	l := strings.ToLower(w)
	return len([]rune(l)) > 1 && !text.IsQuestionStop(l) && !filler[l] && !allDigits(l)
}

// frameWords are content words that frame a question rather than say what
// it is about.
var frameWords = map[string]bool{"way": true, "ways": true, "best": true, "possible": true, "something": true,
	"anything": true, "thing": true, "things": true, "able": true, "example": true, "examples": true, "go": true,
	"let": true, "know": true, "find": true, "look": true, "need": true, "recommend": true, "recommended": true,
	"good": true, "correct": true, "right": true, "proper": true, "properly": true, "kind": true, "sort": true,
	"accord": true, "according": true, "several": true, "various": true}

// howWords follow "how" to ask for an amount, not a topic.
var howWords = map[string]bool{"long": true, "many": true, "much": true, "often": true, "big": true, "large": true,
	"old": true, "far": true, "fast": true, "soon": true}

var howToRe = regexp.MustCompile(`(?i)^\s*(how\s+(do|can|should|would|could)\s+(i|you|we|one)\b|how\s+to\b|what\s+is\s+the\s+(best\s+)?way\s+to\b|what'?s\s+the\s+(best\s+)?way\s+to\b)`)

func analyse(q string) question {
	q = text.ExpandContractions(q)
	out := question{said: map[string]string{}, howTo: howToRe.MatchString(q), yesNo: yesNoRe.MatchString(q), cue: questionCue(q)}
	out.kind = entityType(q)
	out.action = actionWord(q)
	out.object = objectHead(q, out.action)
	if verb, words := idiomAction(q, out.action); verb != "" {
		out.action, out.idiom = verb, words
		out.object = objectHead(q, words[len(words)-1])
	}
	out.answerType = answerType(q)
	out.versions = versionedNames(q)
	out.compounds = compoundNames(q)
	skip := ""
	if f := strings.Fields(strings.ToLower(q)); len(f) > 1 {
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "how" && howWords[f[i+1]] {
				skip = text.Term(f[i+1])
				break
			}
		}
	}
	codes := statusCodes(q)
	seen := map[string]bool{}
	for _, w := range text.QuestionWords(q) {
		t := text.Term(w)
		out.seq = append(out.seq, t)
		if seen[t] || frameWords[w] || filler[w] || t == skip || w == out.kind || t == text.Term(out.kind) || allDigits(w) && !codes[w] {
			continue
		}
		seen[t] = true
		out.terms = append(out.terms, t)
	}
	for _, x := range text.Spans(q) {
		w := strings.ToLower(q[x[0]:x[1]])
		if t := text.Term(w); out.said[t] == "" && !text.IsQuestionStop(w) {
			out.said[t] = w
		}
	}
	// Proper nouns (capitalised inside the question) and identifiers name
	// something the answer must be about.
	fields := strings.Fields(q)
	for i := range fields {
		w, named := nameWord(fields, i)
		if w == "" {
			continue
		}
		if identRe.MatchString(w) && identRe.FindString(w) == w {
			out.specific = append(out.specific, w)
			continue
		}
		if named && !filler[strings.ToLower(w)] && !allUpperShort(w) {
			out.specific = append(out.specific, w)
		}
	}
	if reason := reasonPhrases(q); len(reason) > 0 {
		out.specific = dropReason(out.specific, reason)
		out.compounds = dropReason(out.compounds, reason)
	}
	return out
}

// nameTrim is the punctuation around a question's word.
const nameTrim = "?,.!;:\"'()`“”‘’"

// nameWord returns fields[i] without the punctuation around it, and
// whether it has a proper noun's shape: capitalised inside a sentence (not
// the question's first word, nor after ". ", ": ", "? " or "! "), of two
// letters or more, and no question stop word.
func nameWord(fields []string, i int) (string, bool) {
	w := strings.Trim(fields[i], nameTrim)
	r := []rune(w)
	sentenceStart := i == 0 || strings.ContainsAny(fields[i-1][len(fields[i-1])-1:], ".:?!")
	return w, len(r) > 1 && !sentenceStart && unicode.IsUpper(r[0]) && !text.IsQuestionStop(strings.ToLower(w))
}

func allDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}

// allUpperShort: acronyms of two or three letters (OS, API, CSV) are
// common words in docs, not names.
func allUpperShort(w string) bool {
	return len(w) <= 4 && strings.ToUpper(w) == w
}

// missing returns the question's names, and its terms when too many are
// absent, that the evidence does not contain: when any are returned the
// docs do not answer the question.
func (q question) missing(present termSet) []string {
	var out []string
	for _, w := range q.specific {
		for _, t := range text.AllTerms(w) {
			if !present.has(t) && !allDigits(t) {
				out = append(out, w)
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	var absent []string
	others := 0 // present terms other than names
	for _, t := range q.terms {
		if !present.has(t) {
			if t != q.answerType {
				absent = append(absent, t)
			}
			continue
		}
		if !q.isName(t) {
			others++
		}
	}
	if q.answerType != "" && !present.has(q.answerType) && others == 0 {
		// Only the name asked about is found, not what is asked of it.
		return []string{q.answerType}
	}
	// A question is about its terms: a short one about each of them; a
	// longer one may word one of them differently from the docs.
	if n := len(q.terms); len(absent) > 0 && (n <= 2 || 3*len(absent) > n) {
		return absent
	}
	return nil
}

// shown returns how an abstention names the question's terms and names
// ts: each term as the question wrote it, only namable words, each once.
func (q question) shown(ts []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range ts {
		w := t
		if s := q.said[t]; s != "" {
			w = s
		}
		if !namable(w) || seen[strings.ToLower(w)] {
			continue
		}
		seen[strings.ToLower(w)] = true
		out = append(out, w)
	}
	return out
}

// isName reports whether term t comes from one of the question's names.
func (q question) isName(t string) bool {
	for _, w := range q.specific {
		for _, x := range text.AllTerms(w) {
			if x == t {
				return true
			}
		}
	}
	return false
}

// answerType returns the first content term after "what"/"which" (and
// "is the", "are the"...) or "how much"/"how many": what the question asks
// for; "" when that word is a name of several terms ("what does
// lumen.connect do?": the evidence holds "lumen" and "connect", never
// "lumen.connect" as one term, so it asks of the name, not for a kind).
func answerType(q string) string {
	f := strings.Fields(strings.ToLower(q))
	start := -1
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "what" || f[i] == "which" || f[i] == "what's" {
			start = i + 1
		} else if f[i] == "how" && (f[i+1] == "much" || f[i+1] == "many") {
			start = i + 2
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 || start >= len(f) {
		return ""
	}
	for _, w := range f[start:] {
		w = strings.Trim(w, "?,.!'\":")
		if w == "" || text.IsQuestionStop(w) {
			continue
		}
		if len(text.AllTerms(w)) > 1 {
			return ""
		}
		return text.Term(w)
	}
	return ""
}

// unknown returns the question's words that no document of the
// collection contains (Evidence.Unknown, when the index could tell): its
// terms and names, not the noun it asks for ("language" in "What language
// is Lumen written in?"), which the docs may never use.
func (q question) unknown(evs []kgagent.Evidence, present termSet) []string {
	want := map[string]bool{}
	for _, t := range q.terms {
		want[t] = true
	}
	for _, w := range q.specific {
		for _, t := range text.AllTerms(w) {
			want[t] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, ev := range evs {
		for _, u := range ev.Unknown {
			t := text.Term(strings.ToLower(u))
			// The evidence may hold it in another form ("auth" for
			// "authentication", "macos" for "mac").
			if want[t] && t != q.answerType && namable(u) && !seen[t] && !present.has(t) {
				seen[t] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// termSet is the terms of the evidence, sorted for prefix lookups.
type termSet []string

func newTermSet(m map[string]bool) termSet {
	out := make(termSet, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// has reports whether t is in the set, or shares its stem with a term of
// it: one is a prefix of the other and the shorter has at least four
// letters ("handl" and "handler", "develop" and "developer").
func (s termSet) has(t string) bool {
	i := sort.SearchStrings(s, t)
	if i < len(s) && strings.HasPrefix(s[i], t) && (s[i] == t || len(t) >= 4 && len(s[i])-len(t) <= 3 || len(t) == 3 && len(s[i]) == 4) {
		return true
	}
	for k := len(t) - 1; k >= 4 && k >= len(t)-3; k-- {
		j := sort.SearchStrings(s, t[:k])
		if j < len(s) && s[j] == t[:k] {
			return true
		}
	}
	return false
}

// pageTerms is the terms of the page of p: the text, titles and headings
// of its sections found (p alone when it has no page URL).
func pageTerms(ps []*passage, p *passage) termSet {
	in := map[string]bool{}
	for _, o := range ps {
		if o != p && (o.DocURL == "" || o.DocURL != p.DocURL) {
			continue
		}
		for _, t := range o.textTerms() {
			in[t] = true
		}
		for t := range o.titles {
			in[t] = true
		}
	}
	return newTermSet(in)
}

// covered reports whether the page of the best sentence holds every name
// the question asks about and two thirds of the question's terms that the
// evidence holds at all (in its
// sections' text, titles or headings); terms absent from all the evidence
// were judged by missing.
func (q question) covered(ps []*passage, best *passage, present termSet) bool {
	page := pageTerms(ps, best)
	for _, w := range q.specific {
		for _, t := range text.AllTerms(w) {
			if !page.has(t) && !allDigits(t) {
				return false // the page is not about the name asked for
			}
		}
	}
	total, got := 0, 0
	for _, t := range q.terms {
		if !present.has(t) {
			continue
		}
		total++
		if page.has(t) {
			got++
		}
	}
	return 3*got >= 2*total
}

// entityKinds are the nouns of which/what questions answered by naming a
// page or section.
var entityKinds = map[string]bool{"module": true, "package": true, "library": true, "page": true, "section": true, "guide": true,
	"tool": true, "file": true, "api": true, "type": true, "object": true, "protocol": true, "plugin": true, "extension": true,
	"component": true, "service": true, "client": true, "driver": true, "format": true, "decorator": true, "keyword": true,
	"statement": true, "builtin": true, "constant": true, "property": true, "interface": true, "struct": true, "operator": true,
	"function": true, "method": true, "class": true, "attribute": true, "exception": true, "option": true, "parameter": true,
	"setting": true, "flag": true, "command": true, "variable": true, "field": true, "endpoint": true, "argument": true}

// identKinds are the entity kinds named by an identifier (a heading such as
// json.dumps) rather than by a page title.
var identKinds = map[string]bool{"function": true, "method": true, "class": true, "attribute": true, "exception": true, "option": true,
	"parameter": true, "setting": true, "flag": true, "command": true, "variable": true, "field": true, "endpoint": true, "argument": true,
	"decorator": true, "constant": true, "property": true}

// entityType returns the noun of a which/what question asking for one
// thing: "module" in "Which module parses JSON?" and in "Which Python
// module should I use ...", or "".
func entityType(q string) string {
	f := strings.Fields(strings.ToLower(q))
	if len(f) < 2 || (f[0] != "which" && f[0] != "what") {
		return ""
	}
	for i := 1; i < len(f) && i <= 3; i++ {
		w := strings.Trim(f[i], "?,.!'\":")
		// "class", "modules", "classes" (not "clas" or "classe")
		for _, k := range []string{w, strings.TrimSuffix(w, "s"), strings.TrimSuffix(w, "es")} {
			if entityKinds[k] {
				return k
			}
		}
	}
	return ""
}

// identRe matches code identifiers: dotted names (json.dumps), calls
// (open()), snake_case names and --flags.
var identRe = regexp.MustCompile(`(?:--[a-z][\w-]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[A-Za-z_]\w*\(\)|[a-z]+_[a-z_]+)`)

// subject names what a section is about, with a short description: the
// heading for identifier kinds (functions, options...); else the most
// specific heading shaped "name — description" (a module's section); else
// the page's top heading or title up to its dash ("json" and "JSON encoder
// and decoder").
func subject(p *passage, best string, kind string) (name, desc string) {
	if p.fact {
		return "", ""
	}
	heading := ""
	if n := len(p.HeadingPath); n > 1 {
		heading = strings.TrimSpace(p.HeadingPath[n-1])
	}
	if identKinds[kind] {
		if n := entryName(p); n != "" {
			return n, "" // the section declares it: "bin(x)" declares bin()
		}
		if heading != "" && identRe.MatchString(heading) {
			return identRe.FindString(heading), ""
		}
		// A page headed with what it declares ("Class ConfigFile",
		// "Interface Flow.Subscription<T>") is about that, not about a
		// name its sentence mentions.
		if d := declared(p); d != "" {
			return d, ""
		}
		if id := identRe.FindString(best); id != "" {
			return id, ""
		}
	}
	if n := anchorName(p, kind); n != "" {
		// The section declares the thing: its anchor is "<kind>-<name>"
		// (Sphinx's "module-json"); the page or heading describes it.
		_, d := dashed(heading)
		if d == "" {
			for _, h := range p.HeadingPath {
				if hn, hd := dashed(h); hn == n {
					d = hd
				}
			}
		}
		return n, d
	}
	for i := len(p.HeadingPath) - 1; i >= 0; i-- {
		if n, d := dashed(p.HeadingPath[i]); n != "" && len(strings.Fields(n)) == 1 {
			return n, d
		}
	}
	top := p.Title
	if len(p.HeadingPath) > 0 && p.HeadingPath[0] != "" {
		top = p.HeadingPath[0]
	}
	if n, d := dashed(top); n != "" {
		return n, d
	}
	top = strings.TrimSpace(top)
	if top == "" || len(top) > 60 {
		return "", ""
	}
	return top, ""
}

// declaredRe matches a page's top heading that declares one class-like
// thing, as Javadoc heads a type's page: "Class ConfigFile", "Interface
// Flow.Subscription<T>", "Enum Class RoundingMode", "Annotation Interface
// Target", "Record Class Foo"; its group is the thing's name.
var declaredRe = regexp.MustCompile(`^(?:(?:Enum|Record|Annotation|Exception)\s+)?(?:Class|Interface|Enum|Record|Exception)\s+([A-Za-z_][\w.]*)(?:<.*>)?$`)

// declared returns the top heading of p's page when it declares one
// class-like thing (declaredRe) and the page's title starts with that
// thing's name alone, as Javadoc titles a type's page ("ButtonUI (Java SE
// 17 & JDK 17)" under "Class ButtonUI"); else "". A page headed with a
// kind word and a word ("Exception Handling", "Enum HOWTO" in the Python
// docs) is titled with both, and declares nothing.
func declared(p *passage) string {
	if len(p.HeadingPath) == 0 {
		return ""
	}
	top := strings.TrimSpace(p.HeadingPath[0])
	m := declaredRe.FindStringSubmatch(top)
	if m == nil || !startsWithName(p.Title, m[1]) {
		return ""
	}
	return top
}

// startsWithName reports whether s starts with name as a whole name: not
// followed by a letter, digit, underscore or dot.
func startsWithName(s, name string) bool {
	if !strings.HasPrefix(s, name) {
		return false
	}
	rest := s[len(name):]
	return rest == "" || !isWordByte(rest[0]) && rest[0] != '.'
}

// anchorName returns the name in a section anchor of the form
// "<kind>-<name>" ("module-multiprocessing.pool" for kind module), or "".
func anchorName(p *passage, kind string) string {
	if kind == "" || p.fact {
		return ""
	}
	_, anchor, ok := strings.Cut(p.URL, "#")
	if !ok {
		return ""
	}
	name, ok := strings.CutPrefix(anchor, kind+"-")
	if !ok || name == "" || strings.ContainsAny(name, " /?&") {
		return ""
	}
	// Not a heading's own anchor: "module-contents" is the slug of the
	// heading "Module Contents", not a declaration.
	for _, h := range p.HeadingPath {
		if slug(h) == strings.ToLower(anchor) {
			return ""
		}
	}
	return name
}

// slug is a heading as an anchor: lower case, runs of other characters
// than letters and digits as one "-".
func slug(h string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(sectionNumber.ReplaceAllString(strings.TrimSpace(h), "")) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// sectionNumber matches the number a heading starts with ("9.28. ").
var sectionNumber = regexp.MustCompile(`^\d+(\.\d+)*\.?\s+`)

// dashed splits "name — description — site" into name and description
// (a leading section number dropped).
func dashed(s string) (name, desc string) {
	parts := []string{}
	rest := sectionNumber.ReplaceAllString(strings.TrimSpace(s), "")
	for rest != "" {
		cut := -1
		sepLen := 0
		for _, sep := range []string{" — ", " – ", " - ", " | "} {
			if i := strings.Index(rest, sep); i > 0 && (cut < 0 || i < cut) {
				cut, sepLen = i, len(sep)
			}
		}
		if cut < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, strings.TrimSpace(rest[:cut]))
		rest = strings.TrimSpace(rest[cut+sepLen:])
	}
	if len(parts) < 2 || len(parts[0]) > 60 {
		return "", ""
	}
	return parts[0], parts[1]
}

// Question cues: what kind of text answers the question.
const (
	cueNone   = iota
	cueNumber // how many / how long / default / port / size ...: a number
	cuePlace  // where: a path or URL
)

var numberWords = map[string]bool{"many": true, "much": true, "long": true, "default": true, "port": true, "size": true,
	"limit": true, "maximum": true, "minimum": true, "max": true, "min": true, "timeout": true, "version": true,
	"release": true, "when": true, "number": true, "often": true, "big": true, "large": true, "old": true, "expire": true}

func questionCue(q string) int {
	f := strings.Fields(strings.ToLower(q))
	if len(f) > 0 && f[0] == "where" {
		return cuePlace
	}
	for _, w := range f {
		if numberWords[strings.Trim(w, "?,.!")] {
			return cueNumber
		}
	}
	return cueNone
}

func scoreSentence(s *sentence, weights map[string]float64, cue int) float64 {
	if len(s.terms) == 0 {
		return 0
	}
	score := 0.0
	matched := map[string]bool{}
	first, last := -1, -1
	for i, t := range s.terms {
		if w, ok := weights[t]; ok {
			if !matched[t] {
				score += w
				matched[t] = true
			}
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	titleHits := 0.0
	for t, w := range weights {
		if s.p.titles[t] && !matched[t] {
			titleHits += w
		}
	}
	if len(matched) == 0 && titleHits == 0 {
		return 0
	}
	if len(matched) >= 2 {
		span := float64(last - first + 1)
		score *= 1 + 0.5*float64(len(matched))/span
	}
	score += 0.5 * titleHits
	if n := len(s.terms); n > 40 {
		score /= 1 + float64(n-40)/40
	} else if n < 4 && titleHits == 0 {
		score *= 0.6
	}
	if s.p.fact {
		score *= 0.8
	}
	if s.p.LinkHeavy {
		score *= 0.5
	}
	switch {
	case cue == cueNumber && strings.ContainsAny(s.text, "0123456789"):
		score *= 1.25
	case cue == cuePlace && strings.ContainsAny(s.text, "/\\"):
		score *= 1.25
	}
	if commandLike(s.text) {
		score *= 0.6
	}
	if s.pos == 0 && titleHits > 0 {
		// The section's title matches the question (FAQ style): its first
		// sentence usually answers it.
		score *= 1.2
	}
	// Retrieval's order is a strong signal: the best-ranked sections lead.
	return score / (1 + 0.15*float64(s.p.rank)) / (1 + 0.02*float64(s.pos))
}
