package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
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

// TestGraphQLThirdPartyClients covers what schema explorers, code
// generators and GraphQL-over-HTTP clients send (issue 21, item 13): the
// standard introspection query (graphql-js's, type references nine deep)
// passes while a data query past the depth limit is still refused; GET runs
// queries but not mutations (405, Allow: POST); a batched array is a clear
// 400 that names no Go type.
func TestGraphQLThirdPartyClients(t *testing.T) {
	cfg := authConfig()
	cfg.DailyLimit = 1000
	f := newFixture(t, cfg)
	u := f.ts.URL

	intro, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	status, m := gql(t, u, "ask-key", string(intro), nil)
	data, _ := m["data"].(map[string]any)
	schema, _ := data["__schema"].(map[string]any)
	types, _ := schema["types"].([]any)
	mutation, _ := schema["mutationType"].(map[string]any)
	if status != 200 || m["errors"] != nil || len(types) < 8 || mutation["name"] != "Mutation" {
		t.Fatalf("introspection: %d errors %v", status, m["errors"])
	}
	// Deep nesting is still refused: past the introspection depth, and for
	// any document that also reads data past the data depth.
	deep := `{ __schema { types { fields { type { ofType { ofType { fields { type { ofType { ofType { fields { type { ofType { ofType { fields { name } } } } } } } } } } } } } } } }`
	if _, m := gql(t, u, "ask-key", deep, nil); !strings.Contains(fmt.Sprint(m["errors"]), "exceeds max depth") || m["data"] != nil {
		t.Errorf("introspection 16 deep: %v", m)
	}
	// Aliases would multiply introspection's list fields: an aliased
	// document gets the data depth, so this one (35 MB of answer and two
	// minutes of CPU at depth 15) is refused at once.
	var fan strings.Builder
	fan.WriteString("{ __schema { types { ...F3 } } }\nfragment F0 on __Type { name }\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&fan, "fragment F%d on __Type {", i)
		for j := 0; j < 20; j++ {
			fmt.Fprintf(&fan, " a%d: fields { type { ofType { ofType { ...F%d } } } }", j, i-1)
		}
		fan.WriteString(" }\n")
	}
	if _, m := gql(t, u, "ask-key", fan.String(), nil); m["data"] != nil || m["errors"] == nil {
		t.Errorf("aliased introspection fan-out ran: %.300v", m)
	}
	mixed := `{ agents { name } __schema { types { fields { type { ofType { ofType { ofType { ofType { name } } } } } } } } }`
	if _, m := gql(t, u, "ask-key", mixed, nil); !strings.Contains(fmt.Sprint(m["errors"]), "exceeds max depth 8") {
		t.Errorf("data query with introspection 9 deep: %v", m)
	}
	if _, m := gql(t, u, "ask-key", `{ sessions { messages { sources { __type(name:"Session") { fields { type { ofType { ofType { name } } } } } } } } }`, nil); !strings.Contains(fmt.Sprint(m["errors"]), "exceeds max depth 8") {
		t.Errorf("data query 9 deep: %v", m)
	}

	// GET, as the GraphQL-over-HTTP specification allows for queries.
	get := func(token string, q url.Values) (int, map[string]any, http.Header) {
		t.Helper()
		return do(t, "GET", u+"/graphql?"+q.Encode(), token, "")
	}
	status, m, _ = get("ask-key", url.Values{"query": {`query($n:String!){ __type(name:$n){ name } agents { name } }`}, "variables": {`{"n":"Session"}`}})
	if d, _ := m["data"].(map[string]any); status != 200 || d == nil || d["__type"].(map[string]any)["name"] != "Session" || len(d["agents"].([]any)) == 0 {
		t.Errorf("GET query: %d %v", status, m)
	}
	if status, m, h := get("ask-key", url.Values{"query": {`mutation { createSession(title:"x") { id } }`}}); status != 405 || h.Get("Allow") != "POST" || errCode(m) != "METHOD_NOT_ALLOWED" {
		t.Errorf("GET mutation: %d %v %v", status, h, m)
	}
	if _, m = gql(t, u, "ask-key", `{ sessions { id } }`, nil); len(m["data"].(map[string]any)["sessions"].([]any)) != 0 {
		t.Errorf("the GET mutation created a session: %v", m)
	}
	if status, m, _ := get("ask-key", url.Values{"query": {`{ agents { name } }`}, "variables": {`[1]`}}); status != 400 || errCode(m) != "INVALID_ARGUMENT" {
		t.Errorf("GET with bad variables: %d %v", status, m)
	}
	if status, _, _ := get("", url.Values{"query": {`{ agents { name } }`}}); status != 401 {
		t.Errorf("GET without a key: %d", status)
	}
	if status, m, _ := get("ask-key", nil); status != 400 || errCode(m) != "INVALID_ARGUMENT" {
		t.Errorf("GET without a query: %d %v", status, m)
	}

	// A batch (an array of requests) is refused in words a client reads.
	status, m, _ = do(t, "POST", u+"/graphql", "ask-key", `[{"query":"{ agents { name } }"},{"query":"{ sessions { id } }"}]`)
	msg, _ := m["error"].(map[string]any)["message"].(string)
	if status != 400 || errCode(m) != "INVALID_ARGUMENT" || !strings.Contains(msg, "batch") || strings.Contains(msg, "gateway.") || strings.Contains(msg, "GraphQLRequest") {
		t.Errorf("batch: %d %v", status, m)
	}
	// Wrong types name JSON types, never Go ones.
	status, m, _ = do(t, "POST", u+"/graphql", "ask-key", `{"query":"{ agents { name } }","variables":[1]}`)
	if msg, _ := m["error"].(map[string]any)["message"].(string); status != 400 || !strings.Contains(msg, "a JSON object") || strings.Contains(msg, "map[") {
		t.Errorf("variables as an array: %d %v", status, m)
	}
}

func TestGraphQLOperations(t *testing.T) {
	for doc, want := range map[string]bool{
		`{ a: agents { name } }`:                           true,
		`{ __schema { types { t : name } } }`:              true,
		`{ agents { name } }`:                              false,
		`query($x: ID = "a:b") { session(id: $x) { id } }`: false,
		`{ registerAgent(name: "x", url: "y") { name } }`:  false,
		`{ f(o: {a: 1}) { name } }`:                        false,
		"# a: b\n{ agents { name } }":                      false,
	} {
		if _, got := scanGraphQL(doc); got != want {
			t.Errorf("scanGraphQL(%q) aliased = %v, want %v", doc, got, want)
		}
	}
	for _, tc := range []struct {
		doc  string
		want string
	}{
		{`{ agents { name } }`, "query:"},
		{`query Q($a: ID!) @dir { session(id: $a) { id } }`, "query:Q"},
		{"# mutation M { x }\nquery { agents { name } }", "query:"},
		{`mutation { deleteSession(id: "}") }`, "mutation:"},
		{`query A { agents { name } } mutation B { createSession { id } }`, "query:A mutation:B"},
		{`fragment F on Agent { name } query { agents { ...F } }`, "query:"},
		{`subscription S { x }`, "subscription:S"},
		{`query { a(s: """ mutation { } \""" """) }`, "query:"},
		{`mutation($x: String = "a{b") { createSession(title: $x) { id } }`, "mutation:"},
		{``, ""},
	} {
		var got []string
		for _, op := range graphQLOperations(tc.doc) {
			got = append(got, op.kind+":"+op.name)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("graphQLOperations(%q) = %v, want %s", tc.doc, got, tc.want)
		}
	}
}

// FuzzGraphQLOperations: any document is read without panicking, and a
// document the schema accepts as a mutation is never taken for queries only.
func FuzzGraphQLOperations(f *testing.F) {
	for _, s := range []string{`{ a }`, `mutation M { a }`, `query """x""" { a }`, "# c\n{ a }", `"`, `"""`, `}}}{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		ops := graphQLOperations(doc)
		if strings.HasPrefix(doc, "mutation") && (len(ops) == 0 || ops[0].kind != "mutation") {
			t.Fatalf("%q read as %v", doc, ops)
		}
	})
}
