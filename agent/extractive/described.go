package extractive

import "context"

// Which API entry leads a how-to answer, by what it does. A question in
// users' words ("get just the file name from a full path") shares few
// words with the entry that does it (os.path.basename: "Return the base
// name of pathname path"), so its section's best sentence often scores
// under entryShare of the best sentence found, and the entry could not
// lead; and the search's cosine of a whole section (its code, notes and
// parameters) says less about what the entry does than its opening
// sentence. So when the semantic model is at hand (Config.Embed) and the
// search ranked by meaning, each entry section found is described by its
// opening sentence (what the entry does: "Delete an entire directory
// tree"), the sentences are embedded with the question in one call, and
// the entry whose description is closest leads (closerEntry): an entry
// whose description's cosine reaches describedMin needs its best sentence
// to hold only describedShare of the best sentence's score, not entryShare
// (the question's words still count: describedTermWeight). Without
// the model or semantic ranking (a lexical corpus, OpenJDK), nothing
// changes: entryShare and the sections' cosines decide as before.

// describedShare is how good, against the best sentence of all, an API
// entry's best sentence must be for the entry to lead when its description
// is compared in meaning with the question. Chosen on half 0
// (crc32(question) mod 2) of bench/natural_pydocs and howto_pydocs over
// replayed evidence (first sentence names the function, natural half 0:
// 0.5 0.299, 0.3 0.330, 0.15 0.371, 0.01 0.371); half 1 confirmed it (0.341
// → 0.375).
const describedShare = 0.15

// describedMin is the cosine of the question with an entry's description
// from which the entry may lead although its best sentence holds less than
// entryShare of the best sentence's score. A description further in
// meaning is no evidence that the entry does what is asked: on the demo
// site "How do I write points over the HTTP API?" was answered with the
// Python client's Client.write_batch (cosine 0.25) and "What is a
// measurement?" with Client.write (0.23) in place of the sections that
// answer them (lumen_demo_questions, half 1, seen in the first full run).
// On half 0 of bench/natural_pydocs, 0.35 and 0.40 name the function first
// as often as no floor (0.371), 0.45 0.361, 0.5 0.351; 0.35 is
// semanticAnswerMin's round figure.
const describedMin = 0.35

// describedTermWeight weighs an entry's best sentence's share of the best
// score (at most 1) against its description's cosine: the question's own
// words break near-ties in meaning (half 0: 0 0.371, 0.05 0.371, 0.1 0.371,
// 0.2 0.340; half 1 0.364 / 0.375 / 0.364 / 0.364).
const describedTermWeight = 0.05

// describe sets p.described, for each API entry section found (entryName,
// not a link list) that has an opening sentence, to the cosine of the
// question with that sentence, by the semantic model (one Embed call). It
// does nothing without the model, when the search did not rank by meaning
// (every section's cosine 0) or when the model fails (the answer is then
// written as without it).
func describe(ctx context.Context, question string, ps []*passage, sents []*sentence, embed func(context.Context, []string) ([][]float32, error)) {
	if embed == nil || semanticBest(ps) <= 0 {
		return
	}
	texts := []string{question}
	var which []*passage
	for _, p := range ps {
		if !p.section() || entryName(p) == "" {
			continue
		}
		if s := opening(p, sents); s != nil {
			texts = append(texts, s.text)
			which = append(which, p)
		}
	}
	if len(which) == 0 {
		return
	}
	vs, err := embed(ctx, texts)
	if err != nil || len(vs) != len(texts) {
		return
	}
	for i, p := range which {
		p.described = dot32(vs[0], vs[i+1])
	}
}

// opening returns the first sentence of p that says something: not its
// bare heading, not a version note; nil when it has none.
func opening(p *passage, sents []*sentence) *sentence {
	for _, s := range sents {
		if s.p == p && !bare(s) && !versionNote(s.text) {
			return s
		}
	}
	return nil
}

// closeness is how well an entry's section answers the question when its
// description was compared in meaning (p.described != 0): that cosine,
// plus describedTermWeight times its best sentence's share of the best
// score.
func closeness(s *sentence, best float64) float64 {
	share := 0.0
	if best > 0 {
		share = min(1, s.score/best)
	}
	return s.p.described + describedTermWeight*share
}
