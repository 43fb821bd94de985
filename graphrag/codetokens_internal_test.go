package graphrag

import (
	"reflect"
	"strings"
	"testing"
)

// codeTokensRef is CodeTokens as first written (map of seen tokens,
// strings.Split for dotted names, tok+"()" for calls): the reference the
// faster version must agree with.
func codeTokensRef(text string, seen map[string]bool) [4][]string {
	var out [4][]string
	isTok := func(c byte) bool {
		return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(text); {
		if !isTok(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isTok(text[j]) {
			j++
		}
		tok := strings.Trim(text[i:j], ".")
		call := strings.HasPrefix(text[j:], "()")
		if call {
			j += 2
		}
		i = j
		if tok == "" {
			continue
		}
		seen[tok] = true
		if c := tok[0]; c >= '0' && c <= '9' {
			continue
		}
		suffix := ""
		if call {
			suffix = "()"
		}
		switch {
		case strings.Contains(tok, "."):
			ok := true
			for _, p := range strings.Split(tok, ".") {
				if p == "" || p[0] >= '0' && p[0] <= '9' {
					ok = false
					break
				}
			}
			if ok {
				out[0] = append(out[0], tok+suffix)
			}
		case call:
			out[1] = append(out[1], tok+suffix)
		case isSnake(tok):
			out[2] = append(out[2], tok)
		case isCamel(tok):
			out[3] = append(out[3], tok)
		}
	}
	return out
}

func checkCodeTokens(t *testing.T, s string) {
	t.Helper()
	seen, want := map[string]bool{}, map[string]bool{}
	got := CodeTokens(s, seen)
	ref := codeTokensRef(s, want)
	if !reflect.DeepEqual(got, ref) || !reflect.DeepEqual(seen, want) {
		t.Errorf("CodeTokens(%q) = %q (saw %v), want %q (saw %v)", s, got, seen, ref, want)
	}
}

var codeTokenSeeds = []string{
	"os.path.join() print() get_item MyClass 3.11 ..a..b.. x()()", "a.() a..b() .x() x.() 1.a a.1b a.b1 _x() __init__.py",
	"", "()", "x", "json.dumps()", "a.b.c.", "GetItem() get_item() CamelCase_x",
}

func TestCodeTokensRef(t *testing.T) {
	for _, s := range codeTokenSeeds {
		checkCodeTokens(t, s)
	}
}

func FuzzCodeTokensRef(f *testing.F) {
	for _, s := range codeTokenSeeds {
		f.Add(s)
	}
	f.Fuzz(checkCodeTokens)
}
