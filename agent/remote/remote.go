// Package remote speaks the Fixie agent protocol (seeds 000, 001) to agents
// served elsewhere: a Client for the handshake and func calls, remote funcs,
// and agents built from a remote handshake (NewAgent).
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"github.com/kgagent/kgagent/llm"
	"go.yaml.in/yaml/v3"
)

// maxRemoteBody bounds what a remote agent may send back.
const maxRemoteBody = 8 << 20

// Client speaks the Fixie agent protocol (seeds 000, 001) to an agent
// at BaseURL: GET {base}/ for the handshake, POST {base}/{func} to call a
// func. Funcs and agents written in any language plug in this way.
type Client struct {
	BaseURL    string
	HTTPClient *http.Client // nil: http.DefaultClient
	Token      string       // bearer token sent when the call carries none
}

func (c *Client) client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

func (c *Client) url(path string) string {
	return strings.TrimRight(c.BaseURL, "/") + "/" + path
}

func (c *Client) do(req *http.Request, token string) (*http.Response, []byte, error) {
	if token == "" {
		token = c.Token
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, nil, req.Context().Err()
		}
		return nil, nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "remote agent %s is unreachable", c.BaseURL)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteBody+1))
	if err != nil {
		return nil, nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the reply of remote agent %s", c.BaseURL)
	}
	if len(body) > maxRemoteBody {
		return nil, nil, kgagent.Errorf(kgagent.ETOOLARGE, "remote agent %s replied with more than %d bytes", c.BaseURL, maxRemoteBody)
	}
	return resp, body, nil
}

// Handshake fetches the agent's base prompt and few-shots. It asks for JSON
// and also reads the YAML the reference SDK serves.
func (c *Client) Handshake(ctx context.Context) (agent.Handshake, error) {
	var h agent.Handshake
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(""), nil)
	if err != nil {
		return h, kgagent.WrapError(kgagent.EINVALID, err, "bad remote agent URL %q", c.BaseURL)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9")
	resp, body, err := c.do(req, "")
	if err != nil {
		return h, err
	}
	if resp.StatusCode/100 != 2 {
		return h, remoteError(c.BaseURL, resp.StatusCode, body)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if strings.Contains(ct, "yaml") || (ct != "application/json" && !json.Valid(body)) {
		err = yaml.Unmarshal(body, &h)
	} else {
		err = json.Unmarshal(body, &h)
	}
	if err != nil {
		return h, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "remote agent %s sent a malformed handshake", c.BaseURL)
	}
	return h, nil
}

type protocolRequest struct {
	Message kgagent.Message `json:"message"`
}

type protocolResponse struct {
	Message *kgagent.Message `json:"message"`
	Error   json.RawMessage  `json:"error"`
	Detail  json.RawMessage  `json:"detail"` // FastAPI-style errors
}

// Call posts msg to func name and returns the reply message. Errors the
// agent reports keep their code, message and details.
func (c *Client) Call(ctx context.Context, name string, msg kgagent.Message, token string) (kgagent.Message, error) {
	if !agent.ValidName(name) {
		return kgagent.Message{}, kgagent.Errorf(kgagent.EINVALID, "func name %q must match ^\\w+$", name)
	}
	b, err := json.Marshal(protocolRequest{Message: msg})
	if err != nil {
		return kgagent.Message{}, kgagent.WrapError(kgagent.EINTERNAL, err, "encoding the message")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url(name), bytes.NewReader(b))
	if err != nil {
		return kgagent.Message{}, kgagent.WrapError(kgagent.EINVALID, err, "bad remote agent URL %q", c.BaseURL)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, body, err := c.do(req, token)
	if err != nil {
		return kgagent.Message{}, err
	}
	if resp.StatusCode/100 != 2 {
		return kgagent.Message{}, remoteError(c.BaseURL, resp.StatusCode, body)
	}
	var pr protocolResponse
	if err := json.Unmarshal(body, &pr); err != nil || pr.Message == nil {
		return kgagent.Message{}, kgagent.Errorf(kgagent.EUNAVAILABLE, "remote agent %s sent a malformed reply to %s", c.BaseURL, name)
	}
	if e := decodeProtocolError(pr.Error); e != nil {
		return *pr.Message, e
	}
	return *pr.Message, nil
}

func decodeProtocolError(raw json.RawMessage) *kgagent.Error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var e kgagent.Error
	if json.Unmarshal(raw, &e) == nil && (e.Code != "" || e.Message != "") {
		if e.Code == "" {
			e.Code = kgagent.EUNAVAILABLE
		}
		return &e
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "%s", s)
	}
	return nil
}

func remoteError(base string, status int, body []byte) error {
	var pr protocolResponse
	if json.Unmarshal(body, &pr) == nil {
		if e := decodeProtocolError(pr.Error); e != nil {
			return e
		}
		if e := decodeProtocolError(pr.Detail); e != nil {
			return e
		}
		if pr.Message != nil && pr.Message.Text != "" {
			return kgagent.Errorf(statusCode(status), "%s", pr.Message.Text)
		}
	}
	return kgagent.Errorf(statusCode(status), "remote agent %s answered HTTP %d", base, status)
}

// statusCode is the code of a remote agent's HTTP error status; one
// without a code of its own is INTERNAL.
func statusCode(status int) string {
	if c := httpstatus.Code(status); c != "" {
		return c
	}
	return kgagent.EINTERNAL
}

// Func returns a func that forwards its input to func name of the agent
// at baseURL, with the caller's bearer token.
func Func(name, baseURL string, hc *http.Client) agent.Func {
	c := &Client{BaseURL: baseURL, HTTPClient: hc}
	return agent.Func{
		Name:        name,
		Description: fmt.Sprintf("remote func at %s", baseURL),
		Handler: func(ctx context.Context, call agent.FuncCall) (agent.FuncResult, error) {
			m, err := c.Call(ctx, name, call.Query, call.Caller.Token)
			return agent.FuncResult{Message: m}, err
		},
	}
}

// NewAgent builds an agent.CodeShotAgent from the handshake of the agent at
// baseURL: its base prompt and few-shots, with every func its few-shots name
// (other than fixie_ built-ins) called remotely. Language processing stays
// here, as in the Fixie architecture (seed 002).
func NewAgent(ctx context.Context, name, baseURL string, hc *http.Client) (*agent.CodeShotAgent, error) {
	if !agent.ValidName(name) {
		return nil, kgagent.Errorf(kgagent.EINVALID, "agent name %q must match ^\\w+$", name)
	}
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "agent URL %q must be an http(s) URL", baseURL)
	}
	c := &Client{BaseURL: baseURL, HTTPClient: hc}
	h, err := c.Handshake(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var funcs []agent.Func
	for _, fs := range h.FewShots {
		for _, line := range strings.Split(agent.StripLines(fs), "\n") {
			l := agent.ClassifyLine(line)
			if l.Kind == llm.LineAskFunc && agent.ValidName(l.Name) && !strings.HasPrefix(l.Name, "fixie_") && !seen[l.Name] {
				seen[l.Name] = true
				funcs = append(funcs, Func(l.Name, baseURL, hc))
			}
		}
	}
	return agent.NewCodeShotAgent(agent.AgentConfig{
		Name:           name,
		BasePrompt:     h.BasePrompt,
		FewShots:       h.FewShots,
		Corpora:        h.Corpora,
		Conversational: h.Conversational,
		Funcs:          funcs,
		Remote:         baseURL,
	})
}
