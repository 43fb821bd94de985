package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/kgagent/kgagent"
	"go.yaml.in/yaml/v3"
)

func getRaw(t *testing.T, url, accept, token string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

func TestFixieHandshake(t *testing.T) {
	f := newFixture(t, Config{})
	status, ctype, data := getRaw(t, f.ts.URL+"/agents/docs/", "", "")
	if status != 200 || ctype != "application/yaml" {
		t.Fatalf("yaml: %d %s %s", status, ctype, data)
	}
	var y map[string]any
	if err := yaml.Unmarshal(data, &y); err != nil {
		t.Fatal(err)
	}
	if y["base_prompt"] != "I answer docs questions." || y["type"] != "code_shot" || len(y["few_shots"].([]any)) != 1 {
		t.Errorf("yaml handshake = %v", y)
	}
	status, ctype, data = getRaw(t, f.ts.URL+"/agents/docs/", "application/json", "")
	var j map[string]any
	if err := json.Unmarshal(data, &j); err != nil || status != 200 || ctype != "application/json" {
		t.Fatalf("json: %d %s %s", status, ctype, data)
	}
	for _, k := range []string{"base_prompt", "few_shots", "corpora", "conversational", "response_model", "type"} {
		if _, ok := j[k]; !ok {
			t.Errorf("json handshake lacks %q: %s", k, data)
		}
	}
	if status, _, _ := getRaw(t, f.ts.URL+"/agents/nope/", "application/json", ""); status != 404 {
		t.Errorf("unknown agent: %d", status)
	}
}

func TestFixieFuncCalls(t *testing.T) {
	f := newFixture(t, Config{})
	dataURI := kgagent.DataURI([]byte("hello"))
	tests := []struct {
		name, path, body string
		status           int
		code             string
		check            func(t *testing.T, m map[string]any)
	}{
		{"echo", "/agents/docs/echo", `{"message":{"text":"hi"}}`, 200, "", func(t *testing.T, m map[string]any) {
			msg := m["message"].(map[string]any)
			if msg["text"] != "hi" {
				t.Errorf("text = %v", msg["text"])
			}
			if e, ok := msg["embeds"].(map[string]any); !ok || len(e) != 0 {
				t.Errorf("embeds = %#v, want {}", msg["embeds"])
			}
			if v, ok := m["error"]; !ok || v != nil {
				t.Errorf("error = %#v, want null", v)
			}
		}},
		{"data uri embed", "/agents/docs/echo", `{"message":{"text":"see #1","embeds":{"1":{"content_type":"text/plain","uri":"` + dataURI + `"}}}}`, 200, "", func(t *testing.T, m map[string]any) {
			e := m["message"].(map[string]any)["embeds"].(map[string]any)["1"].(map[string]any)
			if e["uri"] != dataURI {
				t.Errorf("embed = %v", e)
			}
		}},
		{"unknown func", "/agents/docs/nothing", `{"message":{"text":"x"}}`, 404, "ERR_FUNC_NOT_DEFINED", func(t *testing.T, m map[string]any) {
			if m["message"].(map[string]any)["text"] != "I'm sorry, Func[nothing] is not defined." {
				t.Errorf("text = %v", m["message"])
			}
			d := m["error"].(map[string]any)["details"].(map[string]any)
			if d["func_name"] != "nothing" || len(d["available_funcs"].([]any)) != 3 {
				t.Errorf("details = %v", d)
			}
		}},
		{"unhandled", "/agents/docs/fail", `{"message":{"text":"x"}}`, 500, "ERR_AGENT_UNHANDLED_EXCEPTION", func(t *testing.T, m map[string]any) {
			if strings.Contains(jsonString(m), "secret") {
				t.Errorf("cause leaked: %v", m)
			}
		}},
		{"panic", "/agents/docs/panic", `{"message":{"text":"x"}}`, 500, "ERR_AGENT_UNHANDLED_EXCEPTION", nil},
		{"malformed json", "/agents/docs/echo", `{"message":`, 422, "INVALID_ARGUMENT", nil},
		{"no message", "/agents/docs/echo", `{}`, 422, "INVALID_ARGUMENT", nil},
		{"text wrong type", "/agents/docs/echo", `{"message":{"text":5}}`, 422, "INVALID_ARGUMENT", nil},
		{"bad embed uri", "/agents/docs/echo", `{"message":{"text":"x","embeds":{"a":{"content_type":"x","uri":"ftp://x"}}}}`, 422, "INVALID_ARGUMENT", nil},
		{"bad data uri", "/agents/docs/echo", `{"message":{"text":"x","embeds":{"a":{"content_type":"x","uri":"data:base64,!!"}}}}`, 422, "INVALID_ARGUMENT", nil},
		{"unknown agent", "/agents/other/echo", `{"message":{"text":"x"}}`, 404, "NOT_FOUND", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, "POST", f.ts.URL+tt.path, "", tt.body)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (%v)", status, tt.status, m)
			}
			if tt.code != "" && errCode(m) != tt.code {
				t.Errorf("code = %q, want %q (%v)", errCode(m), tt.code, m)
			}
			if _, ok := m["message"].(map[string]any); !ok {
				t.Errorf("no message object: %v", m)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

// jwks writes a JWKS with pub under kid and returns its path.
func jwks(t *testing.T, kid string, pub ed25519.PublicKey) []byte {
	doc := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "ignored", "n": "x", "e": "AQAB"},
		{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": base64.RawURLEncoding.EncodeToString(pub), "use": "sig", "alg": "EdDSA"},
	}}
	data, _ := json.Marshal(doc)
	return data
}

func sign(t *testing.T, key ed25519.PrivateKey, kid string, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFixieJWT(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	pub2, priv2, _ := ed25519.GenerateKey(rand.Reader)
	dir := t.TempDir()
	file := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(file, jwks(t, "k1", pub), 0o600); err != nil {
		t.Fatal(err)
	}
	// A second key is only at the JWKS URL.
	keysrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(jwks(t, "k2", pub2)) }))
	defer keysrv.Close()
	f := newFixture(t, Config{JWT: JWTConfig{JWKSFile: file, JWKSURL: keysrv.URL, Audience: []string{"https://kgagent.example", "other"}}})
	exp := time.Now().Add(time.Hour).Unix()
	body := `{"message":{"text":"hi"}}`
	tests := []struct {
		name, token string
		status      int
		text        string
	}{
		{"user token", sign(t, priv, "k1", jwt.MapClaims{"sub": "u1", "aid": "agent-7", "aud": "https://kgagent.example", "exp": exp}), 200, "hi user=u1 aid=agent-7"},
		{"anonymous (no sub)", sign(t, priv, "k1", jwt.MapClaims{"aud": []string{"other"}, "exp": exp}), 200, "hi"},
		{"key from JWKS URL", sign(t, priv2, "k2", jwt.MapClaims{"sub": "u2", "aud": "other", "exp": exp}), 200, "hi user=u2"},
		{"missing token", "", 403, ""},
		{"garbage", "not.a.jwt", 403, ""},
		{"wrong key", sign(t, otherPriv, "k1", jwt.MapClaims{"sub": "u1", "aud": "other", "exp": exp}), 403, ""},
		{"unknown kid", sign(t, priv, "k9", jwt.MapClaims{"sub": "u1", "aud": "other", "exp": exp}), 403, ""},
		{"wrong audience", sign(t, priv, "k1", jwt.MapClaims{"sub": "u1", "aud": "evil", "exp": exp}), 403, ""},
		{"expired", sign(t, priv, "k1", jwt.MapClaims{"sub": "u1", "aud": "other", "exp": time.Now().Add(-time.Hour).Unix()}), 403, ""},
		{"no exp", sign(t, priv, "k1", jwt.MapClaims{"sub": "u1", "aud": "other"}), 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", tt.token, body)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (%v)", status, tt.status, m)
			}
			if tt.status == 200 && m["message"].(map[string]any)["text"] != tt.text {
				t.Errorf("text = %v, want %q", m["message"], tt.text)
			}
		})
	}
	// HS256 tokens (alg confusion) are refused.
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u", "aud": "other", "exp": exp})
	hs.Header["kid"] = "k1"
	hsTok, _ := hs.SignedString([]byte(pub))
	if status, _, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", hsTok, body); status != 403 {
		t.Errorf("HS256 token: %d", status)
	}
	if status, _, _ := getRaw(t, f.ts.URL+"/agents/docs/", "", ""); status != 403 {
		t.Errorf("handshake without token: %d", status)
	}
}

func TestParseJWKS(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	keys, err := ParseJWKS(jwks(t, "a", pub))
	if err != nil || len(keys) != 1 || !keys["a"].Equal(pub) {
		t.Fatalf("keys %v err %v", keys, err)
	}
	for _, bad := range []string{`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"short"}]}`, `{"keys":`, `[]`} {
		if _, err := ParseJWKS([]byte(bad)); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func FuzzDecodeFuncRequest(f *testing.F) {
	for _, s := range []string{`{"message":{"text":"hi"}}`, `{"message":{"text":"x","embeds":{"1":{"content_type":"text/plain","uri":"data:base64,aGk="}}}}`, `{}`, `{"message":null}`, "\xff", `{"message":{"embeds":{"a":{"uri":"ftp://"}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := DecodeFuncRequest(data)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %q for %q", kgagent.ErrorCode(err), data)
			}
			return
		}
		for _, e := range msg.Embeds {
			if !strings.HasPrefix(e.URI, "http") && !strings.HasPrefix(e.URI, "data:") {
				t.Fatalf("accepted embed uri %q", e.URI)
			}
		}
	})
}
