// Package kgagent holds the domain types every part of kgagent shares: messages
// and embeds of the Fixie agent protocol, crawled documents and their chunks,
// triples, agent events and sources, and the one error type with its stable
// codes. It imports only the standard library; adapters and services live in
// the subpackages (crawler, corpus, graphrag, agent, gateway) and are wired
// together in cmd/kgagent only.
package kgagent
