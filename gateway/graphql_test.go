package gateway

import (
	"encoding/json"
	"testing"
)

func gql(t *testing.T, url, token, query string, vars map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(GraphQLRequest{Query: query, Variables: vars})
	status, m, _ := do(t, "POST", url+"/graphql", token, string(body))
	return status, m
}

func gqlErrCode(m map[string]any) string {
	errs, _ := m["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	ext, _ := errs[0].(map[string]any)["extensions"].(map[string]any)
	c, _ := ext["code"].(string)
	return c
}

func TestGraphQL(t *testing.T) {
	cfg := authConfig()
	cfg.DailyLimit = 1000
	f := newFixture(t, cfg)
	u := f.ts.URL

	status, m := gql(t, u, "ask-key", `{ agents { name description url } }`, nil)
	if status != 200 || m["data"].(map[string]any)["agents"].([]any)[0].(map[string]any)["name"] != "docs" {
		t.Fatalf("agents: %d %v", status, m)
	}
	// Registering needs admin.
	_, m = gql(t, u, "ask-key", `mutation { registerAgent(name:"weather", url:"https://weather.example/agent") { name url } }`, nil)
	if gqlErrCode(m) != "FORBIDDEN" {
		t.Errorf("ask key registered an agent: %v", m)
	}
	_, m = gql(t, u, "admin-key", `mutation($n:String!,$u:String!) { registerAgent(name:$n, url:$u) { name url } }`, map[string]any{"n": "weather", "u": "https://weather.example/agent"})
	if a := m["data"].(map[string]any)["registerAgent"].(map[string]any); a["url"] != "https://weather.example/agent" {
		t.Errorf("register: %v", m)
	}
	_, m = gql(t, u, "admin-key", `mutation { registerAgent(name:"weather", url:"https://x.example") { name } }`, nil)
	if gqlErrCode(m) != "CONFLICT" {
		t.Errorf("duplicate register: %v", m)
	}
	_, m = gql(t, u, "admin-key", `mutation { registerAgent(name:"bad name!", url:"https://x.example") { name } }`, nil)
	if gqlErrCode(m) != "INVALID_ARGUMENT" {
		t.Errorf("bad name: %v", m)
	}

	// Sessions and messages.
	_, m = gql(t, u, "ask-key", `mutation { createSession(agent:"docs", title:"Help") { id agent title createdAt } }`, nil)
	sess := m["data"].(map[string]any)["createSession"].(map[string]any)
	id := sess["id"].(string)
	if sess["title"] != "Help" || sess["createdAt"] == "" {
		t.Errorf("session = %v", sess)
	}
	_, m = gql(t, u, "ask-key", `mutation($id:ID!) { postMessage(sessionId:$id, text:"How?") { role text sources { url title score } } }`, map[string]any{"id": id})
	msg := m["data"].(map[string]any)["postMessage"].(map[string]any)
	if msg["role"] != "agent" || msg["text"] != "Answer to: How?" || len(msg["sources"].([]any)) != 1 {
		t.Errorf("postMessage = %v", m)
	}
	_, m = gql(t, u, "ask-key", `query($id:ID!) { messages(sessionId:$id) { role text } session(id:$id) { title messages { role } } sessions { id } }`, map[string]any{"id": id})
	d := m["data"].(map[string]any)
	if len(d["messages"].([]any)) != 2 || len(d["session"].(map[string]any)["messages"].([]any)) != 2 || len(d["sessions"].([]any)) != 1 {
		t.Errorf("query = %v", m)
	}
	// Another key does not see alice's session; an admin does.
	_, m = gql(t, u, "py-key", `query($id:ID!) { session(id:$id) { id } sessions { id } }`, map[string]any{"id": id})
	if d := m["data"].(map[string]any); d["session"] != nil || len(d["sessions"].([]any)) != 0 {
		t.Errorf("other key sees alice's session: %v", d)
	}
	_, m = gql(t, u, "admin-key", `query($id:ID!) { session(id:$id) { id } }`, map[string]any{"id": id})
	if d := m["data"].(map[string]any); d["session"] == nil {
		t.Errorf("admin does not see the session: %v", d)
	}
	_, m = gql(t, u, "ask-key", `mutation($id:ID!) { deleteSession(id:$id) }`, map[string]any{"id": id})
	if m["data"].(map[string]any)["deleteSession"] != true {
		t.Errorf("delete = %v", m)
	}
	_, m = gql(t, u, "ask-key", `query($id:ID!) { session(id:$id) { id } }`, map[string]any{"id": id})
	if m["data"].(map[string]any)["session"] != nil {
		t.Errorf("deleted session still there: %v", m)
	}
	// Bad requests.
	if status, m := gql(t, u, "ask-key", ``, nil); status != 400 {
		t.Errorf("empty query: %d %v", status, m)
	}
	if _, m := gql(t, u, "ask-key", `{ nothing }`, nil); m["errors"] == nil {
		t.Errorf("unknown field: %v", m)
	}
	if status, _ := gql(t, u, "", `{ agents { name } }`, nil); status != 401 {
		t.Errorf("no key: %d", status)
	}
}
