package crawler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

func readSite(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "site", filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func findSection(doc kgagent.Document, anchor string) *kgagent.Section {
	for i := range doc.Sections {
		if doc.Sections[i].Anchor == anchor {
			return &doc.Sections[i]
		}
	}
	return nil
}

func TestExtractSitePages(t *testing.T) {
	const base = "http://127.0.0.1:9/"
	tests := []struct {
		path, ct     string
		title        string
		anchor       string // a section that must exist
		headingPath  []string
		kind         kgagent.BlockKind
		contains     string // text of a block of that kind in that section
		wantLink     string // an absolute outgoing link
		wantNotText  string // text that must not be in any section (nav, footer, scripts)
		wantLang     string
		wantCanon    string
		wantMediaOut string
	}{
		{path: "configuration/index.html", ct: "text/html; charset=utf-8", title: "Configuration reference — Lumen documentation",
			anchor: "settings", headingPath: []string{"Configuration reference", "Settings"}, kind: kgagent.BlockTable,
			contains: "http.port | 8086 | Port of the HTTP API.", wantLink: base + "configuration/storage.html",
			wantNotText: "Copyright 2026", wantLang: "en", wantCanon: base + "configuration/index.html", wantMediaOut: MediaHTML},
		{path: "glossary.html", ct: "text/html", anchor: "glossary", kind: kgagent.BlockDefList,
			contains: "Series: All points that share a measurement and a tag set.", wantNotText: "Search the docs", wantMediaOut: MediaHTML},
		{path: "getting-started/concepts.html", ct: "text/html", anchor: "compaction",
			headingPath: []string{"Core concepts", "Storage layout", "Compaction"}, kind: kgagent.BlockParagraph,
			contains: "every 10 minutes", wantLink: base + "configuration/storage.html#shard-duration", wantMediaOut: MediaHTML},
		{path: "getting-started/concepts.html", ct: "text/html", anchor: "data-model", kind: kgagent.BlockParagraph, contains: "A measurement groups points", wantMediaOut: MediaHTML},
		{path: "api/python/client.html", ct: "", anchor: "lumen.connect", kind: kgagent.BlockParagraph, contains: "the default is 10 seconds", wantMediaOut: MediaHTML},
		{path: "cli/lumen-backup.html", ct: "text/html", anchor: "restore", kind: kgagent.BlockCode,
			contains: "lumen backup restore --input DIR [--db NAME] [--new-name NAME]", wantMediaOut: MediaHTML},
		{path: "getting-started/quickstart.html", ct: "text/html", anchor: "write-data", kind: kgagent.BlockCode,
			contains: "cpu,host=web2 usage=0.31 1767225600000000000\ncpu,host=web1", wantMediaOut: MediaHTML},
		{path: "notes/release-process.md", ct: "text/markdown; charset=utf-8", title: "Release process", anchor: "checklist",
			headingPath: []string{"Release process", "Checklist"}, kind: kgagent.BlockCode, contains: "make release VERSION=2.4.1", wantMediaOut: MediaMarkdown},
		{path: "notes/release-process.md", ct: "text/plain; charset=utf-8", anchor: "versioning", kind: kgagent.BlockParagraph, contains: "semantic versioning", wantMediaOut: MediaMarkdown},
		{path: "notes/LICENSE.txt", ct: "text/plain; charset=utf-8", title: "Lumen", kind: kgagent.BlockParagraph, contains: "Apache License, Version 2.0", wantMediaOut: MediaPlain},
	}
	for _, tt := range tests {
		t.Run(tt.path+"#"+tt.anchor, func(t *testing.T) {
			doc, err := Extract(base+tt.path, tt.ct, readSite(t, tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if doc.ContentType != tt.wantMediaOut {
				t.Errorf("content type = %q, want %q", doc.ContentType, tt.wantMediaOut)
			}
			if tt.title != "" && doc.Title != tt.title {
				t.Errorf("title = %q, want %q", doc.Title, tt.title)
			}
			if tt.wantLang != "" && doc.Lang != tt.wantLang {
				t.Errorf("lang = %q, want %q", doc.Lang, tt.wantLang)
			}
			if tt.wantCanon != "" && doc.CanonicalURL != tt.wantCanon {
				t.Errorf("canonical = %q, want %q", doc.CanonicalURL, tt.wantCanon)
			}
			if len(doc.ContentHash) != 64 {
				t.Errorf("content hash %q", doc.ContentHash)
			}
			var sec *kgagent.Section
			if tt.anchor != "" {
				sec = findSection(doc, tt.anchor)
				if sec == nil {
					t.Fatalf("no section #%s in %+v", tt.anchor, doc.Sections)
				}
			} else {
				sec = &doc.Sections[0]
			}
			if tt.headingPath != nil && strings.Join(sec.HeadingPath, " > ") != strings.Join(tt.headingPath, " > ") {
				t.Errorf("heading path = %q, want %q", sec.HeadingPath, tt.headingPath)
			}
			found := false
			for _, b := range sec.Blocks {
				if b.Kind == tt.kind && strings.Contains(b.Text, tt.contains) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s block containing %q in section %+v", tt.kind, tt.contains, sec.Blocks)
			}
			if tt.wantLink != "" {
				ok := false
				for _, l := range doc.Links {
					ok = ok || l.URL == tt.wantLink
				}
				if !ok {
					t.Errorf("link %s missing from %v", tt.wantLink, doc.Links)
				}
			}
			if tt.wantNotText != "" {
				for _, s := range doc.Sections {
					for _, b := range s.Blocks {
						if strings.Contains(b.Text, tt.wantNotText) {
							t.Errorf("boilerplate %q leaked into section %q", tt.wantNotText, s.Heading)
						}
					}
				}
			}
		})
	}
}

func TestExtractStructures(t *testing.T) {
	page := `<!doctype html><html lang="de"><head><title> T </title><base href="http://other.example/root/">
<link rel="canonical" href="canon.html"></head><body>
<nav><a href="/nav">Nav link</a> NAVTEXT</nav>
<div class="content">
Lead text before headings.
<h2><a id="first"></a>First ¶</h2>
<p>Para <b>bold</b> and <code>code</code>.</p>
<table><tr><th>Key</th><th>Value</th></tr><tr><td>port</td><td>8086</td></tr></table>
<pre class="language-go">func main() {
	fmt.Println("x")   // spaces kept
}
</pre>
<dl><dt>alpha</dt><dt>beta</dt><dd>Both letters.</dd><dt>gamma</dt><dd>Third.</dd></dl>
<ul><li>one</li><li>two <em>words</em></li></ul>
<h3 id="deep">Deep</h3><p>Deep text</p>
<h2 id="second">Second</h2><p>Back at two.</p>
<a href="mailto:x@y">mail</a><a href="javascript:void(0)">js</a><a href="#deep">self</a>
</div>
<footer>FOOTERTEXT</footer><script>SCRIPTTEXT</script></body></html>`
	doc, err := Extract("http://site.example/a/b.html", "text/html", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "T" || doc.Lang != "de" || doc.CanonicalURL != "http://other.example/root/canon.html" {
		t.Errorf("title/lang/canonical = %q %q %q", doc.Title, doc.Lang, doc.CanonicalURL)
	}
	type want struct {
		anchor, heading string
		level           int
		path            string
		kinds           string
	}
	wants := []want{
		{"", "T", 0, "T", "paragraph"},
		{"first", "First ¶", 2, "First ¶", "paragraph,table,code,deflist,list"},
		{"deep", "Deep", 3, "First ¶ > Deep", "paragraph"},
		{"second", "Second", 2, "Second", "paragraph,paragraph"}, // the inline links make a paragraph
	}
	if len(doc.Sections) != len(wants) {
		t.Fatalf("got %d sections: %+v", len(doc.Sections), doc.Sections)
	}
	for i, w := range wants {
		s := doc.Sections[i]
		var kinds []string
		for _, b := range s.Blocks {
			kinds = append(kinds, string(b.Kind))
		}
		got := want{s.Anchor, s.Heading, s.Level, strings.Join(s.HeadingPath, " > "), strings.Join(kinds, ",")}
		if got != w {
			t.Errorf("section %d = %+v, want %+v", i, got, w)
		}
	}
	first := doc.Sections[1].Blocks
	if first[1].Rows[1][1] != "8086" || first[1].Text != "Key | Value\nport | 8086" {
		t.Errorf("table = %q %q", first[1].Rows, first[1].Text)
	}
	if want := "func main() {\n\tfmt.Println(\"x\")   // spaces kept\n}"; first[2].Text != want || first[2].Lang != "go" {
		t.Errorf("code = %q lang %q, want %q", first[2].Text, first[2].Lang, want)
	}
	if terms := first[3].Terms; len(terms) != 3 || terms[0].Term != "alpha" || terms[1].Definition != "Both letters." || terms[2].Term != "gamma" {
		t.Errorf("terms = %+v", terms)
	}
	if first[4].Text != "- one\n- two words" {
		t.Errorf("list = %q", first[4].Text)
	}
	for _, s := range doc.Sections {
		for _, b := range s.Blocks {
			for _, bad := range []string{"NAVTEXT", "FOOTERTEXT", "SCRIPTTEXT"} {
				if strings.Contains(b.Text, bad) {
					t.Errorf("%s leaked", bad)
				}
			}
		}
	}
	var links []string
	for _, l := range doc.Links {
		links = append(links, l.URL)
	}
	if got, want := strings.Join(links, " "), "http://other.example/nav http://other.example/root/#deep"; got != want {
		t.Errorf("links = %s, want %s", got, want)
	}
}

func TestExtractErrors(t *testing.T) {
	tests := []struct {
		name, url, ct string
		body          []byte
		code          string
	}{
		{"relative url", "/x.html", "text/html", []byte("<p>x</p>"), kgagent.EINVALID},
		{"pdf", "http://h/x.pdf", "application/pdf", []byte("%PDF-1.4 ..."), kgagent.EUNSUPPORTED},
		{"image sniffed", "http://h/x", "", []byte("\x89PNG\r\n\x1a\n\x00\x00"), kgagent.EUNSUPPORTED},
		{"binary as html", "http://h/x", "text/html", []byte("<p>\x00\x01\x02garbage</p>"), kgagent.EINVALID},
		{"invalid utf8", "http://h/x", "text/html; charset=utf-8", []byte("<p>caf\xe9 \xff\xfe</p>"), kgagent.EINVALID},
		{"empty page", "http://h/x", "text/html", []byte("<html><body><nav>only nav</nav></body></html>"), kgagent.EINVALID},
		{"empty text", "http://h/x", "text/plain", []byte("  \n\n "), kgagent.EINVALID},
		{"meta robots noindex", "http://h/x", "text/html", []byte(`<head><meta name="ROBOTS" content="NOINDEX, follow"></head><p>x</p>`), kgagent.EFORBIDDEN},
		{"meta kgagent none", "http://h/x", "text/html", []byte(`<head><meta name="kgagent" content="none"></head><p>x</p>`), kgagent.EFORBIDDEN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(tt.url, tt.ct, tt.body)
			if kgagent.ErrorCode(err) != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
		})
	}
}

func TestExtractNofollow(t *testing.T) {
	doc, err := Extract("http://h/x", "text/html", []byte(`<head><meta name="robots" content="nofollow"></head><p>x <a href="/y">y</a></p>`))
	if err != nil || len(doc.Links) != 0 {
		t.Fatalf("nofollow: %v %+v", err, doc.Links)
	}
	doc, err = Extract("http://h/x", "text/html", []byte(`<head><meta name="description" content="noindex"></head><p>x <a href="/y">y</a></p>`))
	if err != nil || len(doc.Links) != 1 {
		t.Fatalf("other meta: %v %+v", err, doc.Links)
	}
}

func TestExtractLatin1(t *testing.T) {
	doc, err := Extract("http://h/x", "text/html; charset=iso-8859-1", []byte("<p>caf\xe9</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Sections[0].Blocks[0].Text; got != "café" {
		t.Errorf("text = %q", got)
	}
	doc2, err := Extract("http://h/x", "text/html", []byte(`<meta charset="windows-1252"><p>caf`+"\xe9</p>"))
	if err != nil || doc2.Sections[0].Blocks[0].Text != "café" {
		t.Errorf("meta charset: %v %+v", err, doc2.Sections)
	}
}

func TestExtractHashIgnoresMarkup(t *testing.T) {
	a, err1 := Extract("http://h/a", "text/html", []byte(`<h1 id="x">H</h1><p>Same   text</p>`))
	b, err2 := Extract("http://h/b", "text/html", []byte(`<div class="new"><h1 id="x">H</h1><p>Same <span>text</span></p></div>`))
	c, err3 := Extract("http://h/a", "text/html", []byte(`<h1 id="x">H</h1><p>Other text</p>`))
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	if a.ContentHash != b.ContentHash {
		t.Error("markup-only change altered the hash")
	}
	if a.ContentHash == c.ContentHash {
		t.Error("text change kept the hash")
	}
}

func TestExtractSphinxAPI(t *testing.T) {
	page := `<html><body><div role="main"><section id="module-m"><span id="lbl"></span><h1>m — Mod<a class="headerlink" href="#module-m">¶</a></h1>
<p>Intro.</p>
<div class="admonition note"><p class="admonition-title">Note</p><p>Mind the gap.</p></div>
<dl class="py function"><dt class="sig sig-object py" id="m.f"><span>m.f</span>(<em>a</em>, <em>b=1</em>)<a class="headerlink" href="#m.f">¶</a></dt>
<dd><p>Does f.</p><div class="highlight-python3"><div class="highlight"><pre>m.f(1)</pre></div></div></dd></dl>
<p>After the list.</p></section></div></body></html>`
	doc, err := Extract("http://h/m.html", "text/html", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	f := findSection(doc, "m.f")
	if f == nil || f.Heading != "m.f ( a , b=1 )" && f.Heading != "m.f(a, b=1)" {
		t.Fatalf("sections = %+v", doc.Sections)
	}
	if f.Level != 2 || strings.Join(f.HeadingPath, " > ") != "m — Mod > "+f.Heading || len(f.Blocks) != 2 || f.Blocks[1].Lang != "python3" {
		t.Errorf("api section = %+v", f)
	}
	if s := findSection(doc, "module-m"); s == nil || s.Blocks[0].Text != "Intro." || s.Blocks[1].Text != "Note: Mind the gap." {
		t.Errorf("module section: %+v", doc.Sections)
	}
	last := doc.Sections[len(doc.Sections)-1]
	if last.Anchor != "module-m" || last.Blocks[0].Text != "After the list." {
		t.Errorf("text after API list went to %+v", last)
	}
}

// TestExtractJavadocMemberSections: a list whose items hold headings
// (Javadoc's member details: ul > li > section id="read()" > h3) opens a
// section per heading, its notes a definition list under it; a plain list
// stays a list block.
func TestExtractJavadocMemberSections(t *testing.T) {
	page := `<html><body><main><h1>Class F</h1><p>Intro.</p><ul><li>plain item</li></ul>
<section class="details"><ul class="details-list"><li><section class="method-details" id="method-detail"><h2>Method Details</h2>
<ul class="member-list"><li><section class="detail" id="read()"><h3>read</h3>
<div class="member-signature">public int read() throws IOException</div><div class="block">Reads a byte.</div>
<dl class="notes"><dt>Throws:</dt><dd><code>IOException</code> - if an I/O error occurs.</dd></dl></section></li>
<li><section class="detail" id="close()"><h3>close</h3><div class="block">Closes it.</div></section></li></ul></section></li></ul></section>
</main></body></html>`
	doc, err := Extract("http://h/F.html", "text/html", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	r := findSection(doc, "read()")
	if r == nil || r.Heading != "read" || r.Level != 3 || strings.Join(r.HeadingPath, " > ") != "Class F > Method Details > read" {
		t.Fatalf("sections = %+v", doc.Sections)
	}
	if len(r.Blocks) != 3 || r.Blocks[0].Text != "public int read() throws IOException" || r.Blocks[1].Text != "Reads a byte." ||
		r.Blocks[2].Kind != kgagent.BlockDefList || r.Blocks[2].Terms[0].Term != "Throws:" {
		t.Errorf("read section blocks = %+v", r.Blocks)
	}
	if c := findSection(doc, "close()"); c == nil || len(c.Blocks) != 1 || c.Blocks[0].Text != "Closes it." {
		t.Errorf("close section = %+v", c)
	}
	if top := doc.Sections[0]; top.Heading != "Class F" || len(top.Blocks) != 2 || top.Blocks[1].Kind != kgagent.BlockList {
		t.Errorf("a list without headings stays a list: %+v", top)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("text/html", []byte(`<h1 id="a">x</h1><p>y</p><table><tr><td>1</td></tr></table><dl><dt>a</dt><dd>b</dd></dl>`))
	f.Add("text/markdown", []byte("# T\n\n## S\n\n```go\ncode\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n- item [l](http://x/y)\n"))
	f.Add("text/plain", []byte("title\n\nbody text"))
	f.Add("", []byte("\xef\xbb\xbf<html><body><main><pre>x</pre></main>"))
	f.Add("text/html; charset=iso-8859-1", []byte("<p>\xe9</p>"))
	f.Add("text/html", []byte(strings.Repeat("<div>", 2000)+"deep"))
	// The sample site's pages as seeds, so mutations start from real markup.
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "site", "*", "*.html"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add("text/html; charset=utf-8", b)
		}
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		doc, err := Extract("http://fuzz.example/p/", ct, body)
		if err != nil {
			if kgagent.ErrorCode(err) == kgagent.EINTERNAL {
				t.Fatalf("internal error: %v", err)
			}
			return
		}
		if !IsTextMedia(doc.ContentType) || len(doc.ContentHash) != 64 || len(doc.Sections) == 0 {
			t.Fatalf("bad document: %+v", doc)
		}
		for _, s := range doc.Sections {
			if !utf8.ValidString(s.Heading) {
				t.Fatalf("invalid UTF-8 heading %q", s.Heading)
			}
			for _, b := range s.Blocks {
				if !utf8.ValidString(b.Text) {
					t.Fatalf("invalid UTF-8 text %q", b.Text)
				}
			}
		}
		for _, l := range doc.Links {
			if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
				t.Fatalf("non-absolute link %q", l.URL)
			}
		}
	})
}

// BenchmarkExtractPyDocs extracts one large page of the Python docs
// (library/stdtypes.html, about 1 MB).
func BenchmarkExtractPyDocs(b *testing.B) {
	body, err := os.ReadFile("/usr/share/doc/python3.11/html/library/stdtypes.html")
	if err != nil {
		b.Skip("Python docs not installed")
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Extract("http://127.0.0.1/library/stdtypes.html", "text/html; charset=utf-8", body); err != nil {
			b.Fatal(err)
		}
	}
}
