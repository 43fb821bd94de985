package extractive

// A question in users' words holds the docs' words, but seldom two thirds
// of them on one page ("keep a dictionary on disk between runs of my
// program": the shelve page says "persistent dictionary", "file"), so no
// page covers it and the answer was an abstention although the search,
// ranking by meaning, put the right section first. When the question names
// nothing (no proper noun or identifier) and every word of it is in the
// evidence, the section the semantic model finds closest may answer it,
// when the model is sure enough: its cosine is at least semanticLeadMin.

// semanticLeadMin is the cosine of the question's and a passage's semantic
// vectors (all-MiniLM-L6-v2) from which the passage may answer a question
// no page covers: a round figure just below the 90th percentile of the
// best passage's cosine for questions the docs cannot answer (0.623 on
// bench/unanswerable_pydocs.jsonl, corpus/minilm/DECISIONS.md). So about
// one such question in ten or more reaches it by cosine alone; the rule's
// other conditions (the question names nothing, every word of it is in the
// evidence) stop most of them.
const semanticLeadMin = 0.6

// semanticLead returns the best sentence of the passage whose semantic
// cosine with the question is highest, when it is at least
// semanticLeadMin, the question names nothing and the sentence holds a
// term of the question; nil otherwise (and when the search did not rank by
// meaning: every cosine is 0).
func semanticLead(order []*sentence, ps []*passage, q question) *sentence {
	if len(q.specific) > 0 {
		return nil
	}
	var top *passage
	for _, p := range ps {
		if !p.fact && !p.LinkHeavy && (top == nil || p.Semantic > top.Semantic) {
			top = p
		}
	}
	if top == nil || top.Semantic < semanticLeadMin {
		return nil
	}
	for _, s := range order {
		if s.score <= 0 {
			break
		}
		if s.p == top && !bare(s) {
			return s
		}
	}
	return nil
}
