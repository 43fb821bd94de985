package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/oauth"
)

// TestThroughManager runs the seed-001 flow the way an agent's funcs see it:
// a func asks for the caller's token, gets none and returns the
// authorization URL; the user consents; the provider's redirect reaches the
// `_oauth` func; the func then calls the provider's API with the token.
func TestThroughManager(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	providers := oauth.Providers{"cal": f.prov}
	m, err := agent.New(agent.Config{UserStorage: f.st, OAuth: providers.For})
	if err != nil {
		t.Fatal(err)
	}
	whoami := agent.Func{Name: "whoami", Handler: agent.MessageFunc(func(ctx context.Context, call agent.FuncCall) (kgagent.Message, error) {
		if call.OAuth == nil {
			return kgagent.Message{}, kgagent.Errorf(kgagent.EINTERNAL, "no OAuth handler")
		}
		tok, err := call.OAuth.UserToken(ctx)
		if err != nil {
			return kgagent.Message{}, err
		}
		if tok == nil {
			u, err := call.OAuth.AuthorizationURL(ctx)
			return kgagent.Message{Text: u}, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.idp.URL+"/userinfo", nil)
		tok.SetAuthHeader(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return kgagent.Message{}, err
		}
		defer resp.Body.Close()
		var info map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&info)
		return kgagent.Message{Text: "you are " + info["sub"]}, nil
	})}
	a, err := agent.NewCodeShotAgent(agent.AgentConfig{Name: "cal", Funcs: []agent.Func{whoami, f.prov.CallbackFunc()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(a); err != nil {
		t.Fatal(err)
	}
	alice := agent.Caller{UserID: "alice"}

	reply, err := m.CallFunc(ctx, "cal", "whoami", kgagent.Message{Text: "who am I?"}, alice)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply.Text, f.idp.AuthURL+"?") {
		t.Fatalf("first call = %q, want the authorization URL", reply.Text)
	}
	back, err := f.idp.Visit(reply.Text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallFunc(ctx, "cal", oauth.CallbackFuncName, kgagent.Message{Text: back}, alice); err != nil {
		t.Fatal(err)
	}
	reply, err = m.CallFunc(ctx, "cal", "whoami", kgagent.Message{Text: "who am I?"}, alice)
	if err != nil || reply.Text != "you are test-user" {
		t.Fatalf("after authorization: %q %v", reply.Text, err)
	}

	// Anonymous callers get the 400 user-storage error.
	_, err = m.CallFunc(ctx, "cal", "whoami", kgagent.Message{Text: "x"}, agent.Caller{Anonymous: true})
	if kgagent.ErrorCode(err) != kgagent.EUserStorageNeedsUser || kgagent.HTTPStatus(kgagent.ErrorCode(err)) != 400 {
		t.Errorf("anonymous: %v", err)
	}
	_, err = m.CallFunc(ctx, "cal", oauth.CallbackFuncName, kgagent.Message{Text: back}, agent.Caller{Anonymous: true})
	if kgagent.ErrorCode(err) != kgagent.EUserStorageNeedsUser {
		t.Errorf("anonymous callback: %v", err)
	}
	if h := providers.For("other", alice); h != nil {
		t.Errorf("agent without OAuth got a handler %v", h)
	}
}
