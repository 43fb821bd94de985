package agent

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
)

// Rules of the few-shot grammar; every validation error names one of them.
const (
	RuleEmpty          = "a few-shot stanza must not be empty"
	RuleStartsWithQ    = "the first line of a stanza must start with Q:"
	RuleQueryText      = "a Q: line must carry a query"
	RuleAskMalformed   = "an Ask line must read Ask Func[name]: input or Ask Agent[name]: input"
	RuleName           = `func and agent names must match ^\w+$`
	RuleAskThenSays    = "Ask Func[x]: must be followed directly by Func[x] says: (Ask Agent[x]: by Agent[x] says:)"
	RuleSaysWithoutAsk = "a says: line must directly follow the matching Ask line"
	RuleFuncRegistered = "every Func name must be a registered func or a fixie_ built-in"
	RuleEndsWithA      = "the last patterned line of a stanza must start with A:"
	RuleShape          = "a stanza must have the shape Q (Ask/says)* A"
	RuleShapeConv      = "a conversational stanza must have the shape (Q (Ask/says)* A)+"
)

var (
	nameRe      = regexp.MustCompile(`^\w+$`)
	askRe       = regexp.MustCompile(`^Ask (Func|Agent)\[([^\]]*)\]:[ \t]?(.*)$`)
	saysRe      = regexp.MustCompile(`^(Func|Agent)\[([^\]]*)\] says:[ \t]?(.*)$`)
	shapeRe     = regexp.MustCompile(`^Qx*A$`)
	shapeConvRe = regexp.MustCompile(`^(Qx*A)+$`)
)

// ValidName reports whether name is a valid func or agent name (^\w+$).
func ValidName(name string) bool { return nameRe.MatchString(name) }

// ClassifyLine classifies one (already stripped) line.
func ClassifyLine(line string) llm.FewShotLine {
	l := llm.FewShotLine{Kind: llm.LineThought, Text: line, Raw: line}
	switch {
	case strings.HasPrefix(line, "Q:"):
		l.Kind, l.Text = llm.LineQuery, strings.TrimSpace(line[2:])
	case strings.HasPrefix(line, "A:"):
		l.Kind, l.Text = llm.LineAnswer, strings.TrimSpace(line[2:])
	default:
		if m := askRe.FindStringSubmatch(line); m != nil {
			l.Kind, l.Name, l.Text = llm.LineAskFunc, m[2], m[3]
			if m[1] == "Agent" {
				l.Kind = llm.LineAskAgent
			}
		} else if m := saysRe.FindStringSubmatch(line); m != nil {
			l.Kind, l.Name, l.Text = llm.LineFuncSays, m[2], m[3]
			if m[1] == "Agent" {
				l.Kind = llm.LineAgentSays
			}
		}
	}
	return l
}

// StripLines trims the white space around every line of s, as the reference
// SDK does to base prompts and few-shots.
func StripLines(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// SplitFewShots splits one few-shot string into stanzas: lines are stripped
// and a new stanza starts at a Q: line that follows a blank line. Blank lines
// around stanzas are dropped; empty stanzas are not returned.
func SplitFewShots(s string) []string {
	lines := strings.Split(StripLines(s), "\n")
	var out []string
	var cur []string
	blank := true
	flush := func() {
		for len(cur) > 0 && cur[len(cur)-1] == "" {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
		}
		cur = nil
	}
	for _, l := range lines {
		if blank && strings.HasPrefix(l, "Q:") {
			flush()
		}
		if l == "" && len(cur) == 0 {
			blank = true
			continue
		}
		cur = append(cur, l)
		blank = l == ""
	}
	flush()
	return out
}

// FewShotError builds the EINVALID error of a rule violation in stanza index
// (1-based) whose first line is first.
func FewShotError(index int, first, rule, line string) *kgagent.Error {
	msg := fmt.Sprintf("few-shot stanza %d (%q): %s", index, first, rule)
	if line != "" {
		msg += fmt.Sprintf(" (at %q)", line)
	}
	return &kgagent.Error{Code: kgagent.EINVALID, Message: msg, Details: map[string]any{
		"stanza": index, "first_line": first, "rule": rule, "line": line,
	}}
}

// ParseStanza validates one stanza (already split, lines stripped) against
// the reference SDK's rules. funcExists reports whether a func is registered;
// names starting with fixie_ are always accepted. A nil funcExists accepts
// every name.
func ParseStanza(index int, text string, conversational bool, funcExists func(string) bool) (llm.Stanza, error) {
	text = strings.Trim(StripLines(text), "\n")
	st := llm.Stanza{Index: index, Text: text}
	if text == "" {
		return st, FewShotError(index, "", RuleEmpty, "")
	}
	raw := strings.Split(text, "\n")
	first := raw[0]
	for _, r := range raw {
		st.Lines = append(st.Lines, ClassifyLine(r))
	}
	if st.Lines[0].Kind != llm.LineQuery {
		return st, FewShotError(index, first, RuleStartsWithQ, first)
	}
	var shape strings.Builder
	for i, l := range st.Lines {
		switch l.Kind {
		case llm.LineQuery:
			if l.Text == "" {
				return st, FewShotError(index, first, RuleQueryText, l.Raw)
			}
			shape.WriteByte('Q')
		case llm.LineAnswer:
			shape.WriteByte('A')
		case llm.LineAskFunc, llm.LineAskAgent:
			if !ValidName(l.Name) {
				return st, FewShotError(index, first, RuleName, l.Raw)
			}
			says := llm.LineFuncSays
			if l.Kind == llm.LineAskAgent {
				says = llm.LineAgentSays
			}
			if i+1 >= len(st.Lines) || st.Lines[i+1].Kind != says || st.Lines[i+1].Name != l.Name {
				return st, FewShotError(index, first, RuleAskThenSays, l.Raw)
			}
			if l.Kind == llm.LineAskFunc && !strings.HasPrefix(l.Name, "fixie_") && funcExists != nil && !funcExists(l.Name) {
				return st, FewShotError(index, first, RuleFuncRegistered, l.Raw)
			}
			shape.WriteByte('x')
		case llm.LineFuncSays, llm.LineAgentSays:
			if !ValidName(l.Name) {
				return st, FewShotError(index, first, RuleName, l.Raw)
			}
			ask := llm.LineAskFunc
			if l.Kind == llm.LineAgentSays {
				ask = llm.LineAskAgent
			}
			if i == 0 || st.Lines[i-1].Kind != ask || st.Lines[i-1].Name != l.Name {
				return st, FewShotError(index, first, RuleSaysWithoutAsk, l.Raw)
			}
			shape.WriteByte('x')
		default:
			if strings.HasPrefix(l.Raw, "Ask Func") || strings.HasPrefix(l.Raw, "Ask Agent") {
				return st, FewShotError(index, first, RuleAskMalformed, l.Raw)
			}
		}
	}
	sh := shape.String()
	if !strings.HasSuffix(sh, "A") {
		return st, FewShotError(index, first, RuleEndsWithA, "")
	}
	if conversational {
		if !shapeConvRe.MatchString(sh) {
			return st, FewShotError(index, first, RuleShapeConv, "")
		}
	} else if !shapeRe.MatchString(sh) {
		return st, FewShotError(index, first, RuleShape, "")
	}
	return st, nil
}

// ParseFewShots validates few-shot stanzas, given as a list with one stanza
// per element (as the reference SDK takes a list); split a single few-shot
// string with SplitFewShots first. It returns the first violation as a
// *kgagent.Error with code EINVALID.
func ParseFewShots(stanzas []string, conversational bool, funcExists func(string) bool) ([]llm.Stanza, error) {
	out := make([]llm.Stanza, 0, len(stanzas))
	for i, p := range stanzas {
		st, err := ParseStanza(i+1, p, conversational, funcExists)
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, nil
}
