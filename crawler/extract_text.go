package crawler

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
)

func isMarkdownPath(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown", ".mdown":
		return true
	}
	return false
}

var (
	mdHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	mdFence   = regexp.MustCompile("^ {0,3}(```+|~~~+)[ \t]*([^`\\s]*)")
	mdList    = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+`)
	mdLink    = regexp.MustCompile(`\[([^\]\n]{0,500})\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdAutoURL = regexp.MustCompile(`<(https?://[^>\s]+)>`)
)

// extractMarkdown reads CommonMark-ish text: ATX headings start sections
// (anchors are GitHub-style slugs), fenced code is kept verbatim, pipe
// tables become rows, list runs become list blocks, the rest paragraphs.
func extractMarkdown(base *url.URL, text string) kgagent.Document {
	var doc kgagent.Document
	b := newTextBuilder()
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var para, list []string
	var table [][]string
	flush := func() {
		if len(para) > 0 {
			b.add(kgagent.Block{Kind: kgagent.BlockParagraph, Text: normSpace(strings.Join(para, " "))})
			para = nil
		}
		if len(list) > 0 {
			b.add(kgagent.Block{Kind: kgagent.BlockList, Text: strings.Join(list, "\n")})
			list = nil
		}
		if len(table) > 0 {
			rows := make([]string, len(table))
			for i, r := range table {
				rows[i] = strings.Join(r, " | ")
			}
			b.add(kgagent.Block{Kind: kgagent.BlockTable, Text: strings.Join(rows, "\n"), Rows: table})
			table = nil
		}
	}
	slugs := map[string]int{}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := mdFence.FindStringSubmatch(line); m != nil {
			flush()
			fence := m[1]
			var code []string
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence[:3]) && strings.TrimSpace(strings.Trim(strings.TrimSpace(lines[i]), fence[:1])) == "" {
					break
				}
				code = append(code, lines[i])
			}
			if t := strings.TrimRight(strings.Join(code, "\n"), "\n "); strings.TrimSpace(t) != "" {
				b.add(kgagent.Block{Kind: kgagent.BlockCode, Text: t, Lang: m[2]})
			}
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			flush()
			h := normSpace(mdInline(m[2]))
			if doc.Title == "" && len(m[1]) == 1 {
				doc.Title = h
			}
			b.open(len(m[1]), h, uniqueSlug(slugs, h))
			continue
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "|") && strings.Count(trimmed, "|") >= 2:
			if len(para) > 0 || len(list) > 0 {
				flush()
			}
			cells := strings.Split(strings.Trim(trimmed, "|"), "|")
			sep := true
			for j := range cells {
				cells[j] = normSpace(mdInline(cells[j]))
				if strings.Trim(cells[j], ":- ") != "" {
					sep = false
				}
			}
			if !sep {
				table = append(table, cells)
			}
		case mdList.MatchString(line):
			if len(para) > 0 || len(table) > 0 {
				flush()
			}
			list = append(list, "- "+normSpace(mdInline(mdList.ReplaceAllString(line, ""))))
		case len(list) > 0 && (strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "\t")):
			list[len(list)-1] += " " + normSpace(mdInline(trimmed))
		default:
			if len(list) > 0 || len(table) > 0 {
				flush()
			}
			para = append(para, mdInline(trimmed))
		}
	}
	flush()
	doc.Sections = b.done()
	seen := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(text, 5000) {
		if u := resolveLink(base, m[2]); u != "" && !seen[u] {
			seen[u] = true
			doc.Links = append(doc.Links, kgagent.Link{URL: u, Text: normSpace(m[1])})
		}
	}
	for _, m := range mdAutoURL.FindAllStringSubmatch(text, 5000) {
		if u := resolveLink(base, m[1]); u != "" && !seen[u] {
			seen[u] = true
			doc.Links = append(doc.Links, kgagent.Link{URL: u, Text: m[1]})
		}
	}
	return doc
}

// mdInline drops the inline markup that carries no text: links keep their
// text, emphasis and code spans lose their markers.
func mdInline(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	return s
}

// uniqueSlug is GitHub's heading anchor: lower case, punctuation dropped,
// spaces to hyphens, -1, -2... for repeats.
func uniqueSlug(seen map[string]int, h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	s := b.String()
	n := seen[s]
	seen[s] = n + 1
	if n > 0 {
		return s + "-" + itoa(n)
	}
	return s
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// extractPlain splits plain text into paragraphs at blank lines; the first
// short line is the title when nothing better is known.
func extractPlain(_ *url.URL, text string) kgagent.Document {
	var doc kgagent.Document
	b := newTextBuilder()
	for _, p := range splitParagraphs(text) {
		if first, _, _ := strings.Cut(strings.TrimSpace(p), "\n"); doc.Title == "" && len(first) < 120 {
			doc.Title = strings.TrimSpace(first)
		}
		b.add(kgagent.Block{Kind: kgagent.BlockParagraph, Text: normSpace(p)})
	}
	doc.Sections = b.done()
	return doc
}

func splitParagraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = strings.Trim(p, "\n"); strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// textBuilder collects blocks into sections along a heading stack.
type textBuilder struct {
	cur      kgagent.Section
	stack    []heading
	sections []kgagent.Section
}

func newTextBuilder() *textBuilder { return &textBuilder{} }

func (b *textBuilder) add(bl kgagent.Block) {
	if strings.TrimSpace(bl.Text) != "" {
		b.cur.Blocks = append(b.cur.Blocks, bl)
	}
}

func (b *textBuilder) open(level int, text, anchor string) {
	if len(b.cur.Blocks) > 0 {
		b.sections = append(b.sections, b.cur)
	}
	var path []string
	b.stack, path = pushHeading(b.stack, level, text, anchor)
	b.cur = kgagent.Section{Anchor: anchor, Heading: text, Level: level, HeadingPath: path}
}

func (b *textBuilder) done() []kgagent.Section {
	if len(b.cur.Blocks) > 0 {
		b.sections = append(b.sections, b.cur)
	}
	return b.sections
}
