package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are kgagent's Prometheus metrics, served at /metrics. The gateway
// records requests, latencies, requests in flight, agent iterations and LLM
// tokens of answers it relays; cmd/kgagent feeds crawl pages (and tokens of
// work the gateway does not see) through the Add methods.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	calls      *prometheus.CounterVec
	callTime   *prometheus.HistogramVec
	iterations prometheus.Histogram
	tokens     *prometheus.CounterVec
	pages      *prometheus.CounterVec
	sockets    prometheus.Gauge
}

// NewMetrics registers kgagent's metrics on reg (a fresh registry with the Go
// and process collectors when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kgagent_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kgagent_http_request_duration_seconds", Help: "HTTP request latency by route.", Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kgagent_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kgagent_calls_total", Help: "Service calls (all transports; agent-protocol funcs as service func) by service and error code.",
		}, []string{"service", "code"}),
		callTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kgagent_call_duration_seconds", Help: "Service call latency by service.", Buckets: prometheus.DefBuckets,
		}, []string{"service"}),
		iterations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kgagent_agent_iterations", Help: "ReAct iterations per answer.", Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20},
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kgagent_llm_tokens_total", Help: "LLM tokens by kind (prompt, completion).",
		}, []string{"kind"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kgagent_crawl_pages_total", Help: "Crawled pages by outcome (indexed, unchanged, skipped, failed).",
		}, []string{"outcome"}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kgagent_websockets_open", Help: "Open websocket connections.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.inFlight, m.calls, m.callTime, m.iterations, m.tokens, m.pages, m.sockets)
	return m
}

// Registry returns the registry the metrics live on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// AddLLMTokens counts tokens of LLM calls.
func (m *Metrics) AddLLMTokens(prompt, completion int) {
	m.tokens.WithLabelValues("prompt").Add(float64(prompt))
	m.tokens.WithLabelValues("completion").Add(float64(completion))
}

// AddCrawlPages counts n crawled pages with an outcome such as "indexed",
// "unchanged", "skipped" or "failed".
func (m *Metrics) AddCrawlPages(outcome string, n int) {
	m.pages.WithLabelValues(outcome).Add(float64(n))
}

// ObserveIterations records the ReAct iterations of one answer.
func (m *Metrics) ObserveIterations(n int) { m.iterations.Observe(float64(n)) }

func (m *Metrics) observeHTTP(route string, status int, d time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// serviceUnknown is the one service label of calls for services that do
// not exist.
const serviceUnknown = "unknown"

func (m *Metrics) observeCall(service, code string, d time.Duration) {
	if code == "" {
		code = "OK"
	}
	if !services[service] && service != serviceFunc {
		service = serviceUnknown
	}
	m.calls.WithLabelValues(service, code).Inc()
	m.callTime.WithLabelValues(service).Observe(d.Seconds())
}

func (m *Metrics) observeAnswer(a kgagent.Answer) {
	if a.Iterations > 0 {
		m.ObserveIterations(a.Iterations)
	}
	if a.Usage.PromptTokens > 0 || a.Usage.CompletionTokens > 0 {
		m.AddLLMTokens(a.Usage.PromptTokens, a.Usage.CompletionTokens)
	}
}
