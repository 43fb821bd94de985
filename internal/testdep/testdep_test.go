package testdep

import (
	"testing"
)

// recorder is a testing.TB that records what Missing asked of it.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestEnv(t *testing.T) {
	t.Setenv("KGAGENT_TEST_X", "")
	for _, c := range []struct {
		require      string
		skip, failed bool
	}{{"", true, false}, {"0", true, false}, {"1", false, true}} {
		t.Setenv("KGAGENT_REQUIRE_X", c.require)
		r := &recorder{TB: t}
		if v := Env(r, "KGAGENT_TEST_X", "KGAGENT_REQUIRE_X", "no x"); v != "" || r.skipped != c.skip || r.failed != c.failed {
			t.Errorf("require %q: value %q skipped %v failed %v", c.require, v, r.skipped, r.failed)
		}
	}
	t.Setenv("KGAGENT_TEST_X", "here")
	t.Setenv("KGAGENT_REQUIRE_X", "1")
	r := &recorder{TB: t}
	if v := Env(r, "KGAGENT_TEST_X", "KGAGENT_REQUIRE_X", "no x"); v != "here" || r.skipped || r.failed {
		t.Errorf("set: value %q skipped %v failed %v", v, r.skipped, r.failed)
	}
}
