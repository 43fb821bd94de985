package gateway

import "testing"

// TestConfigDefaults: the in-memory stream store's defaults are the
// exported constants gateway/natsstate also uses (its
// TestStreamsDefaultsMatchMemory), so the two cannot drift apart again.
func TestConfigDefaults(t *testing.T) {
	var c Config
	c.fill()
	if c.RequestTimeout != DefaultRequestTimeout || c.RetainStreams != DefaultRetainStreams ||
		c.MaxStreamEvents != DefaultMaxStreamEvents || c.MaxStreamBytes != DefaultMaxStreamBytes {
		t.Errorf("defaults %s %s %d %d, want the Default* constants", c.RequestTimeout, c.RetainStreams, c.MaxStreamEvents, c.MaxStreamBytes)
	}
}
