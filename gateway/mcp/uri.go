package mcp

import (
	"net/url"
	"strings"

	"github.com/kgagent/kgagent"
)

// Resource URIs. A collection is kgagent://collections/{collection}; a
// page or section is kgagent://collections/{collection}/documents/{url},
// where {url} is the page URL (with #anchor for one section) with every
// byte but RFC 3986's unreserved ones percent-encoded, as the URI
// templates' simple expansion writes it.
const (
	uriPrefix           = "kgagent://collections/"
	collectionTemplate  = uriPrefix + "{collection}"
	documentTemplate    = uriPrefix + "{collection}/documents/{url}"
	documentsPathMarker = "/documents/"
)

// CollectionURI is the resource URI of a collection.
func CollectionURI(collection string) string { return uriPrefix + escape(collection) }

// DocumentURI is the resource URI of a page (url without a fragment) or of
// one section (url#anchor) of collection.
func DocumentURI(collection, pageURL string) string {
	return CollectionURI(collection) + documentsPathMarker + escape(pageURL)
}

// parseURI splits a kgagent:// resource URI into its collection and, for a
// document, the page URL and section anchor. Errors: EINVALID.
func parseURI(uri string) (collection, docURL, anchor string, isDoc bool, err error) {
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	if !ok {
		return "", "", "", false, kgagent.Errorf(kgagent.EINVALID, "not a kgagent collection URI: %q", uri)
	}
	col, doc, isDoc := strings.Cut(rest, documentsPathMarker)
	if collection, err = url.PathUnescape(col); err != nil || collection == "" || strings.ContainsAny(col, "/#?") {
		return "", "", "", false, kgagent.Errorf(kgagent.EINVALID, "bad collection in %q", uri)
	}
	if !isDoc {
		return collection, "", "", false, nil
	}
	page, err := url.PathUnescape(doc)
	if err != nil || strings.ContainsAny(doc, "/#?") {
		return "", "", "", false, kgagent.Errorf(kgagent.EINVALID, "bad document URL in %q", uri)
	}
	docURL, anchor, _ = strings.Cut(page, "#")
	if docURL == "" {
		return "", "", "", false, kgagent.Errorf(kgagent.EINVALID, "no document URL in %q", uri)
	}
	return collection, docURL, anchor, true, nil
}

// escape percent-encodes every byte that is not unreserved (RFC 3986).
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
