package agent

import (
	"strings"

	"github.com/kgagent/kgagent"
)

// ParseOutput reads one LLM output: free-text thought lines, then exactly one
// of `Ask Func[name]: input`, `Ask Agent[name]: input` or `A: answer`. The
// input runs to the end of the output or the next patterned line; the answer
// runs to the end or the next Q: line. Anything else is an EINVALID error
// whose message is fed back to the model.
func ParseOutput(out string) (Step, error) {
	out = strings.TrimSpace(strings.ReplaceAll(out, "\r\n", "\n"))
	if out == "" {
		return Step{}, kgagent.Errorf(kgagent.EINVALID, "the output was empty")
	}
	lines := strings.Split(out, "\n")
	var thought []string
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		l := ClassifyLine(line)
		switch l.Kind {
		case LineThought:
			if strings.HasPrefix(line, "Ask Func") || strings.HasPrefix(line, "Ask Agent") {
				return Step{}, kgagent.Errorf(kgagent.EINVALID, "malformed action %q: write Ask Func[name]: input", line)
			}
			thought = append(thought, line)
			continue
		case LineQuery:
			return Step{}, kgagent.Errorf(kgagent.EINVALID, "the output asks a new question (Q:) instead of acting or answering")
		case LineFuncSays, LineAgentSays:
			return Step{}, kgagent.Errorf(kgagent.EINVALID, "the output invents %q: ask the func and wait for its reply", line)
		}
		st := Step{Thought: strings.TrimSpace(strings.Join(thought, "\n"))}
		rest := lines[i+1:]
		switch l.Kind {
		case LineAnswer:
			st.Kind = StepAnswer
			body := []string{l.Text}
			for _, r := range rest {
				if strings.HasPrefix(strings.TrimSpace(r), "Q:") {
					break
				}
				body = append(body, r)
			}
			st.Answer = strings.TrimSpace(strings.Join(body, "\n"))
			if st.Answer == "" {
				return Step{}, kgagent.Errorf(kgagent.EINVALID, "the answer after A: is empty")
			}
		case LineAskFunc, LineAskAgent:
			st.Kind, st.Name = StepFunc, l.Name
			if l.Kind == LineAskAgent {
				st.Kind = StepAgent
			}
			if !ValidName(l.Name) {
				return Step{}, kgagent.Errorf(kgagent.EINVALID, "name %q in %q must match ^\\w+$", l.Name, line)
			}
			body := []string{l.Text}
			for _, r := range rest {
				if ClassifyLine(strings.TrimSpace(r)).Kind != LineThought {
					break
				}
				body = append(body, r)
			}
			st.Input = strings.TrimSpace(strings.Join(body, "\n"))
		}
		return st, nil
	}
	return Step{}, kgagent.Errorf(kgagent.EINVALID, "the output has no Ask Func[name]:, Ask Agent[name]: or A: line")
}
