// Package testdep decides what a test does when a real dependency that
// `make test` provides (a server, a client of another implementation, a
// browser) is missing: it skips, or it fails when the dependency's
// KGAGENT_REQUIRE_* switch is "1", so that a suite make test requires can
// never pass by skipping.
package testdep

import (
	"os"
	"testing"
)

// Missing skips t, saying why, or fails it when the require variable is "1".
func Missing(t testing.TB, require, why string) {
	t.Helper()
	if os.Getenv(require) == "1" {
		t.Fatalf("%s=1 but %s", require, why)
		return
	}
	t.Skip(why)
}

// Env returns the value of the variable env, or calls Missing when it is
// empty.
func Env(t testing.TB, env, require, why string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		Missing(t, require, why)
	}
	return v
}
