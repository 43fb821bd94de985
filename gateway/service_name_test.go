package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUnknownServiceNameCutOnARune: a long unknown service name is cut
// for the error message on a rune boundary (it was cut at byte 64, inside
// a rune, leaving invalid UTF-8 in the message).
func TestUnknownServiceNameCutOnARune(t *testing.T) {
	name := "a" + strings.Repeat("é", 40) // byte 64 falls inside an é
	msg := unknownService(name).Error()
	if !utf8.ValidString(msg) {
		t.Fatalf("message is not valid UTF-8: %q", msg)
	}
	if !strings.Contains(msg, "a"+strings.Repeat("é", 31)+"…") {
		t.Fatalf("message %q does not hold the name cut to 63 bytes", msg)
	}
}
