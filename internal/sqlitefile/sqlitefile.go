// Package sqlitefile makes the SQLite URI ("file:" DSN) of a file path for
// the stores' database/sql opens. SQLite reads a URI's path up to its
// first '?' (the query) or '#' (a fragment) and decodes %XX escapes in it,
// so a path holding one of those characters must be escaped, or the store
// opens another file: a data dir named "docs#2" put every store of it into
// one file "docs" beside the data dir.
package sqlitefile

import "strings"

// escaper escapes the characters that end or change a URI's path.
var escaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// URI returns the "file:" URI of the file at path (no query: callers add
// theirs after a '?').
func URI(path string) string {
	return "file:" + escaper.Replace(path)
}
