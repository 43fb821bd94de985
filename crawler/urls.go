package crawler

import (
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Trap guard limits. A URL over any of them is skipped as a likely crawler
// trap (calendars, session ids in paths, endless relative-link loops).
const (
	maxURLLength       = 2048
	maxSegmentRepeats  = 3  // the same path segment at most this many times
	maxPathSegments    = 32 // path depth
	maxQueryParameters = 10
)

// NormalizeURL returns the canonical form of an absolute http(s) URL used for
// dedupe and as the page's identity: scheme and host lower-cased, default
// port dropped, fragment dropped, dot segments resolved, empty path made "/",
// query parameters sorted (by key, keeping the order of repeated keys),
// utm_* tracking parameters and an empty query dropped, percent-escapes of
// unreserved characters decoded. It fails with EINVALID for anything else.
func NormalizeURL(raw string) (string, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", err
	}
	return normalizeParsed(u), nil
}

func parseHTTPURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "empty URL")
	}
	if len(raw) > maxURLLength {
		return nil, kgagent.Errorf(kgagent.EINVALID, "URL longer than %d bytes", maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "malformed URL %q: %v", text.Truncate(raw, 200), unwrapURLError(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "URL %q is not http or https", text.Truncate(raw, 200))
	}
	if u.Hostname() == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "URL %q has no host", text.Truncate(raw, 200))
	}
	if u.User != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "URL %q carries credentials; use the corpus bearer token", text.Truncate(u.Redacted(), 200))
	}
	return u, nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func normalizeParsed(u *url.URL) string {
	v := *u
	v.Fragment, v.RawFragment = "", ""
	v.Host = strings.ToLower(v.Host)
	if h, p, err := net.SplitHostPort(v.Host); err == nil {
		if (v.Scheme == "http" && p == "80") || (v.Scheme == "https" && p == "443") {
			v.Host = h
			if strings.Contains(h, ":") {
				v.Host = "[" + h + "]"
			}
		}
	}
	p := v.EscapedPath()
	if p == "" {
		p = "/"
	}
	trailing := strings.HasSuffix(p, "/")
	if strings.Contains(p, "/.") || strings.Contains(p, "//") {
		p = path.Clean(p)
		if trailing && p != "/" {
			p += "/"
		}
	}
	p = normalizeEscapes(p)
	if up, err := url.PathUnescape(p); err == nil {
		v.Path = up
		v.RawPath = ""
		if v.EscapedPath() != p {
			v.RawPath = p
		}
	}
	v.RawQuery = sortQuery(escapeQuery(v.RawQuery))
	v.ForceQuery = false
	return v.String()
}

// normalizeEscapes decodes percent-escapes of unreserved characters
// (RFC 3986 section 6.2.2.2) and upper-cases the hex digits of the others.
func normalizeEscapes(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			c := unhex(p[i+1])<<4 | unhex(p[i+2])
			if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
				b.WriteByte(c)
			} else {
				b.WriteString(strings.ToUpper(p[i : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// escapeQuery percent-encodes the bytes a query must not hold literally
// (spaces, controls, non-ASCII and a few delimiters), so that the
// normalised URL reads back the same.
func escapeQuery(q string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// sortQuery orders query parameters by key, stably, without re-encoding
// them, and drops utm_* tracking parameters.
func sortQuery(q string) string {
	if q == "" {
		return ""
	}
	all := strings.FieldsFunc(q, func(r rune) bool { return r == '&' })
	parts := all[:0]
	for _, p := range all {
		// Campaign tracking parameters never change a page.
		if !strings.HasPrefix(strings.ToLower(p), "utm_") {
			parts = append(parts, p)
		}
	}
	sort.SliceStable(parts, func(i, j int) bool {
		ki, _, _ := strings.Cut(parts[i], "=")
		kj, _, _ := strings.Cut(parts[j], "=")
		return ki < kj
	})
	return strings.Join(parts, "&")
}

// trapReason says why u looks like a crawler trap, or "" when it does not.
func trapReason(u string) string {
	if len(u) > maxURLLength {
		return "URL too long"
	}
	pu, err := url.Parse(u)
	if err != nil {
		return "unparsable URL"
	}
	segs := strings.Split(strings.Trim(pu.EscapedPath(), "/"), "/")
	if len(segs) > maxPathSegments {
		return "path too deep"
	}
	counts := map[string]int{}
	for _, s := range segs {
		if s == "" {
			continue
		}
		counts[s]++
		if counts[s] > maxSegmentRepeats {
			return "path segment repeated"
		}
	}
	if pu.RawQuery != "" && strings.Count(pu.RawQuery, "&")+1 > maxQueryParameters {
		return "too many query parameters"
	}
	return ""
}

// Scope decides which URLs belong to a corpus: exact pages, trailing-* prefix
// globs, minus the exclude patterns.
type Scope struct {
	exact    map[string]bool
	prefixes []string
	excludes []*regexp.Regexp
	hosts    map[string]bool
}

// Seed is one entry of a Spec's URLs after parsing.
type Seed struct {
	URL  string // normalised; for a glob, the prefix (which is crawled first)
	Glob bool   // a trailing *: follow links and sitemaps under URL
}

// NewScope parses a Spec's URLs and excludes. URLs that do not parse (a
// malformed URL, a * anywhere but at the end) come back as PageErrors with
// code EINVALID, so that one bad entry does not stop the others; a malformed
// exclude pattern fails the whole Scope with EINVALID.
func NewScope(urls, excludes []string) (*Scope, []Seed, []PageError, error) {
	s := &Scope{exact: map[string]bool{}, hosts: map[string]bool{}}
	for _, pat := range excludes {
		re, err := compileWildcard(pat)
		if err != nil {
			return nil, nil, nil, err
		}
		s.excludes = append(s.excludes, re)
	}
	var seeds []Seed
	var bad []PageError
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		glob := strings.HasSuffix(raw, "*")
		prefix := strings.TrimSuffix(raw, "*")
		if strings.Contains(prefix, "*") {
			bad = append(bad, PageError{URL: text.Truncate(raw, 300), Code: kgagent.EINVALID, Reason: "malformed glob: * is allowed only at the end"})
			continue
		}
		u, err := parseHTTPURL(prefix)
		if err != nil {
			bad = append(bad, PageError{URL: text.Truncate(raw, 300), Code: kgagent.ErrorCode(err), Reason: kgagent.ErrorMessage(err)})
			continue
		}
		n := normalizeParsed(u)
		if glob {
			// Normalisation adds "/" to an empty path; keep a partial
			// segment prefix such as http://h/docs/py as written.
			if u.Path == "" && u.RawQuery == "" {
				n = strings.TrimSuffix(n, "/") + "/"
			} else if !strings.HasSuffix(prefix, "/") {
				n = strings.TrimSuffix(n, "/")
			}
			s.prefixes = append(s.prefixes, n)
		} else {
			s.exact[n] = true
		}
		if nu, err := url.Parse(n); err == nil {
			s.hosts[nu.Host] = true
		}
		seeds = append(seeds, Seed{URL: n, Glob: glob})
	}
	if len(seeds) == 0 && len(bad) == 0 {
		return nil, nil, nil, kgagent.Errorf(kgagent.EINVALID, "corpus has no URLs")
	}
	return s, seeds, bad, nil
}

// compileWildcard turns an exclude pattern (* any text, ? one character)
// into an anchored regexp over the whole normalised URL.
func compileWildcard(pat string) (*regexp.Regexp, error) {
	pat = strings.TrimSpace(pat)
	if pat == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "empty exclude pattern")
	}
	if len(pat) > 1024 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "exclude pattern longer than 1024 bytes")
	}
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pat {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "malformed exclude pattern %q: %v", pat, err)
	}
	return re, nil
}

// Contains reports whether the normalised URL u is in the corpus: equal to an
// exact page or under a glob prefix, and matching no exclude pattern.
func (s *Scope) Contains(u string) bool {
	in := s.exact[u]
	for _, p := range s.prefixes {
		if strings.HasPrefix(u, p) {
			in = true
			break
		}
	}
	return in && !s.Excluded(u)
}

// Covers reports whether the normalised URL u is under the corpus's URLs (an
// exact page or a glob prefix), whatever the exclude patterns say: the
// pages a crawl of the corpus may speak for. Pages it does not cover belong
// to another spec feeding the same collection, and the crawl never removes
// them.
func (s *Scope) Covers(u string) bool {
	if s.exact[u] {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// Excluded reports whether u matches an exclude pattern.
func (s *Scope) Excluded(u string) bool {
	for _, re := range s.excludes {
		if re.MatchString(u) {
			return true
		}
	}
	return false
}

// Follows reports whether links found on pages may be followed into u: only
// glob prefixes are crawled; exact pages are fetched alone.
func (s *Scope) Follows(u string) bool {
	for _, p := range s.prefixes {
		if strings.HasPrefix(u, p) {
			return !s.Excluded(u)
		}
	}
	return false
}

// redirectAllowed reports whether a redirect from one normalised URL to
// another stays inside the corpus. An exact page may also move to itself
// with a trailing slash added or dropped.
func (s *Scope) redirectAllowed(from, to string) bool {
	if s.Contains(to) {
		return true
	}
	if s.exact[from] && !s.Excluded(to) {
		return strings.TrimSuffix(from, "/") == strings.TrimSuffix(to, "/")
	}
	return false
}

// hostAllowed reports whether host (host[:port] as in a URL) is one of the
// corpus's hosts, the ones the bearer token may be sent to.
func (s *Scope) hostAllowed(host string) bool { return s.hosts[strings.ToLower(host)] }

// normCache memoizes NormalizeURL for the links of one crawl: the pages of
// a site link to the same few thousand pages over and over, mostly with
// different #fragments (the Python docs: 96,563 links, 4,207 pages). It is
// safe for concurrent use.
type normCache struct {
	mu sync.Mutex
	m  map[string]normResult
}

type normResult struct {
	url string
	ok  bool
}

// maxNormCache bounds the entries of a normCache; past it, lookups still
// hit but new URLs are normalised without being kept.
const maxNormCache = 1 << 16

// normalize is NormalizeURL(raw), with ok for a nil error.
func (c *normCache) normalize(raw string) (string, bool) {
	key, ok := normKey(raw)
	if !ok {
		n, err := NormalizeURL(raw)
		return n, err == nil
	}
	c.mu.Lock()
	r, hit := c.m[key]
	c.mu.Unlock()
	if hit {
		return r.url, r.ok
	}
	n, err := NormalizeURL(key)
	r = normResult{url: n, ok: err == nil}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]normResult{}
	}
	if len(c.m) < maxNormCache {
		c.m[key] = r
	}
	c.mu.Unlock()
	return r.url, r.ok
}

// normKey returns raw without its #fragment when NormalizeURL gives the
// same for both: raw is printable ASCII (nothing for TrimSpace to trim, on
// either side of the '#'), within maxURLLength, and its fragment holds no
// '%' (the only thing url.Parse rejects in a fragment, which
// normalisation then drops).
func normKey(raw string) (string, bool) {
	if len(raw) > maxURLLength {
		return "", false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	key, frag, _ := strings.Cut(raw, "#")
	if strings.IndexByte(frag, '%') >= 0 {
		return "", false
	}
	return key, true
}
