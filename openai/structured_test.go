package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// askWeather runs the weather agent with protocol proto against srv and
// returns the answer text, the func inputs and the event kinds.
func askWeather(t *testing.T, srv *openaitest.Server, proto string) (string, []string, string) {
	t.Helper()
	m, inputs := weatherManager(t, srv, func(c *agent.Config) { c.Model.Protocol = proto })
	rec := newRecorder()
	ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Weather in Paris and Rome?"}, rec.emit)
	if err != nil {
		t.Fatalf("%s: %v", proto, err)
	}
	return ans.Answer, *inputs, fmt.Sprint(rec.kinds())
}

func TestToolsProtocolParallelCalls(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Calls("weather", `{"input": "Paris"}`, "weather", `{"input":"Rome"}`),
		openaitest.Reply("Sunny in both."),
	)
	answer, inputs, kinds := askWeather(t, srv, llm.ProtocolTools)
	if answer != "Sunny in both." || !slices.Equal(inputs, []string{"Paris", "Rome"}) {
		t.Errorf("answer %q inputs %q", answer, inputs)
	}
	if kinds != "[route action observation action observation answer]" {
		t.Errorf("events %s", kinds)
	}
	// Every func is offered, the agent's own and the built-in commands.
	req := srv.ChatRequests()[0].Body
	i := slices.IndexFunc(req.Tools, func(d openai.ToolDef) bool { return d.Function.Name == "weather" })
	j := slices.IndexFunc(req.Tools, func(d openai.ToolDef) bool { return d.Function.Name == "fixie_query_corpus" })
	if i < 0 || j < 0 || req.ResponseFormat != nil {
		t.Fatalf("first request tools %+v format %+v", req.Tools, req.ResponseFormat)
	}
	params, _ := json.Marshal(req.Tools[i].Function.Parameters)
	if string(params) != `{"properties":{"input":{"type":"string"}},"required":["input"],"type":"object"}` {
		t.Errorf("text func offered with parameters %s", params)
	}
}

func TestJSONProtocolSteps(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Reply(`{"thought": "I need the weather", "action": "weather", "input": "Paris"}`),
		openaitest.Reply(`{"thought": "", "action": "answer", "input": "Sunny."}`),
	)
	answer, inputs, kinds := askWeather(t, srv, llm.ProtocolJSON)
	// The weather func lists no sources, so [1] names none and is dropped.
	if answer != "Sunny." || !slices.Equal(inputs, []string{"Paris"}) {
		t.Errorf("answer %q inputs %q", answer, inputs)
	}
	// The same events as the text protocol gives.
	text := openaitest.New(t, openaitest.Reply("I need the weather\nAsk Func[weather]: Paris"), openaitest.Reply("A: Sunny."))
	if _, _, textKinds := askWeather(t, text, llm.ProtocolText); kinds != textKinds {
		t.Errorf("json events %s, text events %s", kinds, textKinds)
	}
	rf := srv.ChatRequests()[0].Body.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil {
		t.Fatalf("response format %+v", rf)
	}
	schema, _ := json.Marshal(rf.JSONSchema.Schema)
	var sc struct {
		Properties struct {
			Action struct {
				Enum []string `json:"enum"`
			} `json:"action"`
		} `json:"properties"`
	}
	err := json.Unmarshal(schema, &sc)
	enum := sc.Properties.Action.Enum
	if err != nil || len(enum) == 0 || !slices.Contains(enum, "weather") || !slices.Contains(enum, "fixie_query_corpus") || enum[len(enum)-1] != "answer" {
		t.Errorf("step schema %s", schema)
	}
}

func TestJSONProtocolMalformedIsCorrected(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Reply(`{"thought": "unfinished`),
		openaitest.Reply(`{"thought": "", "action": "answer", "input": "Sunny."}`),
	)
	if answer, _, kinds := askWeather(t, srv, llm.ProtocolJSON); answer != "Sunny." || kinds != "[route error answer]" {
		t.Errorf("answer %q events %s", answer, kinds)
	}
}

func TestAutoProtocolFallsBack(t *testing.T) {
	// A server without response formats gets native tool calls; only the
	// first call pays for the refusal.
	srv := openaitest.New(t,
		openaitest.Calls("weather", `{"input":"Paris"}`),
		openaitest.Reply("Sunny."),
	)
	srv.RejectResponseFormat()
	if answer, inputs, _ := askWeather(t, srv, llm.ProtocolAuto); answer != "Sunny." || !slices.Equal(inputs, []string{"Paris"}) {
		t.Errorf("answer %q inputs %q", answer, inputs)
	}
	reqs := srv.ChatRequests()
	if len(reqs) != 3 || reqs[0].Body.ResponseFormat == nil || len(reqs[1].Body.Tools) == 0 || reqs[2].Body.ResponseFormat != nil {
		t.Errorf("%d requests; want the response format refused once, then tools", len(reqs))
	}
	// A server that takes response formats gets JSON steps at once.
	js := openaitest.New(t, openaitest.Reply(`{"thought": "", "action": "weather", "input": "Oslo"}`), openaitest.Reply(`{"thought": "", "action": "answer", "input": "Cold."}`))
	if answer, _, _ := askWeather(t, js, llm.ProtocolAuto); answer != "Cold." || len(js.ChatRequests()) != 2 {
		t.Errorf("answer %q after %d requests", answer, len(js.ChatRequests()))
	}
	// Neither tools nor response formats: the text protocol.
	plain := openaitest.New(t, openaitest.Reply("Ask Func[weather]: Rome"), openaitest.Reply("A: Warm."))
	plain.RejectTools()
	plain.RejectResponseFormat()
	if answer, inputs, _ := askWeather(t, plain, llm.ProtocolAuto); answer != "Warm." || !slices.Equal(inputs, []string{"Rome"}) {
		t.Errorf("answer %q inputs %q", answer, inputs)
	}
}

func TestAnswerOnlyOnTheLastIteration(t *testing.T) {
	// json: the last step's schema allows only "answer"; tools: none are
	// offered, so the reply is the answer.
	srv := openaitest.New(t,
		openaitest.Reply(`{"thought": "", "action": "weather", "input": "Paris"}`),
		openaitest.Reply(`{"thought": "", "action": "answer", "input": "Sunny."}`),
	)
	m, _ := weatherManager(t, srv, func(c *agent.Config) { c.Model.Protocol = llm.ProtocolJSON; c.Loop.MaxIterations = 2 })
	if ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Paris?"}, nil); err != nil || ans.Answer != "Sunny." {
		t.Fatalf("%+v %v", ans, err)
	}
	reqs := srv.ChatRequests()
	first, _ := json.Marshal(reqs[0].Body.ResponseFormat.JSONSchema.Schema)
	last, _ := json.Marshal(reqs[1].Body.ResponseFormat.JSONSchema.Schema)
	if !strings.Contains(string(first), `"weather"`) || !strings.Contains(string(last), `"enum":["answer"]`) {
		t.Errorf("schemas %s then %s", first, last)
	}
	tools := openaitest.New(t, openaitest.Calls("weather", `{"input":"Rome"}`), openaitest.Reply("Warm."))
	m, _ = weatherManager(t, tools, func(c *agent.Config) { c.Model.Protocol = llm.ProtocolTools; c.Loop.MaxIterations = 2 })
	if ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Rome?"}, nil); err != nil || ans.Answer != "Warm." {
		t.Fatalf("%+v %v", ans, err)
	}
	if r := tools.ChatRequests(); len(r[0].Body.Tools) == 0 || len(r[1].Body.Tools) != 0 {
		t.Errorf("tools offered %d then %d", len(r[0].Body.Tools), len(r[1].Body.Tools))
	}
}

func TestJSONStepCutShortStillCounts(t *testing.T) {
	// The token limit cut the thought; action and input came first.
	srv := openaitest.New(t,
		openaitest.Reply(`{"action": "weather", "input": "Paris", "thought": "I should look up the weather in Pa`),
		openaitest.Reply(`{"action": "answer", "input": "Sunny.", "thought": "done and`),
	)
	if answer, inputs, _ := askWeather(t, srv, llm.ProtocolJSON); answer != "Sunny." || !slices.Equal(inputs, []string{"Paris"}) {
		t.Errorf("answer %q inputs %q", answer, inputs)
	}
}

func TestJSONAnswerInThought(t *testing.T) {
	srv := openaitest.New(t, openaitest.Reply(`{"action": "answer", "input": "", "thought": "It is sunny."}`))
	if answer, _, _ := askWeather(t, srv, llm.ProtocolJSON); answer != "It is sunny." {
		t.Errorf("answer %q", answer)
	}
}

// TestAskAgentAsToolAndJSONStep: other agents are offered as tools
// (ask_agent_<name>) and JSON actions; calling one delegates as
// Ask Agent[name] does in the text protocol.
func TestAskAgentAsToolAndJSONStep(t *testing.T) {
	for _, tt := range []struct {
		proto string
		first openaitest.Step
	}{
		{llm.ProtocolTools, openaitest.Calls("ask_agent_default", `{"input": "What is Lumen?"}`)},
		{llm.ProtocolJSON, openaitest.Reply(`{"thought": "ask the docs agent", "action": "ask_agent_default", "input": "What is Lumen?"}`)},
	} {
		srv := openaitest.New(t, tt.first, openaitest.Reply("A: Lumen is a database."), openaitest.Reply(`{"thought": "", "action": "answer", "input": "A database."}`))
		m, _ := weatherManager(t, srv, func(c *agent.Config) { c.Model.Protocol = tt.proto })
		rec := newRecorder()
		ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "What is Lumen?"}, rec.emit)
		if err != nil {
			t.Fatalf("%s: %v", tt.proto, err)
		}
		var action, obs string
		for _, ev := range rec.events() {
			if ev.Kind == "action" && action == "" {
				action = ev.Text
			}
			if ev.Kind == "observation" && ev.Agent == "weather" {
				obs = ev.Text
			}
		}
		if action != "Ask Agent[default]: What is Lumen?" || obs != "Lumen is a database." || !strings.Contains(ans.Answer, "database") {
			t.Errorf("%s: action %q observation %q answer %q", tt.proto, action, obs, ans.Answer)
		}
		req := srv.ChatRequests()[0].Body
		names := []string{}
		for _, d := range req.Tools {
			names = append(names, d.Function.Name)
		}
		if tt.proto == llm.ProtocolTools && !slices.Contains(names, "ask_agent_default") {
			t.Errorf("tools offered %v", names)
		}
	}
}

// refusedCall runs one Complete with the weather tool in protocol proto and
// reads the stream to its end.
func refusedCall(t *testing.T, c *openai.Client, proto string) error {
	t.Helper()
	st, err := c.Complete(context.Background(), llm.CompletionRequest{
		Model: "kgagent-gemma3", Protocol: proto, Messages: []llm.ChatMessage{{Role: "user", Content: "Weather in Paris?"}},
		Tools: []llm.Tool{{Name: "weather", Description: "weather of a city"}},
	})
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestRefusedProtocolIsExplained: a server's 400 names its reason, in the
// error of an explicit protocol and in the log line of auto's fallback; in
// auto, any 400 to a structured step moves that request on to the next
// protocol, and only a refusal that names tools or the response format
// does so for later requests too.
func TestRefusedProtocolIsExplained(t *testing.T) {
	srv := openaitest.New(t)
	srv.RejectTools()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = refusedCall(t, c, llm.ProtocolTools)
	if kgagent.ErrorCode(err) != kgagent.EINVALID || !strings.Contains(kgagent.ErrorMessage(err), "in step protocol tools: registry.ollama.ai/library/kgagent-gemma3 does not support tools") {
		t.Errorf("explicit tools refused: %v", err)
	}

	var logs bytes.Buffer
	other := openaitest.New(t,
		openaitest.Step{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "template: gemma3: unexpected EOF"},
		openaitest.Reply("Sunny."),
		openaitest.Reply(`{"thought": "", "action": "answer", "input": "Cold."}`),
	)
	c, err = openai.New(openai.Config{BaseURL: other.URL + "/v1", MaxRetries: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := refusedCall(t, c, llm.ProtocolAuto); err != nil {
		t.Fatalf("auto after a 400 to its JSON step: %v", err)
	}
	reqs := other.ChatRequests()
	if len(reqs) != 2 || reqs[0].Body.ResponseFormat == nil || len(reqs[1].Body.Tools) == 0 {
		t.Errorf("%d requests; want the JSON step refused, then tools", len(reqs))
	}
	if l := logs.String(); !strings.Contains(l, "protocol=json next=tools status=400") || !strings.Contains(l, `server_message="template: gemma3: unexpected EOF"`) {
		t.Errorf("the fallback is not logged with the server's reason: %s", l)
	}
	// The refusal named neither tools nor the format: the next request
	// asks for a JSON step again.
	if err := refusedCall(t, c, llm.ProtocolAuto); err != nil {
		t.Fatal(err)
	}
	if reqs := other.ChatRequests(); len(reqs) != 3 || reqs[2].Body.ResponseFormat == nil {
		t.Errorf("the second request did not ask for a JSON step again")
	}
}

// TestModelNotFoundNamesIt: a 404 says which model was asked for, where,
// and what the server said.
func TestModelNotFoundNamesIt(t *testing.T) {
	srv := openaitest.New(t, openaitest.Step{Status: 404, ErrorType: "api_error", ErrorMessage: `model "smollm2" not found, try pulling it first`})
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "smollm2", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "hi"}}})
	if msg := kgagent.ErrorMessage(err); kgagent.ErrorCode(err) != kgagent.ENOTFOUND || !strings.Contains(msg, `LLM model "smollm2" or endpoint not found at `+srv.URL+"/v1") || !strings.Contains(msg, "try pulling it first") {
		t.Errorf("404: %v", err)
	}
}
