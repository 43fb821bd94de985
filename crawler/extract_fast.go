package crawler

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// This file holds the allocation-light helpers of the HTML extraction: they
// compute exactly what the plain versions they replaced did (the fuzz tests
// in extract_fast_test.go compare them), with fewer copies.

// asciiSpace marks the ASCII bytes that strings.Fields treats as space.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// normSpace collapses runs of white space (unicode.IsSpace, as
// strings.Fields) into one space and trims: strings.Join(strings.Fields(s),
// " "). Text that is already in that form comes back as is, without a copy.
func normSpace(s string) string {
	if isNormSpace(s) {
		return s
	}
	return normSpaceBytes([]byte(s))
}

// normSpaceBytes is normSpace of string(b) with one copy at most; it
// overwrites b.
func normSpaceBytes(b []byte) string {
	return string(b[:compactSpace(b)])
}

// isNormSpace reports whether s has no leading or trailing space and no
// space other than single ' ' bytes between words.
func isNormSpace(s string) bool {
	prevSpace := true // a space at the start is leading space
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if !asciiSpace[c] {
				prevSpace = false
				continue
			}
			if prevSpace || c != ' ' {
				return false
			}
			prevSpace = true
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		if unicode.IsSpace(r) {
			return false
		}
		prevSpace = false
	}
	return !prevSpace || len(s) == 0
}

// compactSpace rewrites b in place to normSpace(string(b)) and returns the
// new length. The output never overtakes the input: a space is written only
// for a run of at least one space byte already read.
func compactSpace(b []byte) int {
	w := 0
	pending := false
	for r := 0; r < len(b); {
		c := b[r]
		if c < utf8.RuneSelf {
			r++
			if asciiSpace[c] {
				pending = w > 0
				continue
			}
			if pending {
				b[w] = ' '
				w++
				pending = false
			}
			b[w] = c
			w++
			continue
		}
		ru, n := utf8.DecodeRune(b[r:])
		if unicode.IsSpace(ru) {
			pending = w > 0
			r += n
			continue
		}
		if pending {
			b[w] = ' '
			w++
			pending = false
		}
		w += copy(b[w:], b[r:r+n])
		r += n
	}
	return w
}

// appendNodeText appends nodeText(n) to dst.
func appendNodeText(dst []byte, n *html.Node, depth int) []byte {
	if depth > maxWalkDepth*4 {
		return dst
	}
	switch n.Type {
	case html.TextNode:
		return append(dst, n.Data...)
	case html.ElementNode, html.DocumentNode:
	default:
		return dst
	}
	block := n.Type == html.ElementNode && !isInline(n.DataAtom)
	if block {
		dst = append(dst, ' ')
	}
	if n.DataAtom == atom.Img {
		dst = append(dst, attr(n, "alt")...)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		dst = appendNodeText(dst, c, depth+1)
	}
	if block {
		dst = append(dst, ' ')
	}
	return dst
}

// textBuf is a reusable buffer for normSpace(nodeText(n)).
type textBuf struct{ b []byte }

// normText is normSpace(nodeText(n)) with one allocation: the result.
func (t *textBuf) normText(n *html.Node) string {
	t.b = appendNodeText(t.b[:0], n, 0)
	return normSpaceBytes(t.b)
}

// hasField reports whether the space-separated list v (as strings.Fields
// splits it) holds word.
func hasField(v, word string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			for _, f := range strings.Fields(v) {
				if f == word {
					return true
				}
			}
			return false
		}
	}
	for len(v) > 0 {
		i := 0
		for i < len(v) && asciiSpace[v[i]] {
			i++
		}
		v = v[i:]
		j := 0
		for j < len(v) && !asciiSpace[v[j]] {
			j++
		}
		if j > 0 && v[:j] == word {
			return true
		}
		v = v[j:]
	}
	return false
}

// linkResolver is resolveLink for the many links of one page. An href made
// only of unreserved characters and '/' (RFC 3986), relative, with no dot
// segments other than leading "../" ones, no empty segment but the last, and
// an optional non-empty #fragment of unreserved characters resolves to a
// prefix plus the href: the prefix is what net/url makes of a probe href
// with the same leading "../"s (or of "#x" for a fragment-only href), so
// the base URL's own quirks (escapes, dot segments, query) are net/url's.
// Any other href goes through resolveLink.
type linkResolver struct {
	base *url.URL
	frag string   // prefix of "#frag" hrefs; "-" when unusable, "" before first use
	dirs []string // dirs[k]: prefix of hrefs with k leading "../"; "-" when unusable
}

// maxFastUp bounds the leading "../" segments of the fast path.
const maxFastUp = 8

func (r *linkResolver) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || len(href) > maxURLLength {
		return ""
	}
	if u, ok := r.fast(href); ok {
		return u
	}
	return resolveLink(r.base, href)
}

// fast returns the resolved href when the fast path applies.
func (r *linkResolver) fast(href string) (string, bool) {
	p, frag, hasFrag := strings.Cut(href, "#")
	if hasFrag && (frag == "" || !fragmentSafe(frag)) {
		return "", false
	}
	if p == "" {
		if r.frag == "" {
			r.frag = r.probe("#x", "x")
		}
		if r.frag == "-" {
			return "", false
		}
		return r.frag + frag, true
	}
	up := 0
	for strings.HasPrefix(p, "../") {
		p = p[3:]
		up++
	}
	if up > maxFastUp || p == "" || p[0] == '/' {
		return "", false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	if strings.Contains(p, "//") {
		return "", false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '/' && !isUnreserved(c) {
			return "", false
		}
	}
	for len(r.dirs) <= up {
		r.dirs = append(r.dirs, "")
	}
	if r.dirs[up] == "" {
		r.dirs[up] = r.probe(strings.Repeat("../", up)+"x", "x")
	}
	if r.dirs[up] == "-" {
		return "", false
	}
	if hasFrag {
		return r.dirs[up] + p + "#" + frag, true
	}
	return r.dirs[up] + p, true
}

// probe resolves href with resolveLink and returns the result without the
// suffix tail, or "-" when it does not end with tail.
func (r *linkResolver) probe(href, tail string) string {
	u := resolveLink(r.base, href)
	if u == "" || !strings.HasSuffix(u, tail) || len(u) == len(tail) {
		return "-"
	}
	return u[:len(u)-len(tail)]
}

// fragmentSafe reports whether net/url writes the fragment s back as it
// is: unreserved characters, the sub-delimiters and ':' '@' that fragments
// keep (Javadoc's "#valueOf(char%5B%5D,int,int)"), and %XX escapes.
func fragmentSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isUnreserved(c):
		case c == '(' || c == ')' || c == '!' || c == '*' || c == ',' || c == ':' || c == ';' || c == '=' || c == '@' || c == '$' || c == '+':
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

// isUnreserved reports an RFC 3986 unreserved character: never escaped by
// net/url in a path or fragment.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
