// Package gateway serves kgagent to its clients: REST, the multiplexed
// websocket, NATS request streams, the Fixie agent-protocol endpoints,
// GraphQL, an OpenAI-compatible chat API, auth and limits, metrics and the
// docs chat page. It depends on small interfaces declared here; cmd/kgagent
// wires the real services in.
package gateway
