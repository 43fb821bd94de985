package agent

import (
	"encoding/json"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
	"github.com/kgagent/kgagent/llm"
)

// ParseOutput reads one LLM output: free-text thought lines, then exactly one
// of `Ask Func[name]: input`, `Ask Agent[name]: input` or `A: answer`, each at
// the start of a line and outside code fences (a line inside ``` or ~~~ is
// thought, whatever it says). The input is the rest of its line, or, when it
// opens a JSON object or array, the lines up to where that JSON value is
// complete; whatever follows the action is dropped. The answer runs to the
// end, the next Q: line, or the first long line it repeats (a looping model).
// Anything else is an EINVALID error whose message is fed back to the model.
func ParseOutput(out string) (llm.Step, error) {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	if sc := scanOutput(out, true); sc.end >= 0 {
		out = out[:sc.end]
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "the output was empty")
	}
	lines := strings.Split(out, "\n")
	var thought []string
	var fence text.Fence
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if fence.Code(line) {
			thought = append(thought, line)
			continue
		}
		l := ClassifyLine(line)
		switch l.Kind {
		case llm.LineThought:
			if strings.HasPrefix(line, "Ask Func") || strings.HasPrefix(line, "Ask Agent") {
				return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "malformed action %q: write Ask Func[name]: input", text.Truncate(line, 120))
			}
			thought = append(thought, line)
			continue
		case llm.LineQuery:
			return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "the output asks a new question (Q:) instead of acting or answering")
		case llm.LineFuncSays, llm.LineAgentSays:
			return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "the output invents %q: ask the func and wait for its reply", text.Truncate(line, 120))
		}
		st := llm.Step{Thought: strings.TrimSpace(strings.Join(thought, "\n"))}
		rest := lines[i+1:]
		switch l.Kind {
		case llm.LineAnswer:
			st.Kind = llm.StepAnswer
			body := []string{l.Text}
			for _, r := range rest {
				if strings.HasPrefix(strings.TrimSpace(r), "Q:") {
					break
				}
				body = append(body, r)
			}
			st.Answer = strings.TrimSpace(strings.Join(body, "\n"))
			if st.Answer == "" {
				return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "the answer after A: is empty")
			}
		case llm.LineAskFunc, llm.LineAskAgent:
			st.Kind, st.Name = llm.StepFunc, l.Name
			if l.Kind == llm.LineAskAgent {
				st.Kind = llm.StepAgent
			}
			if !ValidName(l.Name) {
				return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "name %q in %q must match ^\\w+$", text.Truncate(l.Name, 60), text.Truncate(line, 120))
			}
			// scanOutput cut the output where the action ends: what is left
			// after the Ask line is the rest of a multi-line JSON input.
			st.Input = strings.TrimSpace(strings.Join(append([]string{l.Text}, rest...), "\n"))
		}
		return st, nil
	}
	return llm.Step{}, kgagent.Errorf(kgagent.EINVALID, "the output has no Ask Func[name]:, Ask Agent[name]: or A: line")
}

// outputScan is what scanOutput found in a (possibly partial) output.
type outputScan struct {
	// answerAt is the offset of the answer text (after "A:" and one space
	// or tab) when an answer line came before any action; -1 otherwise.
	answerAt int
	// action is set when an action line came first (the output is then not
	// an answer, whatever follows).
	action bool
	// end is where the output should be cut: just after the first complete
	// action, or where an answer starts repeating a long line; -1 when the
	// output may go on.
	end int
	// reason says why end was set: "action" or "repeat".
	reason string
}

// repeatMinLen is the shortest answer line whose repetition cuts an answer:
// short lines (a closing fence, "- yes") legitimately repeat.
const repeatMinLen = 16

// scanOutput walks the lines of an output outside code fences. It is run on
// the stream as it grows (final false: the last line may be incomplete and
// is not yet judged, except that an `A:` at its start is an answer) and on
// the whole output (final true).
func scanOutput(s string, final bool) outputScan {
	sc := outputScan{answerAt: -1, end: -1}
	var fence text.Fence
	var seen map[string]bool
	jsonFrom := -1 // offset of a JSON action input that is not yet complete
	for pos := 0; pos < len(s); {
		lineEnd, next, complete := len(s), len(s), final
		if nl := strings.IndexByte(s[pos:], '\n'); nl >= 0 {
			lineEnd, next, complete = pos+nl, pos+nl+1, true
		}
		raw := s[pos:lineEnd]
		if jsonFrom >= 0 {
			if json.Valid([]byte(s[jsonFrom:lineEnd])) {
				sc.end, sc.reason = lineEnd, "action"
				return sc
			}
			pos = next
			continue
		}
		line := strings.TrimSpace(raw)
		if fence.Code(line) {
			pos = next
			continue
		}
		if sc.answerAt >= 0 {
			if cut := loopStart(s[max(pos, sc.answerAt):lineEnd]); cut >= 0 {
				sc.end, sc.reason = max(pos, sc.answerAt)+cut, "repeat"
				return sc
			}
			if complete && len(line) >= repeatMinLen {
				if seen[line] {
					sc.end, sc.reason = pos, "repeat"
					return sc
				}
				seen[line] = true
			}
			pos = next
			continue
		}
		l := ClassifyLine(line)
		switch l.Kind {
		case llm.LineAnswer:
			at := pos + strings.Index(raw, "A:") + 2
			if at < len(s) && (s[at] == ' ' || s[at] == '\t') {
				at++
			}
			sc.answerAt = at
			if cut := loopStart(s[min(at, lineEnd):lineEnd]); cut >= 0 {
				sc.end, sc.reason = at+cut, "repeat"
				return sc
			}
			seen = map[string]bool{}
			if complete && len(line) >= repeatMinLen {
				seen[line] = true
			}
		case llm.LineAskFunc, llm.LineAskAgent:
			if !complete {
				return sc
			}
			sc.action = true
			in := strings.TrimSpace(l.Text)
			if (strings.HasPrefix(in, "{") || strings.HasPrefix(in, "[")) && !json.Valid([]byte(in)) {
				jsonFrom = pos + strings.Index(raw, in)
				pos = next
				continue
			}
			sc.end, sc.reason = lineEnd, "action"
			return sc
		case llm.LineQuery, llm.LineFuncSays, llm.LineAgentSays:
			return sc
		}
		pos = next
	}
	return sc
}

// loopStart finds a phrase repeated back to back within a line, as a looping
// model writes it ("a value that is a value that is a value that is ..."):
// when the text ends in three or more copies of a phrase of 8 to 200 bytes,
// it returns where the second copy starts (the first is kept); else -1.
func loopStart(line string) int {
	for p := 8; p <= 200 && 3*p <= len(line); p++ {
		n := len(line)
		a, b, c := line[n-3*p:n-2*p], line[n-2*p:n-p], line[n-p:]
		if a == b && b == c && strings.TrimSpace(a) != "" {
			// Walk back over further copies to the first.
			start := n - 3*p
			for start-p >= 0 && line[start-p:start] == a {
				start -= p
			}
			return start + p
		}
	}
	return -1
}
