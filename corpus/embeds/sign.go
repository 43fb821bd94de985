package embeds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
)

// Embed returns an Embed for a stored blob: its content type and a signed
// URL that expires after the configured TTL.
func (s *Store) Embed(b Blob) kgagent.Embed {
	return kgagent.Embed{ContentType: b.ContentType, URI: s.SignedURL(b.ID, s.cfg.TTL)}
}

// Sign returns a signed URL of blob id valid for the configured TTL, and
// when it expires.
func (s *Store) Sign(id string) (string, time.Time) {
	exp := s.cfg.Now().Add(s.cfg.TTL).Unix()
	return s.signed(id, exp), time.Unix(exp, 0).UTC()
}

func (s *Store) signed(id string, exp int64) string {
	return fmt.Sprintf("%s/%s?exp=%d&sig=%s", s.BaseURL(), id, exp, hex.EncodeToString(s.mac(id, exp)))
}

func (s *Store) mac(id string, exp int64) []byte {
	var m hash.Hash = hmac.New(sha256.New, s.cfg.Secret)
	fmt.Fprintf(m, "%s\n%d", id, exp)
	return m.Sum(nil)
}

// SignedURL returns BaseURL/<id>?exp=<unix seconds>&sig=<hex HMAC>.
func (s *Store) SignedURL(id string, ttl time.Duration) string {
	if ttl <= 0 {
		ttl = s.cfg.TTL
	}
	return s.signed(id, s.cfg.Now().Add(ttl).Unix())
}

// Verify checks the signature and expiry of a signed URL's path tail (the
// blob ID) and query, returning the ID. Errors: EFORBIDDEN for a missing,
// malformed, wrong or expired signature; ENOTFOUND for a malformed ID.
func (s *Store) Verify(id string, query url.Values) (string, error) {
	id, _, err := s.verify(id, query)
	return id, err
}

// verify is Verify, also reporting whether the signature was good (so the
// failure, if any, is the expiry).
func (s *Store) verify(id string, query url.Values) (string, bool, error) {
	if !validID(id) {
		return "", false, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	exp, err := strconv.ParseInt(query.Get("exp"), 10, 64)
	if err != nil {
		return "", false, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL is not signed", Details: map[string]any{"reason": "unsigned"}}
	}
	sig, err := hex.DecodeString(query.Get("sig"))
	if err != nil || !hmac.Equal(sig, s.mac(id, exp)) {
		return "", false, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL signature is not valid", Details: map[string]any{"reason": "bad_signature"}}
	}
	if s.cfg.Now().Unix() > exp {
		return "", true, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL has expired", Details: map[string]any{"reason": "expired"}}
	}
	return id, true, nil
}

// ParseSignedURL verifies a full signed URL issued by this store and
// returns the blob ID. Errors as Verify, plus EINVALID for a URL that is
// not under BaseURL.
func (s *Store) ParseSignedURL(raw string) (string, error) {
	id, _, err := s.parseSignedURL(raw)
	return id, err
}

func (s *Store) parseSignedURL(raw string) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "bad embed URL")
	}
	base, _ := url.Parse(s.BaseURL())
	if base == nil || base.Host == "" || u.Scheme != base.Scheme || u.Host != base.Host {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "not an embed URL of this store")
	}
	prefix := strings.TrimRight(base.Path, "/") + "/"
	if !strings.HasPrefix(u.Path, prefix) || strings.Contains(u.Path[len(prefix):], "/") {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "not an embed URL of this store")
	}
	return s.verify(u.Path[len(prefix):], u.Query())
}

// IsOwnURL reports whether raw points under this store's BaseURL.
func (s *Store) IsOwnURL(raw string) bool {
	_, err := s.ParseSignedURL(raw)
	return kgagent.ErrorCode(err) != kgagent.EINVALID
}
