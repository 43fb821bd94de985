package natsjobs

import "testing"

// TestDefaultAckWait: the queue's default is the exported one that
// kgagent's job_ack_wait setting also defaults to (issue 22: they had
// drifted to 60 s here and 30 s in cmd/kgagent; cmd's TestConfigSharedDefaults
// checks the other side).
func TestDefaultAckWait(t *testing.T) {
	if got := (Config{}).withDefaults().AckWait; got != DefaultAckWait {
		t.Errorf("AckWait default %s, want DefaultAckWait %s", got, DefaultAckWait)
	}
}
