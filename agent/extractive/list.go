package extractive

import (
	"fmt"
	"strings"

	"github.com/kgagent/kgagent"
)

// graphList is the first structured graph answer among the evidence.
func graphList(evs []kgagent.Evidence) *kgagent.EvidenceList {
	for i := range evs {
		if l := evs[i].List; l != nil && len(l.Items) > 0 {
			return l
		}
	}
	return nil
}

// plural is a list item kind's plural ("class" -> "classes").
func plural(kind string) string {
	switch {
	case kind == "":
		return "items"
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	}
	return kind + "s"
}

// citeN is " [n]", or "" for an unnumbered source.
func citeN(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" [%d]", n)
}

// ListAnswer writes the answer to a shaped question from the graph's
// structured answer: a one-line lead citing the subject's section, then
// one line per item with its one-line description citing the item's own
// section, "and K more" past the limit; a single value (a default, a
// version, a module) is one sentence; a comparison puts both entities side
// by side.
func ListAnswer(l *kgagent.EvidenceList) string {
	var b strings.Builder
	one := func(format string, args ...any) string {
		return fmt.Sprintf(format, args...) + citeN(l.Items[0].N) + "."
	}
	switch l.Relation {
	case "default":
		return one("The default value of `%s` in `%s` is `%s`", l.Param, l.Subject, l.Items[0].Name)
	case "added_in":
		return one("`%s` was added in Python %s (New in version %s)", l.Subject, l.Items[0].Name, l.Items[0].Name)
	case "deprecated_since":
		return one("Yes: `%s` is deprecated since version %s", l.Subject, l.Items[0].Name)
	case "subclass_of":
		return one("`%s` is a subclass of `%s`", l.Subject, l.Items[0].Name)
	case "module":
		return one("`%s` is in the `%s` module", l.Subject, l.Items[0].Name)
	case "compare":
		fmt.Fprintf(&b, "`%s` and `%s` side by side:", l.Subject, l.Other)
	case "raises":
		fmt.Fprintf(&b, "`%s` can raise:", l.Subject)
	case "implements":
		fmt.Fprintf(&b, "`%s` implements these interfaces%s:", l.Subject, citeN(l.N))
	case "parameters":
		fmt.Fprintf(&b, "`%s` accepts these parameters%s:", l.Subject, citeN(l.N))
	default:
		what := plural(l.Relation)
		if l.Restriction != "" {
			what += " for " + l.Restriction
		}
		fmt.Fprintf(&b, "`%s` provides %d %s%s:", l.Subject, len(l.Items)+l.More, what, citeN(l.N))
	}
	for _, it := range l.Items {
		b.WriteString("\n- `" + it.Name + "`")
		if it.Text != "" {
			b.WriteString(" — " + strings.TrimSpace(it.Text))
		}
		b.WriteString(citeN(it.N))
	}
	if l.More > 0 {
		fmt.Fprintf(&b, "\n- and %d more%s", l.More, citeN(l.N))
	}
	return b.String()
}

// ItemSentence states one item of a graph list as a sentence ("json.loads
// raises JSONDecodeError. Subclass of ValueError…"): what the evidence
// says of it, for judging sentences written about it.
func ItemSentence(l *kgagent.EvidenceList, it kgagent.EvidenceItem) string {
	var s string
	switch l.Relation {
	case "raises":
		s = l.Subject + " raises " + it.Name + "."
	case "parameters":
		s = l.Subject + " accepts the parameter " + it.Name + "."
	case "default":
		s = "The default value of " + l.Param + " in " + l.Subject + " is " + it.Name + "."
	case "added_in":
		s = l.Subject + " was added in version " + it.Name + "."
	case "deprecated_since":
		s = l.Subject + " is deprecated since version " + it.Name + "."
	case "subclass_of":
		s = l.Subject + " is a subclass of " + it.Name + "."
	case "implements":
		s = l.Subject + " implements " + it.Name + "."
	case "module":
		s = l.Subject + " is in the " + it.Name + " module."
	case "compare":
		s = it.Name + ":"
	default:
		s = l.Subject + " provides the " + l.Relation + " " + it.Name + "."
	}
	if it.Text != "" {
		s += " " + it.Text
	}
	return s
}
