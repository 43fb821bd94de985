package kgagent

import (
	"regexp"
	"strings"
)

// Collection names. One rule holds for every name a user gives, on every
// endpoint and in every store: 1..MaxCollectionLen bytes of ASCII letters,
// digits, '_', '.' and '-', starting with a letter or digit, and without
// InternalSep. Names holding InternalSep are the stores' own (a
// collection's entity index is "<collection>__entities"): users can never
// name them, so no request reads, writes or deletes them directly.
const (
	// DefaultCollection is the collection a request, an ingestion or a
	// search uses when it names none (and kgagent's collection setting
	// defaults to).
	DefaultCollection = "default"
	MaxCollectionLen  = 128
	InternalSep       = "__"
)

var collectionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidateCollection checks a collection name a user gave. Errors: EINVALID
// with details {"reason":"unknown_value","field":"collection"}.
func ValidateCollection(name string) error {
	switch {
	case name == "":
		return badCollection("collection name is empty")
	case len(name) > MaxCollectionLen:
		return badCollection("collection name is over %d bytes", MaxCollectionLen)
	case !collectionRe.MatchString(name):
		return badCollection("collection name %q: use ASCII letters, digits, '_', '.' and '-', starting with a letter or digit", name)
	case strings.Contains(name, InternalSep):
		return badCollection("collection name %q: %q is reserved for internal collections", name, InternalSep)
	}
	return nil
}

// ValidateStoredCollection checks a name a store is given: a user's
// collection name, or an internal one ("<collection>__<suffix>").
func ValidateStoredCollection(name string) error {
	base, suffix, internal := strings.Cut(name, InternalSep)
	if err := ValidateCollection(base); err != nil {
		return err
	}
	if internal && (suffix == "" || !collectionRe.MatchString(suffix) || strings.Contains(suffix, InternalSep)) {
		return badCollection("bad internal collection name %q", name)
	}
	return nil
}

func badCollection(format string, args ...any) *Error {
	e := Errorf(EINVALID, format, args...)
	e.Details = map[string]any{"reason": "unknown_value", "field": "collection"}
	return e
}
