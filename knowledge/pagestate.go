package knowledge

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// PageState is what the knowledge keeps about one crawled page between
// crawls: the validators and content hash a re-crawl compares against, and
// the page's in-corpus links (followed when it answers 304). A page has a
// state only once its chunks, triples and entity index entries are all
// written (see Writer).
type PageState struct {
	Collection   string    `json:"collection"`
	URL          string    `json:"url"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	ContentHash  string    `json:"content_hash"`
	LastSeen     time.Time `json:"last_seen"`
	Links        []string  `json:"links,omitempty"` // in-corpus links of the page, followed when it answers 304
}

// PageStates keeps PageStates per collection and URL (crawler/sqlite, and
// MemoryStates). ListPages returns the pages of a collection (none, not an
// error, for an unknown one); PutPage inserts or replaces; DeletePage of an
// unknown page is not an error; DeleteCollection drops all pages of a
// collection.
type PageStates interface {
	ListPages(ctx context.Context, collection string) ([]PageState, error)
	PutPage(ctx context.Context, st PageState) error
	DeletePage(ctx context.Context, collection, url string) error
	DeleteCollection(ctx context.Context, collection string) error
}

// MemoryStates is PageStates in memory, for tests and dry runs. It also
// keeps the complete specs of a collection (the crawler's SpecLog), which
// DeleteCollection forgets with the pages.
type MemoryStates struct {
	mu    sync.Mutex
	m     map[string]map[string]PageState
	specs map[string][]string
}

// NewMemoryStates returns an empty MemoryStates.
func NewMemoryStates() *MemoryStates {
	return &MemoryStates{m: map[string]map[string]PageState{}, specs: map[string][]string{}}
}

// CompleteSpecs lists the spec keys recorded for collection (crawler.SpecLog).
func (s *MemoryStates) CompleteSpecs(_ context.Context, collection string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.specs[collection]), nil
}

// AddCompleteSpec records a spec key for collection (crawler.SpecLog).
func (s *MemoryStates) AddCompleteSpec(_ context.Context, collection, key string) error {
	if collection == "" || key == "" {
		return kgagent.Errorf(kgagent.EINVALID, "a complete spec needs a collection and a key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.specs[collection], key) {
		s.specs[collection] = append(s.specs[collection], key)
	}
	return nil
}

// ListPages implements PageStates.
func (s *MemoryStates) ListPages(_ context.Context, collection string) ([]PageState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PageState, 0, len(s.m[collection]))
	for _, st := range s.m[collection] {
		out = append(out, st)
	}
	return out, nil
}

// PutPage implements PageStates.
func (s *MemoryStates) PutPage(_ context.Context, st PageState) error {
	if st.Collection == "" || st.URL == "" {
		return kgagent.Errorf(kgagent.EINVALID, "page state needs a collection and a URL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[st.Collection] == nil {
		s.m[st.Collection] = map[string]PageState{}
	}
	st.Links = append([]string(nil), st.Links...)
	s.m[st.Collection][st.URL] = st
	return nil
}

// DeletePage implements PageStates.
func (s *MemoryStates) DeletePage(_ context.Context, collection, u string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m[collection], u)
	return nil
}

// DeleteCollection implements PageStates; it forgets the collection's
// complete specs too.
func (s *MemoryStates) DeleteCollection(_ context.Context, collection string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, collection)
	delete(s.specs, collection)
	return nil
}

var _ PageStates = (*MemoryStates)(nil)
