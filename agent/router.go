package agent

import (
	"context"
	"sort"

	"github.com/kgagent/kgagent/agent/extractive"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Route picks the agent for a question posted without one (the Router of
// seed 002): the agent whose few-shot queries are nearest to the question in
// embedding space (Config.Route.Embedder; without one, by content-word overlap),
// when the similarity reaches Config.Route.Threshold; else the default agent.
// It returns the agent's name and the similarity.
func (m *Manager) Route(ctx context.Context, question string) (string, float64, error) {
	m.mu.RLock()
	names := make([]string, 0, len(m.agents))
	entries := make([]*entry, 0, len(m.agents))
	for n, e := range m.agents {
		if n == m.cfg.Route.DefaultAgent || len(e.queries) == 0 {
			continue
		}
		names = append(names, n)
		entries = append(entries, e)
	}
	m.mu.RUnlock()
	var qv []float32
	if m.cfg.Route.Embedder != nil && len(entries) > 0 {
		vs, err := m.cfg.Route.Embedder.Embed(ctx, []string{question})
		if err != nil {
			if ctx.Err() != nil {
				return "", 0, ctx.Err()
			}
			return "", 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "embedding the question for routing failed")
		}
		if len(vs) == 1 {
			qv = vs[0]
		}
	}
	best, bestScore := "", 0.0
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return names[order[i]] < names[order[j]] })
	for _, i := range order {
		e := entries[i]
		for j, q := range e.queries {
			var s float64
			if qv != nil && j < len(e.vecs) {
				s = text.Cosine(qv, e.vecs[j])
			} else {
				s = text.BagCosine(question, q)
			}
			if s > bestScore {
				best, bestScore = names[i], s
			}
		}
		// A question that fits a few-shot's query pattern (SYMBOL and
		// other placeholders generalised) belongs to that agent.
		for _, st := range e.a.Stanzas() {
			if score, passthrough, ok := extractive.MatchStanza(st, question); ok && !passthrough && score > bestScore {
				best, bestScore = names[i], score
			}
		}
	}
	if best == "" || bestScore < m.cfg.Route.Threshold {
		return m.cfg.Route.DefaultAgent, bestScore, nil
	}
	return best, bestScore, nil
}
