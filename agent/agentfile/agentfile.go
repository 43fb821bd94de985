// Package agentfile loads agents written without Go code: one YAML file per
// agent with its name, description, base prompt, few-shots (one string of
// stanzas or a list), corpora, remote funcs and LLM settings. An invalid file
// is an EINVALID *kgagent.Error naming the file, the line and the rule, so
// `kgagent serve --agents DIR` can stop at start-up with a clear message.
//
// It decodes through go.yaml.in/yaml/v3's Node tree (already in go.mod)
// rather than plain Unmarshal, because nodes carry the line numbers the
// errors need.
//
// A file looks like:
//
//	name: stocks
//	description: Stock prices
//	base_prompt: I answer questions about stock prices.
//	few_shots: |
//	  Q: Price for SYMBOL
//	  Ask Func[quote]: SYMBOL
//	  Func[quote] says: $99.11
//	  A: The share price for SYMBOL is $99.11
//	funcs:
//	  quote: https://quotes.example.com   # POST {url}/quote, agent protocol
//	  news: ${NEWS_AGENT_URL}              # ${VAR} is read from the environment
//	corpora:
//	  - urls: ["https://docs.example.com/*"]
//	collection: docs
//	conversational: false
//	llm: {model: gpt-4o-mini, temperature: 0, max_tokens: 500}
//
// A file with `url:` instead of prompts and few-shots registers the agent
// served at that URL over the agent protocol (its handshake is fetched).
package agentfile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/remote"
	"go.yaml.in/yaml/v3"
)

// Options configure loading.
type Options struct {
	// HTTPClient calls remote funcs and fetches remote handshakes; nil:
	// http.DefaultClient.
	HTTPClient *http.Client
	// Funcs are Go funcs a file may name under `funcs:` with the value
	// `builtin` (for agents mixing YAML and Go).
	Funcs map[string]agent.Func
}

// File is the decoded content of an agent file.
type File struct {
	Name           string
	Description    string
	BasePrompt     string
	FewShots       []string // one stanza per element
	Corpora        []agent.Corpus
	Collection     string
	Conversational bool
	Funcs          map[string]string // name -> base URL (or "builtin")
	LLM            agent.LLMSettings
	URL            string // a remote agent's base URL

	lines map[string]int // key -> line, for error messages
	shots []shotPos
}

type shotPos struct {
	line  int    // line of the stanza's first line in the file
	lines []int  // line of each stanza line
	text  string // the stanza
}

// Error returns the EINVALID error for a problem at line of file.
func Error(file string, line int, rule string) *kgagent.Error {
	return &kgagent.Error{
		Code:    kgagent.EINVALID,
		Message: fmt.Sprintf("%s:%d: %s", file, line, rule),
		Details: map[string]any{"file": file, "line": line, "rule": rule},
	}
}

var keys = map[string]bool{"name": true, "description": true, "base_prompt": true, "few_shots": true, "corpora": true,
	"collection": true, "conversational": true, "funcs": true, "llm": true, "url": true}

// Parse decodes an agent file; file names it in errors.
func Parse(file string, data []byte) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		msg := err.Error()
		if i := strings.Index(msg, "line "); i >= 0 {
			fmt.Sscanf(msg[i:], "line %d", &line)
		}
		return nil, Error(file, line, "not valid YAML: "+strings.TrimPrefix(msg, "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, Error(file, 1, "the file is empty; an agent file is a mapping with at least name")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, Error(file, root.Line, "an agent file must be a mapping of keys to values")
	}
	f := &File{lines: map[string]int{}}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !keys[k.Value] {
			return nil, Error(file, k.Line, fmt.Sprintf("unknown key %q (known: name, description, base_prompt, few_shots, corpora, collection, conversational, funcs, llm, url)", k.Value))
		}
		if _, dup := f.lines[k.Value]; dup {
			return nil, Error(file, k.Line, fmt.Sprintf("key %q appears twice", k.Value))
		}
		f.lines[k.Value] = v.Line
		var err error
		switch k.Value {
		case "name":
			err = str(v, &f.Name)
		case "description":
			err = str(v, &f.Description)
		case "base_prompt":
			err = str(v, &f.BasePrompt)
		case "collection":
			err = str(v, &f.Collection)
		case "url":
			if err = str(v, &f.URL); err == nil {
				f.URL, err = expand(f.URL)
			}
		case "conversational":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
				err = fmt.Errorf("conversational must be true or false")
			} else {
				err = v.Decode(&f.Conversational)
			}
		case "few_shots":
			err = f.fewShots(v)
		case "corpora":
			err = f.corpora(v)
		case "funcs":
			err = f.funcs(v)
		case "llm":
			err = f.llm(v)
		}
		if err != nil {
			var ke *kgagent.Error
			if errors.As(err, &ke) {
				return nil, Error(file, ke.Details["line"].(int), ke.Message)
			}
			return nil, Error(file, v.Line, err.Error())
		}
	}
	if f.Name == "" {
		return nil, Error(file, root.Line, "name is required")
	}
	if !agent.ValidName(f.Name) {
		return nil, Error(file, f.lines["name"], fmt.Sprintf(`name %q must match ^\w+$`, f.Name))
	}
	if f.URL != "" {
		if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, Error(file, f.lines["url"], "url must be an http(s) URL")
		}
		for _, k := range []string{"base_prompt", "few_shots", "funcs"} {
			if l, ok := f.lines[k]; ok {
				return nil, Error(file, l, k+" cannot be given for a remote agent (url): they come from its handshake")
			}
		}
	}
	return f, nil
}

// expand replaces ${VAR} in URLs with the environment variable, so one file
// serves several deployments; an unset variable is an error.
func expand(s string) (string, error) {
	var missing []string
	out := os.Expand(s, func(k string) string {
		v, ok := os.LookupEnv(k)
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

func lineErr(line int, format string, args ...any) error {
	return &kgagent.Error{Code: kgagent.EINVALID, Message: fmt.Sprintf(format, args...), Details: map[string]any{"line": line}}
}

func str(v *yaml.Node, dst *string) error {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return fmt.Errorf("want a string")
	}
	*dst = v.Value
	return nil
}

func (f *File) fewShots(v *yaml.Node) error {
	add := func(n *yaml.Node, split bool) error {
		if n.Kind == yaml.MappingNode {
			return lineErr(n.Line, "few_shots: this stanza reads as a YAML mapping; quote each stanza or write it as a | block")
		}
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return lineErr(n.Line, "few_shots must be a string of stanzas or a list of strings")
		}
		first := n.Line
		if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
			first++
		}
		text := strings.ReplaceAll(n.Value, "\r\n", "\n")
		// Map each line of the value to its line in the file (literal
		// blocks and plain multi-line values keep one line per line).
		all := strings.Split(text, "\n")
		var stanzas []string
		if split {
			stanzas = agent.SplitFewShots(text)
		} else {
			stanzas = []string{text}
		}
		cursor := 0
		for _, st := range stanzas {
			sl := strings.Split(st, "\n")
			pos := shotPos{text: st}
			for _, l := range sl {
				for cursor < len(all) && strings.TrimSpace(all[cursor]) != l {
					cursor++
				}
				ln := first + min(cursor, len(all)-1)
				pos.lines = append(pos.lines, ln)
				if cursor < len(all) {
					cursor++
				}
			}
			if len(pos.lines) > 0 {
				pos.line = pos.lines[0]
			} else {
				pos.line = first
			}
			f.shots = append(f.shots, pos)
			f.FewShots = append(f.FewShots, st)
		}
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return add(v, true)
	case yaml.SequenceNode:
		for _, it := range v.Content {
			if err := add(it, false); err != nil {
				return err
			}
		}
		return nil
	}
	return lineErr(v.Line, "few_shots must be a string of stanzas or a list of strings")
}

func (f *File) corpora(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return lineErr(v.Line, "corpora must be a list of {urls: [...], exclude: [...]}")
	}
	for _, it := range v.Content {
		var c agent.Corpus
		switch it.Kind {
		case yaml.ScalarNode: // shorthand: a URL glob
			c.URLs = []string{it.Value}
		case yaml.MappingNode:
			for i := 0; i+1 < len(it.Content); i += 2 {
				k, val := it.Content[i], it.Content[i+1]
				var dst *[]string
				switch k.Value {
				case "urls":
					dst = &c.URLs
				case "exclude":
					dst = &c.Exclude
				default:
					return lineErr(k.Line, "unknown corpus key %q (known: urls, exclude)", k.Value)
				}
				if val.Kind != yaml.SequenceNode {
					return lineErr(val.Line, "%s must be a list of URL globs", k.Value)
				}
				for _, u := range val.Content {
					if u.Kind != yaml.ScalarNode || u.Value == "" {
						return lineErr(u.Line, "%s must be a list of URL globs", k.Value)
					}
					*dst = append(*dst, u.Value)
				}
			}
		default:
			return lineErr(it.Line, "a corpus is a URL glob or {urls: [...], exclude: [...]}")
		}
		if len(c.URLs) == 0 {
			return lineErr(it.Line, "a corpus needs at least one URL")
		}
		for _, u := range c.URLs {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return lineErr(it.Line, "corpus URL %q must start with http:// or https://", u)
			}
		}
		f.Corpora = append(f.Corpora, c)
	}
	return nil
}

func (f *File) funcs(v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return lineErr(v.Line, "funcs must map func names to agent-protocol base URLs")
	}
	f.Funcs = map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if !agent.ValidName(k.Value) {
			return lineErr(k.Line, `func name %q must match ^\w+$`, k.Value)
		}
		if strings.HasPrefix(k.Value, "fixie_") {
			return lineErr(k.Line, "func %q: fixie_ names are reserved for built-ins", k.Value)
		}
		if _, dup := f.Funcs[k.Value]; dup {
			return lineErr(k.Line, "func %q is listed twice", k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return lineErr(val.Line, "func %q: want a URL", k.Value)
		}
		value := val.Value
		if value != "builtin" {
			var err error
			if value, err = expand(value); err != nil {
				return lineErr(val.Line, "func %q: %v", k.Value, err)
			}
			u, err := url.Parse(value)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return lineErr(val.Line, "func %q: %q is not an http(s) URL", k.Value, value)
			}
		}
		f.Funcs[k.Value] = value
		f.lines["funcs."+k.Value] = val.Line
	}
	return nil
}

func (f *File) llm(v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return lineErr(v.Line, "llm must be a mapping of model, temperature, max_tokens")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var err error
		switch k.Value {
		case "model":
			err = str(val, &f.LLM.Model)
		case "temperature":
			err = val.Decode(&f.LLM.Temperature)
			if err == nil && (f.LLM.Temperature < 0 || f.LLM.Temperature > 2) {
				err = fmt.Errorf("out of range")
			}
		case "max_tokens":
			err = val.Decode(&f.LLM.MaxTokens)
			if err == nil && f.LLM.MaxTokens < 0 {
				err = fmt.Errorf("out of range")
			}
		default:
			return lineErr(k.Line, "unknown llm key %q (known: model, temperature, max_tokens)", k.Value)
		}
		if err != nil {
			return lineErr(val.Line, "llm %s: want %s", k.Value, map[string]string{"model": "a string", "temperature": "a number from 0 to 2", "max_tokens": "a non-negative integer"}[k.Value])
		}
	}
	return nil
}

// Agent builds the CodeShotAgent of f. Few-shot violations are reported at
// the line of the offending stanza line in file.
func (f *File) Agent(ctx context.Context, file string, opts Options) (*agent.CodeShotAgent, error) {
	if f.URL != "" {
		a, err := remote.NewAgent(ctx, f.Name, f.URL, opts.HTTPClient)
		if err != nil {
			return nil, Error(file, f.lines["url"], "remote agent: "+kgagent.ErrorMessage(err))
		}
		return a, nil
	}
	names := make([]string, 0, len(f.Funcs))
	for n := range f.Funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	var funcs []agent.Func
	for _, n := range names {
		u := f.Funcs[n]
		if u == "builtin" {
			gf, ok := opts.Funcs[n]
			if !ok {
				return nil, Error(file, f.lines["funcs."+n], fmt.Sprintf("func %q is marked builtin but no Go func of that name is provided", n))
			}
			gf.Name = n
			funcs = append(funcs, gf)
			continue
		}
		funcs = append(funcs, remote.Func(n, u, opts.HTTPClient))
	}
	a, err := agent.NewCodeShotAgent(agent.AgentConfig{
		Name: f.Name, Description: f.Description, BasePrompt: f.BasePrompt, FewShots: f.FewShots,
		Corpora: f.Corpora, Collection: f.Collection, Conversational: f.Conversational, LLM: f.LLM, Funcs: funcs,
	})
	if err != nil {
		d := kgagent.ErrorDetails(err)
		line := f.lines["name"]
		if idx, ok := d["stanza"].(int); ok && idx >= 1 && idx <= len(f.shots) {
			sp := f.shots[idx-1]
			line = sp.line
			if bad, _ := d["line"].(string); bad != "" {
				for j, l := range strings.Split(sp.text, "\n") {
					if l == bad && j < len(sp.lines) {
						line = sp.lines[j]
						break
					}
				}
			}
			return nil, Error(file, line, fmt.Sprintf("few-shot stanza %d (%q): %s", idx, d["first_line"], d["rule"]))
		}
		return nil, Error(file, line, kgagent.ErrorMessage(err))
	}
	return a, nil
}

// LoadFile parses and builds the agent in the file at path.
func LoadFile(ctx context.Context, path string, opts Options) (*agent.CodeShotAgent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "reading agent file %s", path)
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return f.Agent(ctx, path, opts)
}

// LoadDir loads every *.yaml and *.yml file of dir, in name order. The first
// invalid file stops the load; two files with the same agent name are
// EINVALID.
func LoadDir(ctx context.Context, dir string, opts Options) ([]*agent.CodeShotAgent, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "reading agents directory %s", dir)
	}
	var out []*agent.CodeShotAgent
	seen := map[string]string{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		a, err := LoadFile(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[a.Name()]; dup {
			return nil, Error(path, 1, fmt.Sprintf("agent name %q is already used by %s", a.Name(), prev))
		}
		seen[a.Name()] = path
		out = append(out, a)
	}
	return out, nil
}

// Register loads dir and registers every agent with m.
func Register(ctx context.Context, m *agent.Manager, dir string, opts Options) ([]string, error) {
	as, err := LoadDir(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(as))
	for _, a := range as {
		if err := m.Register(a); err != nil {
			return nil, err
		}
		names = append(names, a.Name())
	}
	return names, nil
}
