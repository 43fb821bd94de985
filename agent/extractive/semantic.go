package extractive

import "sort"

// Abstention by meaning. Whether the sections found answer a question is
// judged by its words and by its meaning together:
//
//   - Words: a name the question asks about (a proper noun, an identifier)
//     that the evidence lacks, or a word no document of the collection
//     contains (Evidence.Unknown), means the docs do not answer it.
//   - Meaning: when the search ranked by a semantic model, the closest
//     section's cosine with the question (semanticBest) says whether any
//     section found is about it. Below semanticAnswerMin none is, and the
//     answer is the not-found abstention even when a page holds the
//     question's words ("configure nginx as a reverse proxy": the urllib
//     proxy handlers hold "configure" and "proxy").
//
// A question in users' words holds the docs' words, but seldom two thirds
// of them on one page ("make a scratch folder that is deleted
// automatically": the tempfile page says "temporary directory",
// "removed"), and some of its words are in no section found at all
// ("scratch"). Those words were enough to abstain before, although the
// search, ranking by meaning, had found the right section. Now, when the
// question names nothing and the collection holds every word of it, words
// missing from the sections found do not decide: a section close enough in
// meaning (semanticAnswerMin) answers, the one that covers the most of the
// question's words or else the semantic model's closest (semanticLead).
//
// How close is close enough depends on the question's words the
// collection lacks (Evidence.Unknown), weighed by kind: a name is its
// subject (abstain); a rare word no close section says is its subject when
// it is one of few terms, wording when one of many (fewRare); everyday
// words are wording, and a question in them is further in meaning from the
// docs' sentences, so their share of its terms lowers the cosine it needs
// (answerMin). Words the collection holds but the sections found lack
// decide nothing while a section is close enough (meaningDecides).

// semanticAnswerMin is the cosine of the question's and a passage's
// semantic vectors (all-MiniLM-L6-v2) below which no passage found
// answers the question, and from which the closest passage may answer a
// question whose words no page covers. Chosen on half 0 (crc32(question)
// mod 2) of bench/natural_pydocs, howto_pydocs, pydocs_questions,
// unanswerable_pydocs and lumen_demo_questions: every answerable
// question's best passage reaches 0.366 or more (a users'-words question
// whose words no page holds), "configure nginx as a reverse proxy", which
// the docs cannot answer, only 0.337; 0.35 is the round figure between.
// Half 1 confirmed it: its answerable questions reach 0.398 or more, its
// unanswerable ones that name nothing the docs lack 0.414 or more.
const semanticAnswerMin = 0.35

// section reports whether p is a section found whose meaning counts: not a
// graph fact, not a link list.
func (p *passage) section() bool { return !p.fact && !p.LinkHeavy }

// semanticBest returns the highest semantic cosine of a section found, 0
// when the search did not rank by meaning.
func semanticBest(ps []*passage) float64 {
	best := 0.0
	for _, p := range ps {
		if p.section() && p.Semantic > best {
			best = p.Semantic
		}
	}
	return best
}

// farInMeaning reports whether the search ranked every section it found
// by meaning and none is close enough to the question to answer it (a
// cosine may be negative: then semanticBest is 0, and none is close). While
// the semantic pass is still embedding the collection, a section without a
// vector (cosine 0) may be the one that answers: then meaning does not
// decide.
func (q question) farInMeaning(ps []*passage) bool {
	sections := 0
	for _, p := range ps {
		if !p.section() {
			continue
		}
		if p.Semantic == 0 {
			return false
		}
		sections++
	}
	return sections > 0 && semanticBest(ps) < q.closeMin()
}

// meaningDecides reports whether the question's words missing from the
// sections found may be left to the semantic model: the search ranked by
// meaning and found a section close enough, and the question names
// nothing. (None of the missing words is one the collection lacks: those
// were judged by unknown before.)
func (q question) meaningDecides(ps []*passage) bool {
	return len(q.specific) == 0 && semanticBest(ps) >= q.closeMin()
}

// semanticLead returns the best sentence (one holding a term of the
// question, not a bare heading) of the passage closest in meaning to the
// question that has one, among the passages whose cosine is at least
// semanticAnswerMin; nil when the question names something, when none has
// one, and when the search did not rank by meaning (every cosine is 0).
func semanticLead(order []*sentence, ps []*passage, q question) *sentence {
	if len(q.specific) > 0 {
		return nil
	}
	var near []*passage
	for _, p := range ps {
		if p.section() && p.Semantic >= q.closeMin() {
			near = append(near, p)
		}
	}
	sort.SliceStable(near, func(i, j int) bool { return near[i].Semantic > near[j].Semantic })
	for _, top := range near {
		for _, s := range order {
			if s.score <= 0 {
				break
			}
			if s.p == top && !bare(s) {
				return s
			}
		}
	}
	return nil
}

// everydayDiscount is how far below semanticAnswerMin the closest
// section's cosine may be for a question all of whose words the
// collection lacks are everyday ones, per share of its terms that are
// such words: answerMin. rareShareMax is the share of a question's terms
// below which rare words the collection lacks, said by no close section in
// other words, are its wording rather than its subject: fewRare. Both were
// chosen on half 0; see answerMin.
const (
	everydayDiscount = 0.3
	rareShareMax     = 0.15
)

// answerMin is the cosine from which a section found is close enough in
// meaning to answer q, when everyday of its words are everyday words the
// collection lacks, or rare ones a section found says in other words
// (wording, covered). Such a question is in a user's words, not
// the docs', and the semantic model puts it further from the section that
// answers than a question in the docs' words: "we're stuck on python 3.8
// at work, will the python library still work for us?" reaches 0.336 with
// the Python client's "It supports Python 3.9 and later", "other computers
// on my network can't reach the database …" 0.291 with the bind address
// setting. The share of such words lowers the floor: semanticAnswerMin −
// everydayDiscount × share. Chosen on half 0 (crc32(question) mod 2) of
// every bench set, answerable and unanswerable, Lumen and Python docs: the
// answerable questions whose everyday words the collection lacks need a
// discount of 0.20 to 0.07 per share, the one unanswerable question of that
// kind below semanticAnswerMin ("Who won the 2022 football World Cup?",
// 0.251, a quarter of its terms) is answered from 0.40; 0.3 is between.
// A word that is not everyday still needs a close section (semanticAnswerMin
// and coverMin), or a share below rareShareMax.
func (q question) answerMin(everyday int) float64 {
	if everyday == 0 || len(q.terms) == 0 {
		return semanticAnswerMin
	}
	return semanticAnswerMin - everydayDiscount*float64(everyday)/float64(len(q.terms))
}

// closeMin is the cosine from which a section found is close enough in
// meaning to answer q: answerMin, once its wording was judged.
func (q question) closeMin() float64 {
	if q.floor > 0 {
		return q.floor
	}
	return semanticAnswerMin
}

// fewRare reports whether lacking rare words of q the collection lacks
// (not everyday words, not names) that no close section says in other
// words (coverMin) are few enough among its terms to be its wording: a
// long question in a user's words may hold one ("my big monthly report
// query dies after half a minute with a gateway timeout error": one of ten
// terms), an unanswerable question's rare word is its subject, one of
// three to six terms ("How do I publish a package to npm?",
// "… pytest fixture across modules with conftest?"). Chosen on half 0
// as answerMin: answerable questions' shares 0.10 and 0.11, unanswerable
// ones' 0.17 and more; 0.15 is between.
func (q question) fewRare(lacking int) bool {
	return lacking == 0 || len(q.terms) > 0 && float64(lacking)/float64(len(q.terms)) < rareShareMax
}
