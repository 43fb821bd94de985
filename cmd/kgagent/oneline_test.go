package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOneLineCutsOnARune: the CLI's event line is cut to 300 bytes on a
// rune boundary (it was cut at byte 300, inside a rune).
func TestOneLineCutsOnARune(t *testing.T) {
	got := oneLine("ab\n" + strings.Repeat("é", 200)) // byte 300 falls inside an é
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "ab ⏎ é") || !strings.HasSuffix(got, "é…") || len(got) > 300+len("…") {
		t.Fatalf("oneLine = %q (%d bytes)", got, len(got))
	}
}
