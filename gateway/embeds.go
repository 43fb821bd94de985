package gateway

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/embeds"
)

// EmbedsPath is where the embed routes live: POST uploads, GET
// EmbedsPath/{id} serves a signed URL, DELETE EmbedsPath/{id} deletes. The
// embed store's BaseURL is the server's public URL plus this path.
const EmbedsPath = "/api/v1/embeds"

// EmbedStore keeps uploaded embeds (seed 002: immutable, passed by signed
// URL); corpus/embeds.Store implements it. Errors: ETOOLARGE over
// MaxBytes, EINVALID for a bad content type or collection, ENOTFOUND for an
// unknown id, EUNAVAILABLE when the disk fails.
type EmbedStore interface {
	// PutIn stores the content of r, tied to collection ("" for none).
	PutIn(ctx context.Context, collection, contentType string, r io.Reader) (embeds.Blob, error)
	Stat(id string) (embeds.Blob, error)
	Delete(id string) error
	// Sign returns a signed URL of blob id and when it expires.
	Sign(id string) (string, time.Time)
	// Handler serves signed URLs at "/<id>?exp=..&sig=..", writing its
	// errors (EFORBIDDEN for a bad or expired signature, ENOTFOUND for an
	// unknown blob) with writeError.
	Handler(writeError embeds.ErrorWriter) http.Handler
	MaxBytes() int64
}

// EmbedUpload is the answer to an upload: the stored blob, a signed URL
// that serves it, and the embed to put in a Fixie message.
type EmbedUpload struct {
	embeds.Blob
	URL       string        `json:"url"`
	ExpiresAt time.Time     `json:"expires_at"`
	Embed     kgagent.Embed `json:"embed"`
}

// ReasonInvalidMultipart is the "reason" detail of an upload whose
// multipart body cannot be read.
const ReasonInvalidMultipart = "invalid_multipart"

// multipartSlack bounds the multipart framing (boundaries, part headers,
// preamble) read around an upload's content.
const multipartSlack = 64 << 10

func (s *Server) embedRoutes() {
	s.handle("POST", EmbedsPath, ScopeIngest, s.uploadEmbed)
	// the signature is the credential: whoever holds a signed URL may read
	// the blob until it expires (that is how agents pass embeds along).
	s.handle("GET", EmbedsPath+"/{id}", scopePublic, s.serveEmbed)
	s.handle("DELETE", EmbedsPath+"/{id}", ScopeIngest, s.deleteEmbed)
}

// uploadEmbed stores the request's content: a raw body whose Content-Type
// is the embed's, or the first file part of a multipart/form-data body.
// ?collection= ties it to a collection (a key restricted to collections
// gets its first one), so deleting the collection deletes it.
func (s *Server) uploadEmbed(w http.ResponseWriter, r *http.Request) {
	st := s.b.Embeds
	if st == nil {
		s.writeError(w, r, unavailable("embed"))
		return
	}
	col, err := principalFrom(r.Context()).collection(r.URL.Query().Get("collection"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := st.MaxBytes()
	if r.ContentLength > limit+multipartSlack {
		s.writeError(w, r, embedTooLarge(limit))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit+multipartSlack)
	ct, content, err := DecodeEmbedUpload(r.Header.Get("Content-Type"), r.Body)
	if err != nil {
		s.writeError(w, r, uploadErr(err, limit))
		return
	}
	b, err := st.PutIn(r.Context(), col, ct, content)
	if err != nil {
		s.writeError(w, r, uploadErr(err, limit))
		return
	}
	uri, exp := st.Sign(b.ID)
	w.Header().Set("Location", uri)
	writeJSON(w, http.StatusCreated, EmbedUpload{Blob: b, URL: uri, ExpiresAt: exp, Embed: kgagent.Embed{ContentType: b.ContentType, URI: uri}})
}

// uploadErr maps the body limit's error to TOO_LARGE.
func uploadErr(err error, limit int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return embedTooLarge(limit)
	}
	return err
}

func embedTooLarge(limit int64) error {
	return &kgagent.Error{Code: kgagent.ETOOLARGE, Message: "embed is over the size limit", Details: map[string]any{"limit": limit}}
}

// DecodeEmbedUpload returns the content type and content of an upload body
// sent with Content-Type contentType: for multipart/form-data, the first
// part that is a file (or is named "file") with that part's Content-Type
// (application/octet-stream when it has none); for anything else, the body
// itself with contentType. Errors are EINVALID: a multipart body without a
// boundary, without a file part, or malformed.
func DecodeEmbedUpload(contentType string, body io.Reader) (string, io.Reader, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		return contentType, body, nil // the store checks the type itself
	}
	boundary := params["boundary"]
	if boundary == "" {
		return "", nil, invalid(ReasonInvalidMultipart, "", "multipart body without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return "", nil, invalid(ReasonMissingField, "file", "multipart upload has no file part")
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return "", nil, err
			}
			return "", nil, invalid(ReasonInvalidMultipart, "", "malformed multipart body: %v", err)
		}
		if part.FileName() == "" && part.FormName() != "file" {
			continue
		}
		ct := strings.TrimSpace(part.Header.Get("Content-Type"))
		if ct == "" {
			ct = "application/octet-stream"
		}
		return ct, part, nil
	}
}

func (s *Server) serveEmbed(w http.ResponseWriter, r *http.Request) {
	if s.b.Embeds == nil {
		s.writeError(w, r, unavailable("embed"))
		return
	}
	http.StripPrefix(EmbedsPath, s.b.Embeds.Handler(s.writeError)).ServeHTTP(w, r)
}

// deleteEmbed deletes a blob. A key restricted to collections may delete
// only blobs of those collections; others are NOT_FOUND to it.
func (s *Server) deleteEmbed(w http.ResponseWriter, r *http.Request) {
	st := s.b.Embeds
	if st == nil {
		s.writeError(w, r, unavailable("embed"))
		return
	}
	id := r.PathValue("id")
	b, err := st.Stat(id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c, err := principalFrom(r.Context()).collection(b.Collection); err != nil || c != b.Collection {
		s.writeError(w, r, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed"))
		return
	}
	if err := st.Delete(id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
