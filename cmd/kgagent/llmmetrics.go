package main

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/openai"
)

// llmMetrics is the agent.Observer that exports LLM calls and runs to
// Prometheus: per-call latency and tokens, malformed outputs and runs by
// outcome (failed runs included).
type llmMetrics struct {
	latency   *prometheus.HistogramVec
	tokens    *prometheus.HistogramVec
	malformed prometheus.Counter
	runs      *prometheus.CounterVec
}

func newLLMMetrics() *llmMetrics {
	return &llmMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kgagent_llm_call_duration_seconds", Help: "Latency of one LLM call by how its output ended (stop, length, action, repeat, timeout, error).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120},
		}, []string{"stop"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kgagent_llm_call_tokens", Help: "Tokens of one LLM call, by kind: prompt and completion as the server reported them; prompt_estimated and completion_estimated (4 bytes a token) for a call cut on kgagent's side before the server reported usage.",
			Buckets: prometheus.ExponentialBuckets(16, 2, 11),
		}, []string{"kind"}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kgagent_llm_malformed_outputs_total", Help: "LLM outputs that could not be read as a ReAct step.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kgagent_agent_runs_total", Help: "Agent runs by outcome: ok, or the error code of a failed run.",
		}, []string{"outcome"}),
	}
}

// register adds the metrics to reg; nil m does nothing.
func (m *llmMetrics) register(reg *prometheus.Registry) {
	if m != nil {
		reg.MustRegister(m.latency, m.tokens, m.malformed, m.runs)
	}
}

// LLMCall records one LLM call.
func (m *llmMetrics) LLMCall(s agent.LLMCallStats) {
	m.latency.WithLabelValues(s.Stop).Observe(s.Duration.Seconds())
	prompt, completion := "prompt", "completion"
	if s.Estimated {
		prompt, completion = "prompt_estimated", "completion_estimated"
	}
	if s.PromptTokens > 0 {
		m.tokens.WithLabelValues(prompt).Observe(float64(s.PromptTokens))
	}
	if s.CompletionTokens > 0 {
		m.tokens.WithLabelValues(completion).Observe(float64(s.CompletionTokens))
	}
	if s.Malformed {
		m.malformed.Inc()
	}
}

// RunEnded records one run.
func (m *llmMetrics) RunEnded(s agent.RunStats) {
	outcome := s.Code
	if outcome == "" {
		outcome = "ok"
	}
	m.runs.WithLabelValues(outcome).Inc()
}

// embedProgressLog returns an embeddings progress callback that logs at
// most once every interval.
func embedProgressLog(log *slog.Logger, every time.Duration) func(openai.EmbedProgress) {
	var last atomic.Int64
	return func(p openai.EmbedProgress) {
		now := time.Now().UnixNano()
		if l := last.Load(); now-l < int64(every) || !last.CompareAndSwap(l, now) {
			return
		}
		log.Info("embedding", "texts", p.Texts, "requests", p.Requests, "retries", p.Retries, "in_flight_limit", p.Limit)
	}
}
