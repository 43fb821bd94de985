package gateway

// The options of a chat completion (response_format, max_tokens,
// stream_options) as kgagent honours them: the answer as JSON (projected
// on a json_schema), the content cut to a token budget, the usage, and
// the citations appended to the content.

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/kgagent/kgagent"
)

func citations(src []kgagent.Source) string {
	if len(src) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nSources:\n")
	for i, s := range src {
		title := s.Title
		if title == "" {
			title = s.URL
		}
		// Numbered as the answer cites them: [n] is the n-th source.
		fmt.Fprintf(&b, "%d. [%s](%s)\n", i+1, title, s.URL)
	}
	return b.String()
}

// chatOptions are the parameters of a chat completion kgagent honours.
type chatOptions struct {
	json         bool                 // content is the answer object as JSON
	schema       *jsonschema.Resolved // that object must validate against it (json_schema)
	rawSchema    map[string]any       // that schema, to drop what it forbids
	maxBytes     int                  // the content is cut after this many bytes (0: not cut)
	includeUsage bool
}

// bytesPerToken is how kgagent counts tokens where a model did not: 4
// bytes each, as the agent estimates them.
const bytesPerToken = 4

// chatOptionsOf checks the parameters kgagent does not simply accept and
// returns what it honours. Errors: EINVALID with reason
// unsupported_parameter and the parameter as field, or a bad value.
func chatOptionsOf(req ChatCompletionRequest) (chatOptions, error) {
	var o chatOptions
	present := func(raw json.RawMessage) bool {
		t := strings.TrimSpace(string(raw))
		return t != "" && t != "null" && t != "[]" && t != `""`
	}
	if present(req.Tools) || present(req.Functions) {
		param := "tools"
		if !present(req.Tools) {
			param = "functions"
		}
		return o, unsupportedParam(param, "%s is not supported: kgagent's agents call their own functions and answer in text (ask without %s, or use response_format json_schema for structured output)", param, param)
	}
	if present(req.ToolChoice) {
		var choice string
		if json.Unmarshal(req.ToolChoice, &choice) != nil || (choice != "none" && choice != "auto") {
			return o, unsupportedParam("tool_choice", `tool_choice is not supported (only "none" and "auto" without tools): kgagent's agents do not call the caller's tools`)
		}
	}
	if present(req.FunctionCall) {
		return o, unsupportedParam("function_call", "function_call is not supported: kgagent's agents do not call the caller's functions")
	}
	if req.N != nil && *req.N != 1 {
		if *req.N < 1 {
			return o, invalid(ReasonUnknownValue, "n", "n must be at least 1, not %d", *req.N)
		}
		return o, unsupportedParam("n", "n = %d is not supported: kgagent gives one answer per request (n = 1)", *req.N)
	}
	if present(req.Stop) {
		return o, unsupportedParam("stop", "stop is not supported: kgagent's answers end where the agent ends them (max_tokens cuts them)")
	}
	if req.Logprobs != nil && *req.Logprobs {
		return o, unsupportedParam("logprobs", "logprobs is not supported")
	}
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return o, invalid(ReasonUnknownValue, mt.name, "%s must be at least 1, not %d", mt.name, *mt.v)
		}
		if b := *mt.v * bytesPerToken; o.maxBytes == 0 || b < o.maxBytes {
			o.maxBytes = b
		}
	}
	if req.StreamOptions != nil {
		o.includeUsage = req.StreamOptions.IncludeUsage
	}
	if present(req.ResponseFormat) {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return o, invalid(ReasonWrongType, "response_format", "response_format must be an object with a type")
		}
		switch rf.Type {
		case "text":
		case "json_object":
			o.json = true
		case "json_schema":
			o.json = true
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return o, invalid(ReasonMissingField, "response_format", "response_format json_schema needs json_schema.schema")
			}
			if err := o.setSchema(rf.JSONSchema.Schema); err != nil {
				return o, err
			}
		default:
			return o, unsupportedParam("response_format", `response_format type %q is not supported (text, json_object or json_schema)`, rf.Type)
		}
	}
	return o, nil
}

// answerObjectDoc says what the JSON content of a json response_format is.
const answerObjectDoc = `{"answer": string, "sources": [{"url", "title", "score", "heading_path"?}], "agent"?: string, "citations"?: string}`

// setSchema takes a json_schema response format: kgagent returns its
// answer object, keeping only the properties the schema names when it
// allows no others, and refuses a schema such an object cannot satisfy
// (checked on a sample answer, before the agent runs).
func (o *chatOptions) setSchema(raw json.RawMessage) error {
	var sc jsonschema.Schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return invalid(ReasonWrongType, "response_format", "response_format json_schema.schema is not a JSON Schema: %v", err)
	}
	rs, err := sc.Resolve(nil)
	if err != nil {
		return unsupportedParam("response_format", "response_format json_schema.schema cannot be used: %v", err)
	}
	o.schema = rs
	_ = json.Unmarshal(raw, &o.rawSchema)
	sample := kgagent.Answer{Answer: "An answer [1].", Agent: "docs", Citations: kgagent.CitationsModel,
		Sources: []kgagent.Source{{URL: "https://docs.example/page#section", Title: "Page", Score: 1, HeadingPath: []string{"Page", "Section"}}}}
	if _, err := o.answerJSON(sample); err != nil {
		return unsupportedParam("response_format", "kgagent answers with the object %s; this json_schema does not accept it (%v), so it cannot be honoured", answerObjectDoc, err)
	}
	return nil
}

// answerJSON renders ans as the content of a json response format.
func (o *chatOptions) answerJSON(ans kgagent.Answer) (string, error) {
	src := make([]map[string]any, len(ans.Sources))
	for i, s := range ans.Sources {
		src[i] = map[string]any{"url": s.URL, "title": s.Title, "score": s.Score}
		if len(s.HeadingPath) > 0 {
			src[i]["heading_path"] = s.HeadingPath
		}
	}
	obj := map[string]any{"answer": ans.Answer, "sources": src}
	if ans.Agent != "" {
		obj["agent"] = ans.Agent
	}
	if ans.Citations != "" {
		obj["citations"] = ans.Citations
	}
	if o.schema == nil {
		b, err := json.Marshal(obj)
		return string(b), err
	}
	// The schema sees the object as JSON decodes it.
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var v any
	_ = json.Unmarshal(b, &v)
	v = project(v, o.rawSchema, o.rawSchema, 0)
	if err := o.schema.Validate(v); err != nil {
		return "", err
	}
	b, err = json.Marshal(v)
	return string(b), err
}

// project drops from v, at every level, the object properties that the
// schema sch (part of root) forbids with additionalProperties: false, so
// that a strict schema naming some of the answer's fields accepts it.
func project(v any, sch, root map[string]any, depth int) any {
	if depth > 32 || sch == nil {
		return v
	}
	for i := 0; i < 8; i++ { // follow local $refs ("#/$defs/Source")
		ref, ok := sch["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			break
		}
		var at any = root
		for _, part := range strings.Split(ref[2:], "/") {
			m, _ := at.(map[string]any)
			at = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
		}
		next, ok := at.(map[string]any)
		if !ok {
			return v
		}
		sch = next
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		if ap, ok := sch["additionalProperties"].(bool); ok && !ap {
			for k := range x {
				if _, ok := props[k]; !ok {
					delete(x, k)
				}
			}
		}
		for k, val := range x {
			if ps, ok := props[k].(map[string]any); ok {
				x[k] = project(val, ps, root, depth+1)
			}
		}
	case []any:
		if is, ok := sch["items"].(map[string]any); ok {
			for i := range x {
				x[i] = project(x[i], is, root, depth+1)
			}
		}
	}
	return v
}

// cut returns content cut to o.maxBytes (at a rune boundary) and whether
// it was cut.
func (o *chatOptions) cut(content string) (string, bool) {
	if o.maxBytes == 0 || len(content) <= o.maxBytes {
		return content, false
	}
	n := o.maxBytes
	for n > 0 && !utf8.RuneStart(content[n]) {
		n--
	}
	return content[:n], true
}

// chatUsage is the usage of a completion: the run's LLM tokens, or, when
// none were spent (an answer from the cache), the prompt and the reply
// counted at 4 bytes a token, so that clients never see zero.
func chatUsage(u kgagent.Usage, req ChatCompletionRequest, content string) ChatUsage {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		n := 0
		for _, m := range req.Messages {
			t, _ := m.text()
			n += len(t)
		}
		u.PromptTokens = (n + bytesPerToken - 1) / bytesPerToken
		u.CompletionTokens = (len(content) + bytesPerToken - 1) / bytesPerToken
	}
	return ChatUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}
