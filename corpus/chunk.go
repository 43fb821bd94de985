package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// ChunkConfig bounds chunk sizes. The zero value uses the defaults.
type ChunkConfig struct {
	// MaxChars is the soft upper bound of a chunk's text in bytes (default
	// 1200). Only a single code or table line longer than this makes a bigger
	// chunk, because such lines are never cut.
	MaxChars int
	// Overlap is how many bytes of the end of one chunk are repeated at the
	// start of the next chunk of the same section (default 150; -1 for none).
	Overlap int
}

// Default chunk sizes.
const (
	DefaultMaxChars = 1200
	DefaultOverlap  = 150
)

func (c ChunkConfig) norm() ChunkConfig {
	if c.MaxChars <= 0 {
		c.MaxChars = DefaultMaxChars
	}
	if c.MaxChars < 64 {
		c.MaxChars = 64
	}
	if c.Overlap == 0 {
		c.Overlap = DefaultOverlap
	}
	if c.Overlap < 0 {
		c.Overlap = 0
	}
	if c.Overlap > c.MaxChars/2 {
		c.Overlap = c.MaxChars / 2
	}
	return c
}

// unit is an uncuttable piece of text with the separator that goes before it
// when it follows another unit.
type unit struct {
	text string
	sep  string
}

// ChunkDocument splits doc into chunks that follow its structure: each
// section (heading) is chunked on its own; inside a section blocks are packed
// up to cfg.MaxChars, long prose is split at lines, then sentences, then words,
// while code blocks and tables are split only between lines. Consecutive
// chunks of one section overlap by up to cfg.Overlap bytes of whole units.
// Chunk IDs are stable: they depend on collection, document URL and ordinal.
func ChunkDocument(doc kgagent.Document, cfg ChunkConfig) []kgagent.Chunk {
	cfg = cfg.norm()
	var out []kgagent.Chunk
	for _, sec := range doc.Sections {
		units := sectionUnits(sec, cfg.MaxChars)
		texts := pack(units, cfg)
		if len(texts) == 0 && strings.TrimSpace(sec.Heading) != "" && len(sec.HeadingPath) > 0 {
			// A section with a heading and no text (an API reference's
			// one-line module entry, say) is still a place someone may
			// look for: its heading becomes its chunk.
			texts = []string{strings.TrimSpace(sec.Heading)}
		}
		for _, text := range texts {
			c := kgagent.Chunk{
				Collection:  doc.Collection,
				DocURL:      doc.URL,
				URL:         doc.URL,
				Title:       doc.Title,
				HeadingPath: append([]string(nil), sec.HeadingPath...),
				Anchor:      sec.Anchor,
				Ordinal:     len(out),
				Text:        text,
			}
			if len(c.HeadingPath) == 0 && sec.Heading != "" && sec.Heading != doc.Title {
				c.HeadingPath = []string{sec.Heading}
			}
			if sec.Anchor != "" {
				c.URL = doc.URL + "#" + sec.Anchor
			}
			c.ID = ChunkID(doc.Collection, doc.URL, c.Ordinal)
			c.Hash = hashText(text)
			out = append(out, c)
		}
	}
	return out
}

// ChunkText chunks plain text (an embed, a text/plain page) as one document:
// blank lines separate paragraphs and lines starting with '#' are headings.
func ChunkText(collection, url, title, text string, cfg ChunkConfig) []kgagent.Chunk {
	return ChunkDocument(TextDocument(collection, url, title, text), cfg)
}

// TextDocument turns plain or markdown-ish text into a Document: lines
// starting with '#' become headings, fenced ``` blocks become code blocks and
// blank lines separate paragraphs.
func TextDocument(collection, url, title, text string) kgagent.Document {
	doc := kgagent.Document{Collection: collection, URL: url, CanonicalURL: url, Title: title, ContentType: "text/plain"}
	sec := kgagent.Section{Heading: title}
	var path []string
	var para []string
	var code []string
	inCode := false
	flushPara := func() {
		if len(para) > 0 {
			sec.Blocks = append(sec.Blocks, kgagent.Block{Kind: kgagent.BlockParagraph, Text: strings.Join(para, "\n")})
			para = nil
		}
	}
	flushSec := func() {
		flushPara()
		if len(sec.Blocks) > 0 {
			doc.Sections = append(doc.Sections, sec)
		}
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	for _, line := range strings.Split(text, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			if inCode {
				sec.Blocks = append(sec.Blocks, kgagent.Block{Kind: kgagent.BlockCode, Text: strings.Join(code, "\n")})
				code = nil
				inCode = false
			} else {
				flushPara()
				inCode = true
			}
			continue
		}
		if inCode {
			code = append(code, line)
			continue
		}
		if level := headingLevel(trim); level > 0 {
			flushSec()
			h := strings.TrimSpace(trim[level:])
			if level-1 < len(path) {
				path = path[:level-1]
			}
			for len(path) < level-1 {
				path = append(path, "")
			}
			path = append(path, h)
			hp := make([]string, 0, len(path))
			for _, p := range path {
				if p != "" {
					hp = append(hp, p)
				}
			}
			sec = kgagent.Section{Heading: h, Level: level, HeadingPath: hp, Anchor: Slug(h)}
			continue
		}
		if trim == "" {
			flushPara()
			continue
		}
		para = append(para, trim)
	}
	if inCode && len(code) > 0 {
		sec.Blocks = append(sec.Blocks, kgagent.Block{Kind: kgagent.BlockCode, Text: strings.Join(code, "\n")})
	}
	flushSec()
	return doc
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// Slug makes an anchor from a heading: lower case, letters and digits joined
// by single dashes.
func Slug(s string) string { return text.JoinWords(s, '-') }

// ChunkID is the stable ID of the ordinal-th chunk of docURL in collection:
// the first 32 hex digits of a SHA-256 over the three.
func ChunkID(collection, docURL string, ordinal int) string {
	h := sha256.New()
	h.Write([]byte(collection))
	h.Write([]byte{0})
	h.Write([]byte(docURL))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(ordinal)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// PageTitle is the title a chunk's page is known by: the page's top heading
// when the HTML <title> is that heading plus a site suffix ("json — JSON
// encoder and decoder — Python 3.11 documentation"), else the title.
func PageTitle(c kgagent.Chunk) string {
	if len(c.HeadingPath) > 0 {
		h := strings.TrimSpace(c.HeadingPath[0])
		if h != "" && (c.Title == "" || strings.HasPrefix(c.Title, h)) {
			return h
		}
	}
	return c.Title
}

// HeadingText is a chunk's heading path below its page title, joined with
// " › ".
func HeadingText(c kgagent.Chunk) string {
	title := PageTitle(c)
	var parts []string
	for _, h := range c.HeadingPath {
		if h != "" && h != title && h != c.Title {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, " \u203a ")
}

// IndexText is what gets embedded for a chunk: the page title and heading
// path on the first line (so their words count, and the lexical embedder
// weighs them as a title) followed by the text.
func IndexText(c kgagent.Chunk) string {
	return indexText(PageTitle(c), HeadingText(c), c.Text)
}

// headSep stands between IndexText's page title and headings.
const headSep = " \u203a "

// indexText is IndexText of a chunk with the page title title, the heading
// text headings and the text body.
func indexText(title, headings, body string) string {
	var b strings.Builder
	b.Grow(len(title) + len(headSep) + len(headings) + 1 + len(body))
	b.WriteString(title)
	if headings != "" {
		b.WriteString(headSep)
		b.WriteString(headings)
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String()
}

// sectionUnits breaks a section's blocks into uncuttable units, each at most
// max bytes except single code or table lines.
func sectionUnits(sec kgagent.Section, max int) []unit {
	var units []unit
	first := true
	for _, b := range sec.Blocks {
		text := strings.TrimRight(strings.ReplaceAll(b.Text, "\r\n", "\n"), "\n ")
		if b.Kind != kgagent.BlockCode {
			text = strings.TrimSpace(text)
		}
		if text == "" {
			continue
		}
		blockSep := "\n\n"
		if first {
			blockSep = ""
		}
		first = false
		lines := strings.Split(text, "\n")
		for i, line := range lines {
			sep := "\n"
			if i == 0 {
				sep = blockSep
			}
			if b.Kind == kgagent.BlockCode || b.Kind == kgagent.BlockTable {
				units = append(units, unit{text: line, sep: sep})
				continue
			}
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if len(line) <= max {
				units = append(units, unit{text: line, sep: sep})
				continue
			}
			for j, s := range splitSentences(line, max) {
				if j > 0 {
					sep = " "
				}
				units = append(units, unit{text: s, sep: sep})
			}
		}
	}
	return units
}

// chunkSentences is where the chunker cuts a long line: a sentence end
// before a word that starts like a sentence. It shapes the stored chunks:
// changing it changes every collection's chunks.
var chunkSentences = text.SentenceRule{Starts: `"('`}

// splitSentences cuts s (a trimmed line) after sentence ends, and cuts any
// sentence longer than max between words (or, for a single giant word,
// between runes).
func splitSentences(s string, max int) []string {
	var out []string
	for _, sent := range chunkSentences.Split(s) {
		if len(sent) <= max {
			out = append(out, sent)
			continue
		}
		out = append(out, splitWords(sent, max)...)
	}
	return out
}

func splitWords(s string, max int) []string {
	var out []string
	for len(s) > max {
		cut := strings.LastIndexByte(s[:max], ' ')
		if cut <= 0 {
			cut = max
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			if cut == 0 {
				_, n := utf8.DecodeRuneInString(s)
				cut = n
			}
			out = append(out, s[:cut])
			s = s[cut:]
			continue
		}
		out = append(out, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// pack joins units into chunk texts of at most cfg.MaxChars bytes, carrying
// whole units of up to cfg.Overlap bytes from one chunk into the next.
func pack(units []unit, cfg ChunkConfig) []string {
	var out []string
	var cur []unit
	size := 0
	fresh := 0 // units in cur that were not carried over
	join := func(us []unit) string {
		var b strings.Builder
		for i, u := range us {
			if i > 0 {
				sep := u.sep
				if sep == "" {
					sep = "\n"
				}
				b.WriteString(sep)
			}
			b.WriteString(u.text)
		}
		return b.String()
	}
	flush := func() {
		if fresh == 0 {
			return
		}
		if t := join(cur); strings.TrimSpace(t) != "" {
			out = append(out, t)
		}
		// carry the tail of cur into the next chunk
		var carry []unit
		n := 0
		for i := len(cur) - 1; i >= 0; i-- {
			l := len(cur[i].text) + len(cur[i].sep)
			if n+l > cfg.Overlap {
				break
			}
			n += l
			carry = append([]unit{cur[i]}, carry...)
		}
		if len(carry) == len(cur) {
			carry = nil // never repeat a whole chunk
			n = 0
		}
		cur, size, fresh = carry, n, 0
	}
	for _, u := range units {
		l := len(u.text) + len(u.sep)
		if len(cur) > 0 && size+l > cfg.MaxChars {
			flush()
			if len(cur) > 0 && size+l > cfg.MaxChars {
				cur, size = nil, 0
			}
		}
		cur = append(cur, u)
		size += l
		fresh++
	}
	flush()
	return out
}
