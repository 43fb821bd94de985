package crawler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Media types Extract accepts. Anything else is EUNSUPPORTED and the crawler
// counts the page as skipped.
const (
	MediaHTML     = "text/html"
	MediaXHTML    = "application/xhtml+xml"
	MediaPlain    = "text/plain"
	MediaMarkdown = "text/markdown"
)

// maxWalkDepth bounds the recursion over the HTML tree; deeper content is
// flattened into text so that a hostile page cannot blow the stack.
const maxWalkDepth = 256

// MediaType returns the lower-cased media type of a Content-Type header value
// without parameters, sniffing body when the header is empty or unparsable.
func MediaType(contentType string, body []byte) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	return strings.ToLower(mt)
}

// IsTextMedia reports whether Extract accepts the media type mt (as returned
// by MediaType).
func IsTextMedia(mt string) bool {
	switch mt {
	case MediaHTML, MediaXHTML, MediaPlain, MediaMarkdown, "text/x-markdown":
		return true
	}
	return false
}

// Extract turns a fetched page into a kgagent.Document: title, canonical URL,
// language, the main content split into sections along its heading hierarchy
// (with the #anchor of each section), code blocks verbatim, tables as rows,
// definition lists as terms, outgoing links made absolute, and the content
// hash. pageURL must be absolute; contentType is the Content-Type header (the
// body is sniffed when it is empty). HTML, text/plain and text/markdown are
// accepted (text/plain served for a .md URL is read as Markdown). body must
// not change until Extract returns (the parse reads it in place); the
// Document shares none of it.
//
// Errors: EINVALID for a bad pageURL, a body that is not valid text in its
// declared charset (invalid UTF-8, binary garbage) or that holds no text;
// EUNSUPPORTED for a media type that is not text; EFORBIDDEN for a page
// whose <meta name="robots"> says noindex (nofollow drops its links). Collection, ETag,
// LastModified and FetchedAt are left for the caller to fill in.
func Extract(pageURL, contentType string, body []byte) (kgagent.Document, error) {
	base, err := url.Parse(pageURL)
	if err != nil || !base.IsAbs() || base.Host == "" {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EINVALID, "page URL %q is not an absolute URL", text.Truncate(pageURL, 200))
	}
	mt := MediaType(contentType, body)
	if !IsTextMedia(mt) {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EUNSUPPORTED, "content type %q is not HTML, plain text or Markdown", mt)
	}
	text, err := decodeText(body, contentType, mt)
	if err != nil {
		return kgagent.Document{}, err
	}
	var doc kgagent.Document
	switch {
	case mt == MediaHTML || mt == MediaXHTML:
		doc, err = extractHTML(base, text)
		mt = MediaHTML
	case mt == MediaMarkdown || mt == "text/x-markdown" || isMarkdownPath(base.Path):
		doc = extractMarkdown(base, string(text))
		mt = MediaMarkdown
	default:
		doc = extractPlain(base, string(text))
		mt = MediaPlain
	}
	if err != nil {
		return kgagent.Document{}, err
	}
	doc.URL = base.String()
	doc.ContentType = mt
	if doc.CanonicalURL == "" {
		doc.CanonicalURL = doc.URL
	}
	if doc.Title == "" {
		doc.Title = titleFromURL(base)
	}
	for i := range doc.Sections {
		if doc.Sections[i].Level == 0 && doc.Sections[i].Heading == "" {
			doc.Sections[i].Heading = doc.Title
		}
		if len(doc.Sections[i].HeadingPath) == 0 {
			doc.Sections[i].HeadingPath = []string{doc.Sections[i].Heading}
		}
	}
	if !hasText(doc) {
		return kgagent.Document{}, kgagent.Errorf(kgagent.EINVALID, "page has no text content")
	}
	doc.ContentHash = contentHash(doc)
	return doc, nil
}

var metaCharset = regexp.MustCompile(`(?i)<meta[^>]{0,200}charset=["']?([a-z0-9_:.-]{1,40})`)

// decodeText returns body as valid UTF-8: UTF-8 as is (body itself, not a
// copy: the caller must not change it), other declared or meta-declared
// charsets converted, anything else rejected.
func decodeText(body []byte, contentType, mt string) ([]byte, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "page body is binary (holds NUL bytes)")
	}
	if utf8.Valid(body) {
		return body, nil
	}
	var name string
	var certain bool
	if mt == MediaHTML || mt == MediaXHTML {
		_, name, certain = charset.DetermineEncoding(body, contentType)
		if !certain {
			if m := metaCharset.FindSubmatch(body[:min(len(body), 1024)]); m != nil {
				name, certain = string(m[1]), true
			}
		}
	} else if _, params, err := mime.ParseMediaType(contentType); err == nil && params["charset"] != "" {
		name, certain = params["charset"], true
	}
	if certain && name != "" && !strings.EqualFold(name, "utf-8") {
		if enc, _ := charset.Lookup(name); enc != nil {
			out, err := enc.NewDecoder().Bytes(body)
			if err == nil && utf8.Valid(out) {
				return out, nil
			}
		}
	}
	return nil, kgagent.Errorf(kgagent.EINVALID, "page body is not valid UTF-8 and declares no other charset")
}

func titleFromURL(u *url.URL) string {
	p := strings.TrimSuffix(u.Path, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return u.Host
	}
	if s, err := url.PathUnescape(p); err == nil && utf8.ValidString(s) {
		return s
	}
	return p
}

func hasText(doc kgagent.Document) bool {
	for _, s := range doc.Sections {
		for _, b := range s.Blocks {
			if strings.TrimSpace(b.Text) != "" {
				return true
			}
		}
	}
	return false
}

// contentHash is the hex sha256 of the extracted text: title, headings and
// blocks, so that markup-only changes do not count as changes.
func contentHash(doc kgagent.Document) string {
	n := len(doc.Title) + 1
	for _, s := range doc.Sections {
		n += len(s.Anchor) + len(s.Heading) + 2
		for _, b := range s.Blocks {
			n += len(b.Kind) + len(b.Text) + 2
		}
	}
	buf := make([]byte, 0, n)
	buf = append(append(buf, doc.Title...), 0)
	for _, s := range doc.Sections {
		buf = append(append(buf, s.Anchor...), 1)
		buf = append(append(buf, s.Heading...), 0)
		for _, b := range s.Blocks {
			buf = append(append(buf, b.Kind...), 2)
			buf = append(append(buf, b.Text...), 0)
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}
