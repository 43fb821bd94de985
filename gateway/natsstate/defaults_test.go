package natsstate

import (
	"testing"

	"github.com/kgagent/kgagent/gateway"
)

// TestStreamsDefaultsMatchMemory: a stream is resumable as long, with as
// many frames and bytes, on JetStream as in the gateway's in-memory store
// (issue 22: they had drifted to 4 and 2 minutes).
func TestStreamsDefaultsMatchMemory(t *testing.T) {
	// gateway's TestConfigDefaults checks that the in-memory store takes
	// these constants.
	c := StreamsConfig{}.withDefaults()
	if c.Retain != gateway.DefaultRetainStreams || c.MaxEvents != gateway.DefaultMaxStreamEvents || c.MaxBytes != gateway.DefaultMaxStreamBytes {
		t.Errorf("JetStream streams keep %s, %d frames, %d bytes; the in-memory store %s, %d, %d",
			c.Retain, c.MaxEvents, c.MaxBytes, gateway.DefaultRetainStreams, gateway.DefaultMaxStreamEvents, gateway.DefaultMaxStreamBytes)
	}
	// JetStream ages a frame from its write: the first frame of an answer
	// that ran the whole request timeout outlives the answer by Retain.
	if got := keep(c.Retain); got != gateway.DefaultRequestTimeout+gateway.DefaultRetainStreams {
		t.Errorf("keep = %s, want request timeout + retain ", got)
	}
}
