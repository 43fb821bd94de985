package kgagent

// Entity is a node of the knowledge graph.
type Entity struct {
	ID   string `json:"id"`   // stable: derived from the normalised name
	Name string `json:"name"` // display name
	Type string `json:"type,omitempty"`
}

// Triple is one (subject, predicate, object) fact with its provenance. The
// object is an entity, or a literal when Literal is set.
type Triple struct {
	Collection string `json:"collection"`
	Subject    Entity `json:"s"`
	Predicate  string `json:"p"`
	Object     Entity `json:"o"`
	Literal    string `json:"literal,omitempty"` // set for literal objects; Object is then zero
	ChunkID    string `json:"chunk_id,omitempty"`
	DocURL     string `json:"doc_url"`
	SourceURL  string `json:"source_url"` // page URL with the section anchor
}
