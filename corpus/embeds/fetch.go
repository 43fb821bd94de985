package embeds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/netguard"
)

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func readErr(err error, what string) error {
	if c := kgagent.ErrorCode(err); c == kgagent.ECANCELED || c == kgagent.ETIMEOUT {
		return err
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s", what)
}

func tooLarge(limit int64) error {
	return &kgagent.Error{Code: kgagent.ETOOLARGE, Message: fmt.Sprintf("embed is over %d bytes", limit), Details: map[string]any{"limit": limit}}
}

// IsText reports whether a content type names text that fixie_query_embed
// can search: text/*, JSON, XML, YAML, JavaScript and their +json/+xml kin.
func IsText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+yaml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/x-ndjson", "application/toml", "application/sql":
		return true
	}
	return false
}

// Reader reads the content of embeds. The zero value reads data URIs and
// http(s) URLs with netguard's client (no loopback, private or link-local
// address is ever dialled) up to DefaultMaxBytes.
//
// With a Store, a URL under the store's BaseURL whose signature verifies is
// read from disk, never over the network; an expired one is EFORBIDDEN. A
// URL under BaseURL that this store did not sign, or whose blob it does not
// hold, may come from another instance behind the same public URL, so it is
// fetched over HTTP like any other URL and that server decides.
type Reader struct {
	Store      *Store       // when set, its signed URLs are read from disk
	HTTPClient *http.Client // for other http(s) URLs; nil: netguard.DefaultClient()
	MaxBytes   int64        // default: Store's limit, else DefaultMaxBytes
}

func (rd *Reader) max() int64 {
	if rd.MaxBytes > 0 {
		return rd.MaxBytes
	}
	if rd.Store != nil {
		return rd.Store.cfg.MaxBytes
	}
	return DefaultMaxBytes
}

// Read returns an embed's bytes. Errors: EINVALID for a URI that is neither
// a data URI nor http(s), or undecodable; ETOOLARGE over the limit;
// EFORBIDDEN for an expired signed URL of the store or a URL that answers
// 401/403; ENOTFOUND when the URL answers 404; EUNAVAILABLE when it cannot
// be fetched.
func (rd *Reader) Read(ctx context.Context, e kgagent.Embed) ([]byte, error) {
	limit := rd.max()
	uri := strings.TrimSpace(e.URI)
	switch {
	case strings.HasPrefix(uri, "data:"):
		if i := strings.IndexByte(uri, ','); i >= 0 && int64(len(uri)-i-1)/4*3 > limit+3 {
			return nil, tooLarge(limit)
		}
		b, err := kgagent.DecodeDataURI(uri)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > limit {
			return nil, tooLarge(limit)
		}
		return b, nil
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
	default:
		return nil, kgagent.Errorf(kgagent.EINVALID, "embed URI must be a data URI or http(s) URL")
	}
	if rd.Store != nil {
		id, signedHere, err := rd.Store.parseSignedURL(uri)
		switch {
		case err == nil:
			if _, f, err := rd.Store.Open(id); err == nil {
				defer f.Close()
				return readLimited(ctx, f, limit)
			}
		case signedHere:
			return nil, err // our signature, expired
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "bad embed URL")
	}
	hc := rd.HTTPClient
	if hc == nil {
		hc = netguard.DefaultClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ke *kgagent.Error
		if errors.Is(err, netguard.ErrBlocked) && errors.As(err, &ke) {
			return nil, kgagent.WrapError(ke.Code, err, "embed URL refused: %s", ke.Message)
		}
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "fetch embed")
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "embed URL answered 404")
	case resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusUnauthorized:
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "embed URL answered %d", resp.StatusCode)
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		return nil, tooLarge(limit)
	case resp.StatusCode/100 != 2:
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "embed URL answered %d", resp.StatusCode)
	case resp.ContentLength > limit:
		return nil, tooLarge(limit)
	}
	return readLimited(ctx, resp.Body, limit)
}

func readLimited(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(&ctxReader{ctx, io.LimitReader(r, limit+1)})
	if err != nil {
		return nil, readErr(err, "read embed")
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(limit)
	}
	return b, nil
}

// ReadText returns an embed's content as text. Errors: those of Read, and
// EUNSUPPORTED for a binary content type (images, audio, PDFs...) or content
// that is not UTF-8 text; an empty content type is accepted when the bytes
// are UTF-8 text.
func (rd *Reader) ReadText(ctx context.Context, e kgagent.Embed) (string, error) {
	if e.ContentType != "" && !IsText(e.ContentType) {
		return "", &kgagent.Error{Code: kgagent.EUNSUPPORTED, Message: fmt.Sprintf("embed of type %s cannot be read as text", e.ContentType), Details: map[string]any{"content_type": e.ContentType}}
	}
	b, err := rd.Read(ctx, e)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
		return "", kgagent.Errorf(kgagent.EUNSUPPORTED, "embed content is not UTF-8 text")
	}
	return string(b), nil
}
