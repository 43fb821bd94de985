// Package text is kgagent's one definition of text analysis: what a word
// is (Spans, Tokens, contractions written out), how a word folds to its
// term (one stemmer, suffixTable, of which Stem, Singular for entity names,
// LightStem and PrefixStem are strengths), which words carry no meaning
// (IsStopWord for every text, IsFiller for questions), the terms of a
// document (Terms) and of a question (QuestionTerms), BM25 and cosine
// scoring, and cutting text to a length (Clip, Truncate, CutWords).
//
// Search (corpus and its adapters), the vocabulary check, question analysis
// (graphrag, the agent's router) and the answer writer (agent/extractive)
// all read text through it, so one question is tokenised one way
// everywhere and a fix lands in one place.
//
// It is internal: the rules are not an API for other modules. Stored data
// depends on them — the lexical embedder's vectors (named "lexical-v1") and
// Qdrant's sparse BM25 vectors are written from Stem and the stop list —
// so those two rules change only together with a new embedder name or a
// re-ingest, which is a decision for this module alone.
package text
