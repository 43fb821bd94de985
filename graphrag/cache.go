package graphrag

import (
	"context"
	"sync"
)

// Cache keeps extraction results by key (the LLM extractor keys them by model
// and chunk hash), so unchanged chunks never cost a second LLM call.
// graphrag/sqlite's Store implements it durably; MemCache is the in-memory one.
type Cache interface {
	// Get returns the value stored under key and whether there was one.
	Get(ctx context.Context, key string) (string, bool, error)
	// Put stores value under key, replacing any earlier value.
	Put(ctx context.Context, key, value string) error
}

// MemCache is a Cache in memory, safe for concurrent use. The zero value is
// ready to use.
type MemCache struct {
	mu sync.Mutex
	m  map[string]string
}

// Get implements Cache.
func (c *MemCache) Get(_ context.Context, key string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok, nil
}

// Put implements Cache.
func (c *MemCache) Put(_ context.Context, key, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[key] = value
	return nil
}
