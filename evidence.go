package kgagent

import "strings"

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
}

// EvidenceFact is one graph fact with the section that states it.
type EvidenceFact struct {
	N         int     `json:"n"`
	Triple    Triple  `json:"triple"`
	Text      string  `json:"text"`       // the triple as a sentence
	SourceURL string  `json:"source_url"` // page URL with the section anchor
	Score     float64 `json:"score"`
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
// to at most about n bytes with "…" appended when cut.
func Snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	for cut > 0 && cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
