package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newWorkerCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run ingestion jobs and answer NATS requests, without HTTP",
		Long:  "worker connects to NATS (--nats-url, or an in-process server), consumes ingestion jobs from JetStream\nand answers kgagent.request.<service> in a queue group, so workers scale out.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), *cfg, stdout, stderr)
		},
	}
}

func newIngestCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var o ingestOptions
	c := &cobra.Command{
		Use:   "ingest [flags] URL...",
		Short: "Crawl and index a DocumentCorpus (URLs; a trailing * crawls everything under the prefix)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd.Context(), *cfg, o, args, stdout, stderr)
		},
	}
	c.Flags().StringVar(&o.Collection, "collection", "", "collection to ingest into (default: the configured collection)")
	c.Flags().StringArrayVar(&o.Exclude, "exclude", nil, "wildcard pattern of URLs to skip, e.g. '*.pdf' (repeatable)")
	c.Flags().IntVar(&o.MaxPages, "max-pages", 0, "page limit (default: crawl_max_pages)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print one JSON summary object on stdout")
	c.Flags().StringVar(&o.BearerToken, "bearer-token", "", "bearer token sent to the crawled site")
	c.Flags().BoolVar(&o.Semantic, "semantic", false, "also embed every chunk that lacks a semantic vector before exiting (semantic_search; serve does it in the background)")
	return c
}

// ingestOptions are the flags of the ingest command.
type ingestOptions struct {
	Collection  string
	Exclude     []string
	MaxPages    int
	JSON        bool
	BearerToken string
	Semantic    bool
}

func newAskCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var o askOptions
	c := &cobra.Command{
		Use:   "ask [flags] QUESTION",
		Short: "Answer one question from the indexed knowledge and print the answer with its sources",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAsk(cmd.Context(), *cfg, o, args, stdout, stderr)
		},
	}
	c.Flags().StringVar(&o.Agent, "agent", "", "agent to ask (default: the router chooses)")
	c.Flags().StringVar(&o.Collection, "collection", "", "collection to search (default: the configured collection)")
	c.Flags().BoolVar(&o.Events, "events", false, "print every event (thought, action, observation) on stderr")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the answer as JSON")
	return c
}

// askOptions are the flags of the ask command.
type askOptions struct {
	Agent      string
	Collection string
	Events     bool
	JSON       bool
}

func newEvalCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var o evalOptions
	c := &cobra.Command{
		Use:   "eval [flags] QUESTIONS.jsonl...",
		Short: "Score search and answers on question sets (JSON lines with question, gold_page, must_contain; no gold_page: the docs cannot answer it)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd.Context(), *cfg, o, args, stdout, stderr)
		},
	}
	c.Flags().StringVar(&o.Collection, "collection", "", "collection to search (default: the configured collection)")
	c.Flags().StringVar(&o.BaseURL, "base-url", "", "prefix that turns gold_page into a URL (default: the collection's common prefix)")
	c.Flags().IntVar(&o.K, "k", 5, "how many distinct pages count as retrieved")
	c.Flags().BoolVar(&o.Answers, "answers", false, "also run the agent: its sources' recall and MRR, must_contain in the answer, valid citations, abstentions")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	c.Flags().StringVar(&o.SearchMode, "search-mode", "hybrid", "search mode scored as /api/v1/search: hybrid, dense or keyword")
	c.Flags().BoolVar(&o.ShowMisses, "misses", false, "print each question answered badly (with its answer and sources) on stderr")
	c.PreRun = func(*cobra.Command, []string) {
		if o.ShowMisses {
			o.Misses = stderr
		}
	}
	return c
}

// evalOptions are the flags of the eval command.
type evalOptions struct {
	Collection string
	BaseURL    string
	K          int
	Answers    bool
	JSON       bool
	SearchMode string
	ShowMisses bool
	Misses     io.Writer // where misses are printed; nil: not printed
}
