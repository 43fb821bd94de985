package gateway

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	graphql "github.com/graph-gophers/graphql-go"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// GraphQLSchema is the schema served at /graphql (seed 002: agents, sessions
// and messages). Errors carry extensions.code, kgagent's stable code.
const GraphQLSchema = `
schema { query: Query mutation: Mutation }

type Query {
  agents: [Agent!]!
  sessions: [Session!]!
  session(id: ID!): Session
  messages(sessionId: ID!): [Message!]!
}

type Mutation {
  # Registers a remote agent by name and URL (admin scope).
  registerAgent(name: String!, url: String!): Agent!
  createSession(agent: String, title: String): Session!
  deleteSession(id: ID!): Boolean!
  # Posts the user's text to the session; returns the agent's reply.
  postMessage(sessionId: ID!, text: String!, collection: String): Message!
}

type Agent { name: String! description: String url: String owner: String }

type Session { id: ID! agent: String title: String createdAt: String! messages: [Message!]! }

type Message {
  id: ID!
  sessionId: ID!
  role: String!
  agent: String
  text: String!
  sources: [Source!]!
  createdAt: String!
}

type Source { url: String! title: String! score: Float! }
`

// gqlError is a resolver error with kgagent's code in extensions.
type gqlError struct{ e *kgagent.Error }

func (g gqlError) Error() string { return g.e.Message }

// Extensions puts the stable code where GraphQL clients look for it.
func (g gqlError) Extensions() map[string]any {
	return map[string]any{"code": g.e.Code}
}

func gqlErr(err error) error {
	if err == nil {
		return nil
	}
	return gqlError{toError(err)}
}

type gqlRoot struct{ s *Server }

type agentResolver struct{ a AgentInfo }

func (r agentResolver) Name() string { return r.a.Name }

func (r agentResolver) Description() *string { return optional(r.a.Description) }

func (r agentResolver) URL() *string { return optional(r.a.URL) }

func (r agentResolver) Owner() *string { return optional(r.a.Owner) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type sessionResolver struct {
	s    *Server
	sess agent.Session
}

func (r sessionResolver) ID() graphql.ID { return graphql.ID(r.sess.ID) }

func (r sessionResolver) Agent() *string { return optional(r.sess.Agent) }

func (r sessionResolver) Title() *string { return optional(r.sess.Title) }

func (r sessionResolver) CreatedAt() string { return r.sess.CreatedAt.UTC().Format(time.RFC3339Nano) }

func (r sessionResolver) Messages(ctx context.Context) ([]messageResolver, error) {
	ms, err := r.s.sessionMessages(ctx, r.sess.ID)
	return messageResolvers(ms), gqlErr(err)
}

type messageResolver struct{ m agent.SessionMessage }

func messageResolvers(ms []agent.SessionMessage) []messageResolver {
	out := make([]messageResolver, len(ms))
	for i, m := range ms {
		out[i] = messageResolver{m}
	}
	return out
}

func (r messageResolver) ID() graphql.ID { return graphql.ID(r.m.ID) }

func (r messageResolver) SessionID() graphql.ID { return graphql.ID(r.m.SessionID) }

func (r messageResolver) Role() string { return r.m.Role }

func (r messageResolver) Agent() *string { return optional(r.m.Agent) }

func (r messageResolver) Text() string { return r.m.Text }

func (r messageResolver) CreatedAt() string { return r.m.CreatedAt.UTC().Format(time.RFC3339Nano) }

func (r messageResolver) Sources() []sourceResolver {
	out := make([]sourceResolver, len(r.m.Sources))
	for i, s := range r.m.Sources {
		out[i] = sourceResolver{s}
	}
	return out
}

type sourceResolver struct{ s kgagent.Source }

func (r sourceResolver) URL() string { return r.s.URL }

func (r sourceResolver) Title() string { return r.s.Title }

func (r sourceResolver) Score() float64 { return r.s.Score }

func (q *gqlRoot) Agents(ctx context.Context) ([]agentResolver, error) {
	if q.s.b.Registry == nil {
		return nil, gqlErr(unavailable("agent registry"))
	}
	as, err := q.s.b.Registry.ListAgents(ctx)
	if err != nil {
		return nil, gqlErr(err)
	}
	out := make([]agentResolver, len(as))
	for i, a := range as {
		out[i] = agentResolver{a}
	}
	return out, nil
}

func (q *gqlRoot) Sessions(ctx context.Context) ([]sessionResolver, error) {
	st, err := q.s.sessionStore()
	if err != nil {
		return nil, gqlErr(err)
	}
	list, err := st.ListSessions(ctx, principalFrom(ctx).owner())
	if err != nil {
		return nil, gqlErr(err)
	}
	out := make([]sessionResolver, len(list))
	for i, sess := range list {
		out[i] = sessionResolver{q.s, sess}
	}
	return out, nil
}

func (q *gqlRoot) Session(ctx context.Context, args struct{ ID graphql.ID }) (*sessionResolver, error) {
	sess, err := q.s.ownSession(ctx, string(args.ID))
	if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, gqlErr(err)
	}
	return &sessionResolver{q.s, sess}, nil
}

func (q *gqlRoot) Messages(ctx context.Context, args struct{ SessionID graphql.ID }) ([]messageResolver, error) {
	ms, err := q.s.sessionMessages(ctx, string(args.SessionID))
	return messageResolvers(ms), gqlErr(err)
}

func (q *gqlRoot) RegisterAgent(ctx context.Context, args struct{ Name, URL string }) (agentResolver, error) {
	if !principalFrom(ctx).has(ScopeAdmin) {
		return agentResolver{}, gqlErr(kgagent.Errorf(kgagent.EFORBIDDEN, "registering agents needs the admin scope"))
	}
	if q.s.b.Registry == nil {
		return agentResolver{}, gqlErr(unavailable("agent registry"))
	}
	if !nameRe.MatchString(args.Name) {
		return agentResolver{}, gqlErr(invalid(ReasonUnknownValue, "name", "agent names match ^\\w+$"))
	}
	a, err := q.s.b.Registry.RegisterAgent(ctx, args.Name, args.URL)
	return agentResolver{a}, gqlErr(err)
}

func (q *gqlRoot) CreateSession(ctx context.Context, args struct{ Agent, Title *string }) (sessionResolver, error) {
	in := SessionInput{}
	if args.Agent != nil {
		in.Agent = *args.Agent
	}
	if args.Title != nil {
		in.Title = *args.Title
	}
	sess, err := q.s.newSession(ctx, in)
	return sessionResolver{q.s, sess}, gqlErr(err)
}

func (q *gqlRoot) DeleteSession(ctx context.Context, args struct{ ID graphql.ID }) (bool, error) {
	if _, err := q.s.ownSession(ctx, string(args.ID)); err != nil {
		return false, gqlErr(err)
	}
	if err := q.s.b.Sessions.DeleteSession(ctx, string(args.ID)); err != nil {
		return false, gqlErr(err)
	}
	return true, nil
}

func (q *gqlRoot) PostMessage(ctx context.Context, args struct {
	SessionID  graphql.ID
	Text       string
	Collection *string
}) (messageResolver, error) {
	in := MessageInput{Text: args.Text}
	if args.Collection != nil {
		in.Collection = *args.Collection
	}
	m, err := q.s.postToSession(ctx, string(args.SessionID), in)
	return messageResolver{m}, gqlErr(err)
}

// graphQLMaxQuery bounds a GraphQL query (413 beyond).
const graphQLMaxQuery = 16 << 10

// graphQLMaxDepth bounds the field nesting of a query that reads data;
// graphQLIntrospectionDepth that of a document asking only for __schema,
// __type and __typename, deep enough for the standard introspection query
// of schema explorers and code generators (graphql-js, gql: the type
// references nest ofType seven to nine deep).
const (
	graphQLMaxDepth           = 8
	graphQLIntrospectionDepth = 15
)

// graphQLMaxSelections bounds the selections an operation expands to once
// its fragments are spread (the standard introspection query: a few
// hundred), so a few bytes of fragments cannot multiply into millions of
// fields.
const graphQLMaxSelections = 2000

// GraphQLRequest is the body of POST /graphql (and the query parameters
// of GET /graphql).
type GraphQLRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
}

// graphQLSchemas are the compiled schemas one request may run against.
type graphQLSchemas struct {
	data  *graphql.Schema // the schema, data queries nested up to graphQLMaxDepth
	intro *graphql.Schema // the same, for introspection-only documents
	// probe has a Query type without data fields and no mutations: a
	// document valid against it asks only for introspection fields.
	probe *graphql.Schema
}

// introspectionProbeSchema is graphQLSchemas.probe's schema.
const introspectionProbeSchema = `schema { query: Query } type Query { introspectionOnly: Boolean }`

type probeRoot struct{}

func (*probeRoot) IntrospectionOnly() *bool { return nil }

func newGraphQLSchemas(root *gqlRoot) graphQLSchemas {
	length, sels := graphql.MaxQueryLength(graphQLMaxQuery), graphql.MaxSelections(graphQLMaxSelections)
	return graphQLSchemas{
		data:  graphql.MustParseSchema(GraphQLSchema, root, graphql.MaxDepth(graphQLMaxDepth), length, sels),
		intro: graphql.MustParseSchema(GraphQLSchema, root, graphql.MaxDepth(graphQLIntrospectionDepth), length, sels),
		probe: graphql.MustParseSchema(introspectionProbeSchema, &probeRoot{}, graphql.MaxDepth(graphQLIntrospectionDepth), length, sels),
	}
}

// exec runs req: against intro when the document holds only queries that
// ask only for introspection fields, without aliases, else against data.
// (Without aliases an introspection result is bounded by the schema's
// size; aliased list fields nested fifteen deep would multiply it.)
func (g graphQLSchemas) exec(ctx context.Context, req GraphQLRequest) *graphql.Response {
	ops, aliased := scanGraphQL(req.Query)
	queries := !aliased
	for _, op := range ops {
		queries = queries && op.kind == "query"
	}
	if queries && len(g.probe.ValidateWithVariables(req.Query, req.Variables)) == 0 {
		return g.intro.Exec(ctx, req.Query, req.OperationName, req.Variables)
	}
	return g.data.Exec(ctx, req.Query, req.OperationName, req.Variables)
}

// gqlOperation is one operation of a GraphQL document.
type gqlOperation struct {
	kind string // query, mutation or subscription
	name string // "" when anonymous
}

// graphQLOperations lists the operations of a GraphQL document in order.
func graphQLOperations(doc string) []gqlOperation {
	ops, _ := scanGraphQL(doc)
	return ops
}

// scanGraphQL lists the operations of a GraphQL document in order, and
// reports whether a selection set aliases a field ("a: fields"). It reads
// only names, brackets, strings and comments; whether the document is
// valid is the schema's business.
func scanGraphQL(doc string) (ops []gqlOperation, aliased bool) {
	var stack []byte // open brackets
	depth := 0
	definition := true // the next top-level token starts a definition
	named := -1        // the operation whose name may come next
	for i := 0; i < len(doc); {
		c := doc[i]
		switch {
		case c == '#':
			for i < len(doc) && doc[i] != '\n' && doc[i] != '\r' {
				i++
			}
		case strings.HasPrefix(doc[i:], `"""`):
			end := strings.Index(strings.ReplaceAll(doc[i+3:], `\"""`, "xxxx"), `"""`)
			if end < 0 {
				return ops, aliased
			}
			i += 3 + end + 3
		case c == '"':
			for i++; i < len(doc) && doc[i] != '"' && doc[i] != '\n'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
			i++
		case c == '{' || c == '(' || c == '[':
			if depth == 0 && c == '{' && definition {
				ops = append(ops, gqlOperation{kind: "query"}) // the query shorthand
			}
			if depth == 0 {
				definition, named = false, -1
			}
			depth++
			stack = append(stack, c)
			i++
		case c == '}' || c == ')' || c == ']':
			depth--
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if depth == 0 && c == '}' {
				definition = true
			}
			i++
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i
			for j < len(doc) && (doc[j] == '_' || doc[j] >= 'A' && doc[j] <= 'Z' || doc[j] >= 'a' && doc[j] <= 'z' || doc[j] >= '0' && doc[j] <= '9') {
				j++
			}
			name := doc[i:j]
			i = j
			if depth != 0 {
				// In a selection set (not in arguments), a name and a colon
				// is an alias.
				if len(stack) > 0 && stack[len(stack)-1] == '{' && !slices.Contains(stack, '(') {
					k := j
					for k < len(doc) && (doc[k] == ' ' || doc[k] == '\t' || doc[k] == '\n' || doc[k] == '\r' || doc[k] == ',') {
						k++
					}
					aliased = aliased || (k < len(doc) && doc[k] == ':')
				}
				continue
			}
			switch {
			case definition && (name == "query" || name == "mutation" || name == "subscription"):
				ops = append(ops, gqlOperation{kind: name})
				named = len(ops) - 1
			case named >= 0:
				ops[named].name = name
				named = -1
			default:
				named = -1
			}
			definition = false
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		default:
			if depth == 0 {
				named = -1
			}
			i++
		}
	}
	return ops, aliased
}

// mutates reports whether the operation req runs is not a query (when
// the document does not say which, whether any of them is not).
func (g graphQLSchemas) mutates(req GraphQLRequest) bool {
	ops := graphQLOperations(req.Query)
	for _, op := range ops {
		if op.kind != "query" && (req.OperationName == "" || op.name == req.OperationName) {
			return true
		}
	}
	return false
}

// checkGraphQLRequest refuses a request without a query or with one over
// graphQLMaxQuery.
func checkGraphQLRequest(req GraphQLRequest) error {
	if req.Query == "" {
		return invalid(ReasonMissingField, "query", "query is required")
	}
	if len(req.Query) > graphQLMaxQuery {
		return kgagent.Errorf(kgagent.ETOOLARGE, "query is over %d bytes", graphQLMaxQuery)
	}
	return nil
}

// graphQLRoutes serves /graphql over POST (a JSON body) and GET (query,
// operationName and variables as URL parameters, queries only), as the
// GraphQL-over-HTTP specification says.
func (s *Server) graphQLRoutes() {
	schemas := newGraphQLSchemas(&gqlRoot{s})
	s.handle("POST", "/graphql", ScopeAsk, func(w http.ResponseWriter, r *http.Request) {
		data, err := s.readJSONBody(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
			s.writeError(w, r, invalid(ReasonWrongType, "", "batched requests (a JSON array) are not supported: send one {\"query\": ...} object per request"))
			return
		}
		var req GraphQLRequest
		if err := decodeJSON(data, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := checkGraphQLRequest(req); err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, schemas.exec(r.Context(), req))
	})
	s.handle("GET", "/graphql", ScopeAsk, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		req := GraphQLRequest{Query: q.Get("query"), OperationName: q.Get("operationName")}
		if v := q.Get("variables"); v != "" {
			if err := decodeJSON([]byte(v), &req.Variables); err != nil {
				s.writeError(w, r, invalid(ReasonInvalidJSON, "variables", "variables must be a JSON object"))
				return
			}
		}
		if err := checkGraphQLRequest(req); err != nil {
			s.writeError(w, r, err)
			return
		}
		if schemas.mutates(req) {
			w.Header().Set("Allow", "POST")
			s.writeError(w, r, kgagent.Errorf(kgagent.EMETHOD, "mutations need POST; GET runs queries only"))
			return
		}
		writeJSON(w, http.StatusOK, schemas.exec(r.Context(), req))
	})
}
