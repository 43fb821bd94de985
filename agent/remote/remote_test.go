package remote

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestRemoteClient(t *testing.T) {
	var gotAuth, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/":
			if strings.Contains(r.Header.Get("Accept"), "application/json") && r.URL.Query().Get("yaml") == "" {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"base_prompt":"bp","few_shots":["Q: a\nAsk Func[echo]: a\nFunc[echo] says: a\nA: a"],"corpora":[],"conversational":false,"type":"code_shot"}`)
				return
			}
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			gotBody = string(b)
			var req protocolRequest
			json.Unmarshal(b, &req)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"text": "echo: " + req.Message.Text, "embeds": map[string]any{}}, "error": nil})
			return
		case "/missing":
			w.WriteHeader(404)
			io.WriteString(w, `{"message":{"text":"I'm sorry, Func[missing] is not defined.","embeds":{}},"error":{"code":"ERR_FUNC_NOT_DEFINED","message":"I'm sorry, Func[missing] is not defined.","details":{"func_name":"missing","available_funcs":["echo"]}}}`)
			return
		case "/crash":
			w.WriteHeader(500)
			io.WriteString(w, `{"detail":"Internal Server Error"}`)
			return
		case "/garbage":
			io.WriteString(w, `<html>`)
			return
		case "/forbidden":
			w.WriteHeader(403)
			return
		case "/big":
			w.Write([]byte(`{"message":{"text":"`))
			w.Write([]byte(strings.Repeat("x", maxRemoteBody+10)))
			return
		}
		w.WriteHeader(404)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/", HTTPClient: srv.Client(), Token: "default-token"}
	h, err := c.Handshake(context.Background())
	if err != nil || h.BasePrompt != "bp" || len(h.FewShots) != 1 || h.Type != "code_shot" {
		t.Fatalf("handshake = %+v, %v", h, err)
	}
	if gotAuth != "Bearer default-token" {
		t.Errorf("auth = %q", gotAuth)
	}
	msg, err := c.Call(context.Background(), "echo", kgagent.Message{Text: "hi", Embeds: map[string]kgagent.Embed{"1": {ContentType: "text/plain", URI: kgagent.DataURI([]byte("x"))}}}, "caller-token")
	if err != nil || msg.Text != "echo: hi" {
		t.Fatalf("call = %+v, %v", msg, err)
	}
	if gotAuth != "Bearer caller-token" || !strings.Contains(gotBody, `"message":{"text":"hi","embeds":{"1":{"content_type":"text/plain","uri":"data:base64,eA=="}}}`) {
		t.Errorf("request: auth %q body %s", gotAuth, gotBody)
	}
	tests := []struct {
		fn   string
		code string
		msg  string
	}{
		{"missing", kgagent.EFuncNotDefined, "I'm sorry, Func[missing] is not defined."},
		{"crash", kgagent.EUNAVAILABLE, "Internal Server Error"},
		{"garbage", kgagent.EUNAVAILABLE, "malformed reply"},
		{"forbidden", kgagent.EFORBIDDEN, "HTTP 403"},
		{"big", kgagent.ETOOLARGE, "more than"},
		{"bad-name", kgagent.EINVALID, "must match"},
	}
	for _, tt := range tests {
		_, err := c.Call(context.Background(), tt.fn, kgagent.Message{Text: "x"}, "")
		if kgagent.ErrorCode(err) != tt.code || !strings.Contains(kgagent.ErrorMessage(err), tt.msg) {
			t.Errorf("%s: err = %v, want %s %q", tt.fn, err, tt.code, tt.msg)
		}
		if tt.fn == "missing" {
			if d := kgagent.ErrorDetails(err); d["func_name"] != "missing" {
				t.Errorf("details = %v", d)
			}
		}
	}
	down := &Client{BaseURL: "http://127.0.0.1:1"}
	if _, err := down.Call(context.Background(), "x", kgagent.Message{}, ""); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("unreachable: %v", err)
	}
}

func TestRemoteHandshakeYAML(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		io.WriteString(w, "base_prompt: from yaml\nfew_shots:\n- |-\n  Q: Price for SYMBOL\n  Ask Func[quote]: SYMBOL\n  Func[quote] says: $1\n  A: $1\nconversational: true\ntype: code_shot\n")
	}))
	defer srv.Close()
	a, err := NewAgent(context.Background(), "quotes", srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handshake()
	if h.BasePrompt != "from yaml" || !h.Conversational || len(h.FewShots) != 1 || strings.Join(a.FuncNames(), ",") != "quote" {
		t.Errorf("remote agent = %+v %v", h, a.FuncNames())
	}
}

func TestNewAgentValidation(t *testing.T) {
	tests := []struct{ name, url, code string }{
		{"bad name", "http://127.0.0.1:1", kgagent.EINVALID},
		{"ok", "ftp://x", kgagent.EINVALID},
		{"ok", "not a url", kgagent.EINVALID},
		{"ok", "http://127.0.0.1:1", kgagent.EUNAVAILABLE},
	}
	for _, tt := range tests {
		if _, err := NewAgent(context.Background(), tt.name, tt.url, nil); kgagent.ErrorCode(err) != tt.code {
			t.Errorf("NewAgent(%q, %q) = %v, want %s", tt.name, tt.url, err, tt.code)
		}
	}
}
