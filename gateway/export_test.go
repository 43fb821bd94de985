package gateway

import "testing"

// NewFakeServer returns a gateway over the fakes of fakes_test.go (no
// auth), for the tests in package gateway_test that drive it through the
// transports of other packages (gateway/natsapi, gateway/mcp). Its Asker
// panics on questions starting with "panic", and agent "docs"'s func
// "panic" panics.
func NewFakeServer(t testing.TB) *Server { return newFixture(t, Config{}).srv }
