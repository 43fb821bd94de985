package graphrag

import (
	"strings"
	"testing"
)

// checkFirstIndexes compares firstIndexes with strings.Index pattern by
// pattern.
func checkFirstIndexes(t *testing.T, text string, pats []string) {
	t.Helper()
	got := firstIndexes(text, pats)
	if len(got) != len(pats) {
		t.Fatalf("firstIndexes gave %d answers for %d patterns", len(got), len(pats))
	}
	for i, p := range pats {
		if want := strings.Index(text, p); got[i] != want {
			t.Errorf("firstIndexes(%q)[%q] = %d, want %d", text, p, got[i], want)
		}
	}
}

func TestFirstIndexes(t *testing.T) {
	text := "json.dumps(obj)\x00The json module\x00see json.dumps and json.loads; abcabcabd\x00end"
	checkFirstIndexes(t, text, []string{
		"json.dumps", "json.loads", "json", "js", "", "abcabd", "abca", "end", "missing text",
		"json.dumps", // twice
		"end\x00", "\x00The", text, text + "x", "e", "xyz!",
	})
	checkFirstIndexes(t, "", []string{"", "a", "abcd"})
	checkFirstIndexes(t, "abc", []string{"abc", "abcd", "b"})
	// Many patterns sharing their first four bytes and slots.
	var pats []string
	var b strings.Builder
	for i := 0; i < 300; i++ {
		p := "os.path." + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		pats = append(pats, p)
		if i%3 == 0 {
			b.WriteString(p + " ")
		}
	}
	checkFirstIndexes(t, b.String(), pats)
}

func FuzzFirstIndexes(f *testing.F) {
	f.Add("json.dumps and json.loads", "json.loads\njson\nloads and\nzzzz\njson.dumps")
	f.Add("aaaaaaa", "aaaa\naaaaa\naaaaaaaa\na")
	f.Fuzz(func(t *testing.T, text, pats string) {
		checkFirstIndexes(t, text, strings.Split(pats, "\n"))
	})
}
