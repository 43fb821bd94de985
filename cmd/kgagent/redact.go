package main

import (
	"net/url"
	"strings"
)

// redactURLs returns a NATS server URL list (comma-separated, as
// --nats-url takes it) with the user information of each URL removed, for
// stdout and the log: a password or token in --nats-url must not be
// printed. What cannot be parsed is replaced whole, since it may hold one.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		switch {
		case err != nil:
			parts[i] = "(unparsable URL)"
		case u.User != nil:
			u.User = nil
			parts[i] = u.String()
		default:
			parts[i] = p
		}
	}
	return strings.Join(parts, ",")
}
