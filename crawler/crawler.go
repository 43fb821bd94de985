// Package crawler fetches the pages of a DocumentCorpus (URLs, trailing-*
// globs, excludes) politely and safely with gocolly/colly, extracts their
// content with goquery into kgagent.Documents, and runs ingestion jobs that
// feed the corpus index and the triple graph incrementally.
//
// Entry points: Extract (one page to a Document); New(Config).Crawl (a
// Spec to per-URL outcomes: robots.txt, sitemaps, per-host limits, retries,
// SSRF guard, trap guards); NewIngester(IngesterConfig).Run (crawl, decide
// per page whether to put, touch or remove it, and hand that to a
// knowledge.Writer, which writes the corpus, the graph and the page state
// in its order; remove pages only when they are known to be gone);
// NewProgress (the CLI's progress bar). Page state lives in crawler/sqlite;
// jobs queue on NATS JetStream in crawler/natsjobs. See DECISIONS.md for
// the choices.
package crawler

import (
	"time"

	"github.com/kgagent/kgagent"
)

// Spec is a DocumentCorpus: what to crawl into which collection.
type Spec struct {
	Collection  string   `json:"collection" yaml:"collection"`
	URLs        []string `json:"urls" yaml:"urls"`                           // a trailing * crawls everything under the prefix
	Exclude     []string `json:"exclude,omitempty" yaml:"exclude,omitempty"` // wildcard patterns, e.g. *.pdf, */private/*
	BearerToken string   `json:"bearer_token,omitempty" yaml:"bearer_token,omitempty"`
	MaxPages    int      `json:"max_pages,omitempty" yaml:"max_pages,omitempty"`
	MaxDepth    int      `json:"max_depth,omitempty" yaml:"max_depth,omitempty"`
}

// JobState is where a job is in its life.
type JobState string

// Job states.
const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobCanceled  JobState = "canceled"
)

// Counters is the progress of an ingestion job.
type Counters struct {
	Queued    int64 `json:"queued"`
	Fetched   int64 `json:"fetched"`
	Skipped   int64 `json:"skipped"`
	Unchanged int64 `json:"unchanged"`
	Indexed   int64 `json:"indexed"`
	Removed   int64 `json:"removed"` // pages removed from the collection: see Ingester for when
	Kept      int64 `json:"kept"`    // known pages the run did not confirm and kept (set at the end; see JobStatus.KeptReason)
	Failed    int64 `json:"failed"`
	Chunks    int64 `json:"chunks"`
	Triples   int64 `json:"triples"`
	Bytes     int64 `json:"bytes"`
	Done      int64 `json:"done"` // queued URLs that have an outcome (for progress: Done of Queued)
}

// PageError is one page that failed, with a stable code and a reason.
type PageError struct {
	URL    string `json:"url"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// JobStatus is what GET /api/v1/jobs/{id} returns.
type JobStatus struct {
	ID         string      `json:"id"`
	Spec       Spec        `json:"spec"`
	State      JobState    `json:"state"`
	Counters   Counters    `json:"counters"`
	Errors     []PageError `json:"errors,omitempty"`  // capped; Counters.Failed has the total
	Skipped    []PageError `json:"skipped,omitempty"` // skipped pages with the reason, capped; Counters.Skipped has the total
	PagesPerS  float64     `json:"pages_per_second"`
	CreatedAt  time.Time   `json:"created_at"`
	StartedAt  *time.Time  `json:"started_at,omitempty"`
	FinishedAt *time.Time  `json:"finished_at,omitempty"`
	Message    string      `json:"message,omitempty"`
	// KeptReason says why the job kept the Counters.Kept pages it did not
	// confirm instead of removing them (Report.KeptReason).
	KeptReason string `json:"kept_reason,omitempty"`
}

// Validate checks that a Spec can run: a collection name users may give
// (kgagent.ValidateCollection; empty means the default), at least one URL, well-formed
// exclude patterns, no negative limits. It fails with EINVALID. Malformed
// URLs among good ones are not an error here: a job reports them per page
// and goes on with the rest.
func (s Spec) Validate() error {
	if s.Collection != "" {
		if err := kgagent.ValidateCollection(s.Collection); err != nil {
			return err
		}
	}
	if _, _, _, err := NewScope(s.URLs, s.Exclude); err != nil {
		return err
	}
	if s.MaxPages < 0 || s.MaxDepth < 0 {
		return kgagent.Errorf(kgagent.EINVALID, "max_pages and max_depth must not be negative")
	}
	return nil
}
