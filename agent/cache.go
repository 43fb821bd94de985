package agent

import (
	"container/list"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kgagent/kgagent"
)

// answerCache keeps recent answers with the events that streamed them, so a
// question asked again is answered by replaying them: a docs chatbot is asked
// the same questions over and over. An entry is used only while it is
// younger than the TTL and the stores' generation (Config.Cache.Generation) and
// the manager's agents are what they were when it was made; the least
// recently used entries go first when it is full.
type answerCache struct {
	size     int
	maxBytes int
	ttl      time.Duration
	bytes    int // what the entries hold (cached.size), under mu

	mu      sync.Mutex
	lru     *list.List // of *cached, most recent first
	entries map[cacheKey]*list.Element

	hits, misses atomic.Int64
}

// cacheKey is what an answer depends on: the agent asked for (empty when
// routed), the collection, the question, and the generations of the stores
// and of the registered agents.
type cacheKey struct {
	agent, collection, question string
	gen, agents                 uint64
}

type cached struct {
	key    cacheKey
	at     time.Time
	ans    kgagent.Answer  // zero once put: the entry holds blob
	events []kgagent.Event // nil once put
	// blob is ans and events as put encoded them (encodeEntry) and
	// compressed: one pointer-free allocation per answer instead of a few
	// hundred strings, ~4x smaller; errs are the events' errors (nil when
	// none has one), kept as they were since their Details and Err are not
	// strings
	blob []byte
	errs []*kgagent.Error
	size int // bytes held, counted by own
}

// defaultCacheBytes is CacheConfig.MaxBytes's default.
const defaultCacheBytes = 16 << 20

func newAnswerCache(size, maxBytes int, ttl time.Duration) *answerCache {
	if size <= 0 {
		return nil
	}
	if maxBytes <= 0 {
		maxBytes = defaultCacheBytes
	}
	return &answerCache{size: size, maxBytes: maxBytes, ttl: ttl, lru: list.New(), entries: map[cacheKey]*list.Element{}}
}

// drop removes el from the cache.
func (c *answerCache) drop(el *list.Element) {
	e := el.Value.(*cached)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// normQuestion is the question as a cache key: spaces trimmed and runs of
// white space made one space.
func normQuestion(q string) string {
	return strings.Join(strings.Fields(q), " ")
}

// get returns the entry for k made after now-ttl, its answer and events
// decoded afresh (the caller's own).
func (c *answerCache) get(k cacheKey, now time.Time) (*cached, bool) {
	c.mu.Lock()
	el, ok := c.entries[k]
	if !ok {
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
	e := el.Value.(*cached)
	if c.ttl > 0 && now.Sub(e.at) > c.ttl {
		c.drop(el)
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
	c.lru.MoveToFront(el)
	c.mu.Unlock()
	out := &cached{key: e.key, at: e.at, size: e.size}
	var err error
	if out.ans, out.events, err = decodeEntry(e.blob, e.errs); err != nil {
		// only put's encoding is ever decoded: a bug, answered afresh
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return out, true
}

// put stores e, evicting the least recently used entries beyond the size
// or the bytes. The entry is encoded first (own), so that it holds only
// its own bytes. An entry bigger than the bytes, or whose encoding is past
// maxEntryLen before compression, is not kept.
func (c *answerCache) put(e *cached) {
	e.own()
	if e.size > c.maxBytes || !decodable(e.blob) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		c.bytes += e.size - el.Value.(*cached).size
		el.Value = e
		c.lru.MoveToFront(el)
	} else {
		c.entries[e.key] = c.lru.PushFront(e)
		c.bytes += e.size
	}
	for c.lru.Len() > c.size || c.bytes > c.maxBytes {
		c.drop(c.lru.Back())
	}
}

// own replaces e's answer and events by their encoding (blob, errs) and
// counts the bytes it holds in e.size. A run's strings may be substrings
// of much larger buffers made for that run alone (the graph name index
// copies an expansion's triples into one buffer a call, ~145 KB on the
// OpenJDK docs), which a cached entry kept whole for as long as it lived:
// 1,000 distinct questions grew serve's live heap by ~70 MB, and a full
// 4,096-entry cache would hold ~600 MB (TestCachedAnswerOwnsItsStrings).
// Copies of the strings (until the encoding) still held ~23 KB an answer
// in ~300 objects on the OpenJDK docs, 11.5 MB after 500 answers that
// every collection scanned; the blob is ~4x smaller and holds no pointer.
func (e *cached) own() {
	e.blob, e.errs = encodeEntry(e.ans, e.events)
	e.ans, e.events = kgagent.Answer{}, nil
	e.size = int(unsafe.Sizeof(cached{})) + len(e.key.agent) + len(e.key.collection) + len(e.key.question) + cap(e.blob) + 8*cap(e.errs)
	for _, er := range e.errs {
		if er != nil {
			e.size += int(unsafe.Sizeof(*er)) + len(er.Code) + len(er.Message)
		}
	}
}

// len is how many entries the cache holds.
func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// CacheStats counts answer cache lookups since the manager started.
type CacheStats struct {
	Hits, Misses int64
	Entries      int
}

// CacheStats reports the answer cache's hits, misses and size (all zero
// when the cache is off).
func (m *Manager) CacheStats() CacheStats {
	if m.cache == nil {
		return CacheStats{}
	}
	return CacheStats{Hits: m.cache.hits.Load(), Misses: m.cache.misses.Load(), Entries: m.cache.len()}
}

// cacheKeyFor returns the request's cache key, or false when the request
// may not be answered from the cache: one with a session (its history and
// recording matter) or with embeds (their content is not part of the key).
func (m *Manager) cacheKeyFor(req Request) (cacheKey, bool) {
	if m.cache == nil || req.SessionID != "" || len(req.Embeds) > 0 {
		return cacheKey{}, false
	}
	var gen uint64
	if m.cfg.Cache.Generation != nil {
		gen = m.cfg.Cache.Generation()
	}
	return cacheKey{agent: req.Agent, collection: req.Collection, question: normQuestion(req.Question), gen: gen, agents: m.agentsGen.Load()}, true
}

// replay answers r from a cached entry: its events are emitted again under
// r's request id and sequence, and the answer is returned with no LLM usage
// (none was spent).
func (r *run) replay(c *cached) kgagent.Answer {
	for _, ev := range c.events {
		if ev.Usage != nil {
			ev.Usage = &kgagent.Usage{}
		}
		r.emit(ev)
	}
	ans := c.ans
	ans.RequestID = r.req.ID
	ans.Usage = kgagent.Usage{}
	ans.Iterations = 0
	return ans
}
