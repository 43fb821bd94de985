package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgagent/kgagent/agent"
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
