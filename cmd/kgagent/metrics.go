package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus/backfill"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/natsjobs"
	"github.com/kgagent/kgagent/gateway"
)

// meteredRunner feeds the crawl-page counters of every ingestion job into
// the gateway's Prometheus metrics.
type meteredRunner struct {
	r natsjobs.Runner
	m *gateway.Metrics
}

// Run runs the job, reporting page outcomes as they change.
func (mr meteredRunner) Run(ctx context.Context, spec crawler.Spec, progress func(crawler.Counters)) (crawler.Report, error) {
	var last crawler.Counters
	report := func(c crawler.Counters) {
		for _, o := range []struct {
			name      string
			now, then int64
		}{
			{"indexed", c.Indexed, last.Indexed},
			{"unchanged", c.Unchanged, last.Unchanged},
			{"skipped", c.Skipped, last.Skipped},
			{"failed", c.Failed, last.Failed},
			{"removed", c.Removed, last.Removed},
		} {
			if d := o.now - o.then; d > 0 {
				mr.m.AddCrawlPages(o.name, int(d))
			}
		}
		last = c
	}
	return mr.r.Run(ctx, spec, func(c crawler.Counters) {
		report(c)
		if progress != nil {
			progress(c)
		}
	})
}

// registerCacheMetrics exports the answer cache's lookups and size.
func registerCacheMetrics(reg *prometheus.Registry, m *agent.Manager) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kgagent_answer_cache_hits_total", Help: "Questions answered from the answer cache."},
			func() float64 { return float64(m.CacheStats().Hits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kgagent_answer_cache_misses_total", Help: "Answer cache lookups that found no current answer."},
			func() float64 { return float64(m.CacheStats().Misses) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kgagent_answer_cache_entries", Help: "Answers held by the answer cache."},
			func() float64 { return float64(m.CacheStats().Entries) }),
	)
}

// registerSemanticMetrics exposes the background semantic pass's counters
// (corpus/backfill) on reg; nothing when there is no pass.
func registerSemanticMetrics(reg *prometheus.Registry, p *backfill.Pass) {
	if p == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kgagent_semantic_chunks", Help: "Chunks of the index, at the semantic pass's last count."},
			func() float64 { return float64(p.Stats().Total) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kgagent_semantic_chunks_embedded", Help: "Chunks that have a semantic vector, at the semantic pass's last count."},
			func() float64 { return float64(p.Stats().Done) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kgagent_semantic_embedded_total", Help: "Chunks the background semantic pass embedded and stored."},
			func() float64 { return float64(p.Stats().Embedded) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kgagent_semantic_batches_total", Help: "Batches of semantic vectors the background pass committed."},
			func() float64 { return float64(p.Stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kgagent_semantic_busy_seconds_total", Help: "Seconds the background semantic pass spent embedding and storing."},
			func() float64 { return p.Stats().Busy.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kgagent_semantic_pass_running", Help: "1 while the background semantic pass has chunks to embed."},
			func() float64 {
				if p.Stats().Running {
					return 1
				}
				return 0
			}),
	)
}
