package kgagent

import (
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// Evidence is what retrieval found for one query: document passages in
// retrieval's order (best first) and graph facts, each tied to the section
// it came from. It is the structured form of a search's observation: the
// built-in funcs return it beside their text, and the built-in answerer
// reads it instead of parsing the text back.
//
// N numbers sources once: a passage and a fact from the same section share
// a number, and within an agent run the numbers are the run's citation
// numbers, so "[n]" in an answer names the same source everywhere.
type Evidence struct {
	Query    string            `json:"query"`
	Passages []EvidencePassage `json:"passages"`
	Facts    []EvidenceFact    `json:"facts,omitempty"`
	// List is the graph's structured answer when the query has a shape
	// the graph answers outright (a list, relation, attribute or
	// comparison question); nil otherwise.
	List *EvidenceList `json:"list,omitempty"`
	// Unknown lists the query's words that no document of the collection
	// contains, when the index can tell: the docs never mention them.
	Unknown []string `json:"unknown,omitempty"`
}

// EvidencePassage is one retrieved section of a page.
type EvidencePassage struct {
	N           int      `json:"n"`
	URL         string   `json:"url"`     // page URL with the section anchor
	DocURL      string   `json:"doc_url"` // the page
	Title       string   `json:"title"`   // the page title
	HeadingPath []string `json:"heading_path,omitempty"`
	Text        string   `json:"text"`
	Score       float64  `json:"score"` // retrieval score after shape weighting; higher is better
	// LinkHeavy marks a passage that is mostly a list of links or names
	// (an index, a table of contents): it was ranked down for its shape.
	LinkHeavy bool `json:"link_heavy,omitempty"`
	// Semantic is the cosine of the passage's semantic vector with the
	// query's, when the search ranked by a semantic model (0 otherwise);
	// not on the wire.
	Semantic float64 `json:"-"`
	// SourceOnly marks a passage kept only so that the evidence names
	// every one of the search's first pages (knowledge.Retriever): it is a
	// source of the answer, but the built-in answerer does not compose
	// from it; not on the wire.
	SourceOnly bool `json:"-"`
}

// EvidenceFact is one graph fact with the section that states it.
type EvidenceFact struct {
	N         int     `json:"n"`
	Triple    Triple  `json:"triple"`
	Text      string  `json:"text"`       // the triple as a sentence
	SourceURL string  `json:"source_url"` // page URL with the section anchor
	Score     float64 `json:"score"`
}

// Question shapes the graph answers outright (EvidenceList.Shape).
const (
	ShapeList       = "list"       // which functions, classes, exceptions, methods X provides
	ShapeRelation   = "relation"   // what X raises, accepts, is a subclass of, which module it is in
	ShapeAttribute  = "attribute"  // a default value, the version X was added in or deprecated since
	ShapeComparison = "comparison" // the difference between A and B
)

// EvidenceList is the graph's answer to a shaped question, read from its
// triples: the entity asked about, what was asked of it, and one item per
// answer (a function, an exception, a value), each with the section that
// states it. The answerer writes a one-line lead citing the subject's
// section, then one line per item citing the item's.
type EvidenceList struct {
	Shape string `json:"shape"` // ShapeList, ShapeRelation, ShapeAttribute or ShapeComparison
	// Subject is the entity asked about (shutil, json.loads); for a
	// comparison, the first of the two.
	Subject string `json:"subject"`
	// Other is the second entity of a comparison.
	Other string `json:"other,omitempty"`
	// Relation is what was asked: for a list the kind of its items
	// (function, class, exception, method); else raises, parameters,
	// default, added_in, deprecated_since, subclass_of, module, compare.
	Relation string `json:"relation"`
	// Param is the parameter a default-value question names.
	Param string `json:"param,omitempty"`
	// Restriction is the question's narrowing words ("copying files"),
	// when the items were filtered by them.
	Restriction string `json:"restriction,omitempty"`
	// N and SourceURL are the subject's own section, which the lead cites.
	N         int    `json:"n"`
	SourceURL string `json:"source_url"`
	// Summary is the subject's one-line description, when the graph has one.
	Summary string         `json:"summary,omitempty"`
	Items   []EvidenceItem `json:"items"`
	// More counts the items left out beyond the answer's limit.
	More int `json:"more,omitempty"`
}

// EvidenceItem is one item of an EvidenceList.
type EvidenceItem struct {
	N         int    `json:"n"`
	Name      string `json:"name"`           // the item: a qualified name or a value
	Kind      string `json:"kind,omitempty"` // its entity type (function, exception, …)
	Text      string `json:"text,omitempty"` // its one-line description
	SourceURL string `json:"source_url"`     // the section that states it
	// Of names the compared entity an item belongs to (comparisons).
	Of string `json:"of,omitempty"`
}

// Source is the list subject's section as a cited source.
func (l EvidenceList) Source() Source {
	return Source{URL: l.SourceURL, Title: l.Subject, Score: 1, Snippet: Snippet(l.Summary, 200)}
}

// Source is the item's section as a cited source.
func (it EvidenceItem) Source() Source {
	return Source{URL: it.SourceURL, Title: it.Name, Score: 1, Snippet: Snippet(it.Text, 200)}
}

// Heading is the passage's most specific heading, or the title.
func (p EvidencePassage) Heading() string {
	if n := len(p.HeadingPath); n > 0 && p.HeadingPath[n-1] != "" {
		return p.HeadingPath[n-1]
	}
	return p.Title
}

// Source is the passage as a cited source.
func (p EvidencePassage) Source() Source {
	return Source{URL: p.URL, Title: p.Title, Score: p.Score, HeadingPath: p.HeadingPath, Snippet: Snippet(p.Text, 200)}
}

// Source is the fact's section as a cited source.
func (f EvidenceFact) Source() Source {
	return Source{URL: f.SourceURL, Title: f.Triple.Subject.Name, Score: f.Score, Snippet: f.Text}
}

// Snippet returns s with its white space collapsed, cut at a word boundary
// to at most about n bytes with "…" appended when cut. Only the words up to
// the cut are read (a passage's snippet was its whole text collapsed).
func Snippet(s string, n int) string {
	var b strings.Builder
	b.Grow(min(len(s), n+16))
	for f := range strings.FieldsSeq(s) {
		if b.Len() > n {
			break // the cut and Clip read s[:n+1] at most
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	s = b.String()
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return text.Clip(s, cut) + "…"
}
