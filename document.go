package kgagent

import "time"

// Document is one crawled page after content extraction: what the crawler
// hands to chunking, indexing and triple extraction.
type Document struct {
	Collection   string    `json:"collection"`
	URL          string    `json:"url"`           // normalised URL it was fetched from
	CanonicalURL string    `json:"canonical_url"` // <link rel=canonical>, else URL
	Title        string    `json:"title"`
	Lang         string    `json:"lang,omitempty"`
	ContentType  string    `json:"content_type"` // text/html, text/plain, text/markdown
	Sections     []Section `json:"sections"`     // in document order
	Links        []Link    `json:"links,omitempty"`
	ContentHash  string    `json:"content_hash"` // hex sha256 of the extracted text
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	FetchedAt    time.Time `json:"fetched_at"`
}

// Section is the content under one heading. The text before the first heading
// is a section with Level 0 and the page title as its heading.
type Section struct {
	Anchor      string   `json:"anchor,omitempty"` // id of the heading (or its enclosing section), without '#'
	Heading     string   `json:"heading"`
	Level       int      `json:"level"`        // 1..6 for h1..h6, 0 for the lead
	HeadingPath []string `json:"heading_path"` // headings from the page's top down to this one
	Blocks      []Block  `json:"blocks"`
}

// BlockKind says how a Block's text must be treated.
type BlockKind string

// Block kinds. Code and table rows must never be cut mid-line.
const (
	BlockParagraph BlockKind = "paragraph"
	BlockList      BlockKind = "list"
	BlockCode      BlockKind = "code"
	BlockTable     BlockKind = "table"
	BlockDefList   BlockKind = "deflist"
)

// Block is one piece of a section's content.
type Block struct {
	Kind  BlockKind    `json:"kind"`
	Text  string       `json:"text"`            // the block as plain text (code verbatim; table rows as " | "-joined lines)
	Rows  [][]string   `json:"rows,omitempty"`  // table cells, header row first
	Terms []Definition `json:"terms,omitempty"` // definition-list entries
	Lang  string       `json:"lang,omitempty"`  // code language when known
}

// Definition is one term of a definition list or glossary.
type Definition struct {
	Term       string `json:"term"`
	Definition string `json:"definition"`
}

// Link is an outgoing hyperlink with its text, resolved to an absolute URL.
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// Chunk is a bounded piece of a Document, the unit of indexing and retrieval.
type Chunk struct {
	ID          string   `json:"id"` // stable: hash of collection, document URL and ordinal
	Collection  string   `json:"collection"`
	DocURL      string   `json:"doc_url"`
	URL         string   `json:"url"` // DocURL#anchor of the section, or DocURL
	Title       string   `json:"title"`
	HeadingPath []string `json:"heading_path"`
	Anchor      string   `json:"anchor,omitempty"`
	Ordinal     int      `json:"ordinal"`
	Text        string   `json:"text"`
	Hash        string   `json:"hash"` // hex sha256 of Text
}
