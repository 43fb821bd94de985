package agent

import (
	"regexp"
	"strconv"
	"testing"
)

// The regexps the hand-written line parsers replace; they stay here as the
// reference the parsers must agree with.
var (
	sourceLineRef = regexp.MustCompile(`^\[(\d+)\] (.+) \((\S+)\)$`)
	factLineRef   = regexp.MustCompile(`^- (.+) \[(\d+)\]$`)
)

func checkLineParsers(t *testing.T, l string) {
	n, title, url, ok := sourceLine(l)
	m := sourceLineRef.FindStringSubmatch(l)
	if ok != (m != nil) {
		t.Fatalf("sourceLine(%q) ok=%v, regexp match %v", l, ok, m != nil)
	}
	if ok {
		if title != m[2] || url != m[3] {
			t.Fatalf("sourceLine(%q) = %q %q, regexp %q %q", l, title, url, m[2], m[3])
		}
		if want, err := strconv.Atoi(m[1]); err == nil && n != want {
			t.Fatalf("sourceLine(%q) n=%d, want %d", l, n, want)
		}
	}
	text, fn, fok := factLine(l)
	fm := factLineRef.FindStringSubmatch(l)
	if fok != (fm != nil) {
		t.Fatalf("factLine(%q) ok=%v, regexp match %v", l, fok, fm != nil)
	}
	if fok {
		if text != fm[1] {
			t.Fatalf("factLine(%q) = %q, regexp %q", l, text, fm[1])
		}
		if want, err := strconv.Atoi(fm[2]); err == nil && fn != want {
			t.Fatalf("factLine(%q) n=%d, want %d", l, fn, want)
		}
	}
}

var lineCases = []string{
	"[1] Quickstart › Start the server (http://127.0.0.1:8080/q.html#start)",
	"[12] T (http://x/a(b))",
	"[1] T (a) (b c)",
	"[1] (x)",
	"[1]  (x)",
	"[] T (x)",
	"[1a] T (x)",
	"[1] T ()",
	"[1] T (a\tb)",
	"[1] T (a\vb)",
	"[1] a] b (u)",
	"- json.dumps: Serialize obj [3]",
	"- [3]",
	"-  [3]",
	"- a [b] [12]",
	"- a [12] x",
	"- a [1 2]",
	"- a []",
	"- x [99999999999999999999]",
	"Facts:",
	"",
	"plain text line",
}

func TestLineParsersMatchTheRegexps(t *testing.T) {
	for _, l := range lineCases {
		checkLineParsers(t, l)
	}
}

func FuzzLineParsers(f *testing.F) {
	for _, l := range lineCases {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, l string) {
		checkLineParsers(t, l)
	})
}
