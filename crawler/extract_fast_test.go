package crawler

import (
	"net/url"
	"strings"
	"testing"
)

// plainNormSpace is the definition normSpace must keep to.
func plainNormSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

var normSpaceCases = []string{
	"", " ", "a", " a", "a ", "a b", "a  b", "a\tb", "a\nb", "\n a \n b \n", "a\u00a0b", "\u00a0",
	"a\u0085b", "a\u3000 b", "é  ü", "a\xffb", "\xff \xfe", " \u2028x\u2029 ", "x\r\ny", "a\vb\fc",
}

func TestNormSpace(t *testing.T) {
	for _, s := range normSpaceCases {
		want := plainNormSpace(s)
		if got := normSpace(s); got != want {
			t.Errorf("normSpace(%q) = %q, want %q", s, got, want)
		}
		if got := normSpaceBytes([]byte(s)); got != want {
			t.Errorf("normSpaceBytes(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzNormSpace(f *testing.F) {
	for _, s := range normSpaceCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := plainNormSpace(s)
		if got := normSpace(s); got != want {
			t.Fatalf("normSpace(%q) = %q, want %q", s, got, want)
		}
		if got := normSpaceBytes([]byte(s)); got != want {
			t.Fatalf("normSpaceBytes(%q) = %q, want %q", s, got, want)
		}
	})
}

func FuzzHasField(f *testing.F) {
	f.Add("headerlink", "headerlink")
	f.Add(" a  headerlink\t", "headerlink")
	f.Add("headerlinks", "headerlink")
	f.Add("x\u00a0headerlink", "headerlink")
	f.Add("é headerlink", "headerlink")
	f.Fuzz(func(t *testing.T, v, word string) {
		want := false
		for _, f := range strings.Fields(v) {
			if f == word {
				want = true
			}
		}
		if got := hasField(v, word); got != want {
			t.Fatalf("hasField(%q, %q) = %v, want %v", v, word, got, want)
		}
	})
}

var resolveBases = []string{
	"http://h.example/", "http://h.example", "https://h.example/a/b/page.html", "http://h.example/a/b/",
	"http://h.example/a/b/page.html?q=1#top", "http://h.example/a/./b/../c/page.html", "http://h.example//a//b",
	"http://h.example/a%2Fb/c%20d/p.html", "http://h.example/%E2%82%AC/x", "http://H.example:80/A/B",
	"http://h.example/a/b/..", "http://h.example/.", "http://h.example/a?", "https://h.example/a/b/c/d/e/f/g/h/i/j",
	"http://[::1]:8080/x/y", "http://h.example/ü/p",
}

var resolveHrefs = []string{
	"#x", "#os.path.join", "page.html", "page.html#frag", "../glossary.html#term-x", "../../a/b.html", "../",
	"../../../../../../x", "sub/dir/", "a//b", "./a", "a/./b", "a/../b", "..", ".", "/abs", "//other.example/x",
	"page.html#", "#", "?q=1", "page.html?q=1#f", "mailto:x@y", "a%20b", "ü.html", "#ü", "a b", "a:b", "~user/x",
	"../..", "../../", "....//x", "..a/b", "a/..", "a/.", "x#y#z", "#a/b",
	"#isBlank()", "Character.html#isWhitespace(int)", "#valueOf(char%5B%5D,int,int)", "#%3Cinit%3E(byte%5B%5D)",
	"#a%5b", "#a%zz", "#a%5", "#a%", "#f(x)?y", "#a'b", "#a[b]", "#a+b$c;d=e@f:g*h!", "../x.html#m(java.lang.String...)",
}

func TestLinkResolver(t *testing.T) {
	for _, b := range resolveBases {
		base, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		r := &linkResolver{base: base}
		for _, h := range resolveHrefs {
			if got, want := r.resolve(h), resolveLink(base, h); got != want {
				t.Errorf("base %q href %q: %q, want %q", b, h, got, want)
			}
		}
	}
	// The fast path must be taken where it applies, or this test proves
	// nothing about it.
	base, _ := url.Parse("https://h.example/a/b/page.html")
	r := &linkResolver{base: base}
	for _, h := range []string{"#x", "page.html", "../glossary.html#term-x", "sub/dir/", "../a/B.html#m(int,java.lang.String)", "#%3Cinit%3E()"} {
		if _, ok := r.fast(h); !ok {
			t.Errorf("fast path not taken for %q", h)
		}
	}
}

func FuzzLinkResolver(f *testing.F) {
	for _, b := range resolveBases {
		for _, h := range resolveHrefs {
			f.Add(b, h)
		}
	}
	f.Fuzz(func(t *testing.T, b, h string) {
		base, err := url.Parse(b)
		if err != nil || !base.IsAbs() || base.Host == "" {
			return
		}
		r := &linkResolver{base: base}
		// Twice: the second call uses the cached prefixes.
		for range 2 {
			if got, want := r.resolve(h), resolveLink(base, h); got != want {
				t.Fatalf("base %q href %q: %q, want %q", b, h, got, want)
			}
		}
	})
}
