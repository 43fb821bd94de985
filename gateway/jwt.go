package gateway

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// JWTConfig turns on verification of EdDSA JWTs (the Fixie platform's
// tokens): keys come from a JWKS file or URL and are chosen by kid; the
// audience must be one of Audience (when set); exp is required. The claim
// aid is the calling agent; a token without sub is anonymous.
type JWTConfig struct {
	JWKSFile   string        `json:"jwks_file,omitempty" yaml:"jwks_file,omitempty"`
	JWKSURL    string        `json:"jwks_url,omitempty" yaml:"jwks_url,omitempty"`
	Audience   []string      `json:"audience,omitempty" yaml:"audience,omitempty"`
	HTTPClient *http.Client  `json:"-" yaml:"-"` // for JWKSURL; default a 10s-timeout client
	Refresh    time.Duration `json:"-" yaml:"-"` // least time between JWKS fetches; default 1m
}

func (c JWTConfig) enabled() bool { return c.JWKSFile != "" || c.JWKSURL != "" }

// JWK is one key of a JWKS; only OKP/Ed25519 keys are used.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	X   string `json:"x"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// ParseJWKS reads a JWKS document and returns its Ed25519 public keys by
// kid. Keys of other types are skipped; a malformed Ed25519 key is an
// EINVALID error.
func ParseJWKS(data []byte) (map[string]ed25519.PublicKey, error) {
	var doc struct {
		Keys []JWK `json:"keys"`
	}
	if err := decodeJSON(data, &doc); err != nil {
		return nil, err
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, kgagent.Errorf(kgagent.EINVALID, "jwk %q: x is not a base64url Ed25519 public key", k.Kid)
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}

type jwtVerifier struct {
	cfg     JWTConfig
	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Minute
	}
	v := &jwtVerifier{cfg: cfg, keys: map[string]ed25519.PublicKey{}}
	if cfg.JWKSFile != "" {
		data, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "cannot read JWKS file")
		}
		keys, err := ParseJWKS(data)
		if err != nil {
			return nil, err
		}
		v.keys = keys
	}
	return v, nil
}

// key returns the key for kid, fetching the JWKS URL when kid is unknown (at
// most once per Refresh).
func (v *jwtVerifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	if v.cfg.JWKSURL == "" || time.Since(v.fetched) < v.cfg.Refresh {
		return nil, kgagent.Errorf(kgagent.EUNAUTH, "unknown key id %q", kid)
	}
	v.fetched = time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "bad JWKS URL")
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot fetch JWKS")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "cannot fetch JWKS: status %d", resp.StatusCode)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, err
	}
	for id, k := range keys {
		v.keys[id] = k
	}
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	return nil, kgagent.Errorf(kgagent.EUNAUTH, "unknown key id %q", kid)
}

// verify checks token and returns its caller. Errors: EUNAUTH.
func (v *jwtVerifier) verify(ctx context.Context, token string) (agent.Caller, error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithExpirationRequired(), jwt.WithLeeway(30 * time.Second)}
	if len(v.cfg.Audience) > 0 {
		opts = append(opts, jwt.WithAudience(v.cfg.Audience...))
	}
	claims := jwt.MapClaims{}
	var keyErr error
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := v.key(ctx, kid)
		keyErr = err
		return k, err
	}, opts...)
	if err != nil {
		if kgagent.ErrorCode(keyErr) == kgagent.EUNAVAILABLE {
			return agent.Caller{}, keyErr
		}
		return agent.Caller{}, kgagent.WrapError(kgagent.EUNAUTH, err, "invalid token")
	}
	// sub and aid, when present, must be strings: a numeric sub is not
	// "no sub" (that would make a user's token anonymous), it is a bad token.
	sub, err := stringClaim(claims, "sub")
	if err != nil {
		return agent.Caller{}, err
	}
	aid, err := stringClaim(claims, "aid")
	if err != nil {
		return agent.Caller{}, err
	}
	return agent.Caller{UserID: sub, AgentID: aid, Token: token, Anonymous: sub == ""}, nil
}

// stringClaim returns claim name of claims: "" when absent (or null),
// EUNAUTH when present with another type than a string.
func stringClaim(claims jwt.MapClaims, name string) (string, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", kgagent.Errorf(kgagent.EUNAUTH, "invalid token: claim %q must be a string", name)
	}
	return s, nil
}
