package gateway

import (
	"context"
	"net/http"
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

// GraphQLRequest is the body of POST /graphql.
type GraphQLRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
}

func (s *Server) graphQLRoutes() {
	schema := graphql.MustParseSchema(GraphQLSchema, &gqlRoot{s}, graphql.MaxDepth(8), graphql.MaxQueryLength(graphQLMaxQuery))
	s.handle("POST", "/graphql", ScopeAsk, func(w http.ResponseWriter, r *http.Request) {
		var req GraphQLRequest
		if err := s.decodeBody(w, r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		if req.Query == "" {
			s.writeError(w, r, invalid(ReasonMissingField, "query", "query is required"))
			return
		}
		if len(req.Query) > graphQLMaxQuery {
			s.writeError(w, r, kgagent.Errorf(kgagent.ETOOLARGE, "query is over %d bytes", graphQLMaxQuery))
			return
		}
		writeJSON(w, http.StatusOK, schema.Exec(r.Context(), req.Query, req.OperationName, req.Variables))
	})
}
