package graphrag_test

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

const base = "https://docs.example.com/library/json.html"

func sampleDoc() (kgagent.Document, []kgagent.Chunk) {
	doc := kgagent.Document{
		Collection: "py",
		URL:        base,
		Title:      "json — JSON encoder and decoder — Python 3.11 documentation",
		Sections: []kgagent.Section{
			{Anchor: "module-json", Heading: "json — JSON encoder and decoder", Level: 1, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockParagraph, Text: "JSON (JavaScript Object Notation) is a lightweight data interchange format. The Global Interpreter Lock (GIL) is held while encoding. See the pickle module and json.tool for more."},
			}},
			{Anchor: "json.dumps", Heading: "json.dumps(obj, *, skipkeys=False, **kw)", Level: 3, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockParagraph, Text: "Serialize obj to a JSON formatted str using this conversion table."},
				{Kind: kgagent.BlockParagraph, Text: "A dictionary is an associative array that maps keys to values. The default (function) is called for objects."},
			}},
			{Anchor: "json.JSONEncoder", Heading: "class json.JSONEncoder(*, skipkeys=False)", Level: 3, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockParagraph, Text: "Extensible JSON encoder for Python data structures."},
				{Kind: kgagent.BlockTable, Rows: [][]string{{"Python", "JSON"}, {"dict", "object"}, {"list, tuple", "array"}}},
				{Kind: kgagent.BlockCode, Text: "class MyEncoder(json.JSONEncoder):\n    def default(self, o):\n        return list(o)\n"},
			}},
			{Anchor: "glossary", Heading: "Glossary", Level: 2, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{
					{Term: "duck-typing", Definition: "A programming style which does not look at an object's type."},
					{Term: "iterable", Definition: "An object capable of returning its members one at a time."},
				}},
			}},
		},
		Links: []kgagent.Link{
			{URL: "https://docs.example.com/library/pickle.html", Text: "pickle"},
			{URL: base + "#json.dumps", Text: "dumps()"},
			{URL: "https://docs.example.com/library/json.html#module-json.tool", Text: "json.tool"},
		},
	}
	chunks := []kgagent.Chunk{
		{ID: "c0", Collection: "py", DocURL: base, Anchor: "module-json", Text: doc.Sections[0].Blocks[0].Text},
		{ID: "c1", Collection: "py", DocURL: base, Anchor: "json.dumps", Text: "Serialize obj to a JSON formatted str"},
		{ID: "c2", Collection: "py", DocURL: base, Anchor: "json.dumps", Text: "A dictionary is an associative array that maps keys to values."},
		{ID: "c3", Collection: "py", DocURL: base, Anchor: "json.JSONEncoder", Text: "Extensible JSON encoder"},
		{ID: "c4", Collection: "py", DocURL: base, Anchor: "glossary", Text: "duck-typing iterable"},
	}
	return doc, chunks
}

func TestBuiltinExtractor(t *testing.T) {
	doc, chunks := sampleDoc()
	ts, err := graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if err := graphrag.ValidateTriples("py", base, ts); err != nil {
		t.Fatalf("extracted triples do not validate: %v", err)
	}
	type want struct{ s, p, o, anchor, chunk string }
	page := "page:" + base
	tests := []want{
		{page, "has_section", "section:" + base + "#json.dumps", "json.dumps", "c1"},
		{"json", "is_defined_as", `"JSON encoder and decoder"`, "module-json", "c0"},
		{"json", "defines", "json.dumps", "json.dumps", "c1"},
		{"json", "defines", "json.jsonencoder", "json.JSONEncoder", "c3"},
		{"json.dumps", "is_defined_as", `"Serialize obj to a JSON formatted str using this conversion table."`, "json.dumps", "c1"},
		{"dictionary", "is_a", "associative array", "json.dumps", "c2"},
		{"gil", "alias_of", "global interpreter lock", "module-json", "c0"},
		{"json", "alias_of", "javascript object notation", "module-json", "c0"},
		{"default", "is_a", "function", "json.dumps", "c1"},
		{"duck typing", "is_defined_as", `"A programming style which does not look at an object's type."`, "glossary", "c4"},
		{"iterable", "is_a", "object capable", "glossary", "c4"},
		{"dict", "is_defined_as", `"object"`, "json.JSONEncoder", "c3"},
		{"json", "defines", "myencoder", "json.JSONEncoder", "c3"},
		{page, "links_to", "page:https://docs.example.com/library/pickle.html", "module-json", "c0"},
		{"section:" + base + "#module-json", "mentions", "json.tool", "module-json", "c0"},
		{"section:" + base + "#module-json", "mentions", "global interpreter lock", "module-json", "c0"},
		{"dumps", "alias_of", "json.dumps", "json.dumps", "c1"},
	}
	render := func(tr kgagent.Triple) string {
		o := tr.Object.ID
		if tr.Literal != "" {
			o = `"` + tr.Literal + `"`
		}
		return tr.Subject.ID + " | " + tr.Predicate + " | " + o
	}
	got := map[string]kgagent.Triple{}
	for _, tr := range ts {
		got[render(tr)] = tr
	}
	for _, w := range tests {
		k := w.s + " | " + w.p + " | " + w.o
		tr, ok := got[k]
		if !ok {
			var all []string
			for g := range got {
				all = append(all, g)
			}
			t.Errorf("missing %q in %q", k, all)
			continue
		}
		if want := base + "#" + w.anchor; tr.SourceURL != want {
			t.Errorf("%q: source %q, want %q", k, tr.SourceURL, want)
		}
		if tr.ChunkID != w.chunk {
			t.Errorf("%q: chunk %q, want %q", k, tr.ChunkID, w.chunk)
		}
	}
	for _, tr := range ts {
		if tr.SourceURL == "" || !strings.HasPrefix(tr.SourceURL, base) || tr.DocURL != base || tr.Collection != "py" {
			t.Errorf("bad provenance: %+v", tr)
		}
	}
	// Deterministic: the same input gives the same triples.
	again, _ := graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, chunks)
	if len(again) != len(ts) {
		t.Errorf("not deterministic: %d then %d triples", len(ts), len(again))
	}
}

func TestBuiltinExtractorLimits(t *testing.T) {
	doc, _ := sampleDoc()
	long := strings.Repeat("Verylongname", 200)
	doc.Sections = append(doc.Sections, kgagent.Section{Anchor: "x", Heading: long + "(a)", Blocks: []kgagent.Block{
		{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{{Term: long, Definition: "too long a name"}}},
		{Kind: kgagent.BlockParagraph, Text: long + " is a thing."},
	}})
	ts, err := graphrag.BuiltinExtractor{MaxTriples: 10}.Extract(t.Context(), doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 10 {
		t.Errorf("MaxTriples 10: got %d", len(ts))
	}
	ts, err = graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := graphrag.ValidateTriples("py", base, ts); err != nil {
		t.Errorf("long names must be skipped, not emitted: %v", err)
	}
	if _, err := (graphrag.BuiltinExtractor{}).Extract(t.Context(), kgagent.Document{URL: base}, nil); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("no collection: %v", err)
	}
}

func FuzzBuiltinExtractor(f *testing.F) {
	f.Add("json.dumps(obj)", "JSON (JavaScript Object Notation) is a format. A list is a sequence.", "def f(x):\n    pass", "term", "def")
	f.Add("", "X (y) Z (AB) is an  .", "class C:", "", "")
	f.Add("\xff", "The \xff is a \xfe.", "json.dumps(\xff)", "a(b", "c")
	f.Fuzz(func(t *testing.T, heading, para, code, term, def string) {
		doc := kgagent.Document{Collection: "c", URL: base, Title: heading, Sections: []kgagent.Section{{
			Anchor: heading, Heading: heading, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockParagraph, Text: para},
				{Kind: kgagent.BlockCode, Text: code},
				{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{{Term: term, Definition: def}}},
				{Kind: kgagent.BlockTable, Rows: [][]string{{"a", "b"}, {term, def}}},
			}}},
			Links: []kgagent.Link{{URL: base + "#" + term, Text: def}},
		}
		ts, err := graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			if tr.Subject.ID == "" || tr.Predicate == "" || (tr.Literal == "" && tr.Object.ID == "") {
				t.Fatalf("incomplete triple %+v", tr)
			}
		}
	})
}

func TestCodeTokens(t *testing.T) {
	got := graphrag.CodeTokens("Call os.path.join() or json.dumps, then print() the get_item value of MyClass; see 3.11 and e.g. __init__.py.", nil)
	want := [4][]string{{"os.path.join()", "json.dumps", "e.g", "__init__.py"}, {"print()"}, {"get_item"}, {"MyClass"}}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("class %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func FuzzCodeTokens(f *testing.F) {
	f.Add("os.path.join() print() get_item MyClass 3.11 ..a..b.. x()()")
	f.Fuzz(func(t *testing.T, s string) {
		seen := map[string]bool{}
		for _, class := range graphrag.CodeTokens(s, seen) {
			for _, tok := range class {
				if tok == "" || !strings.Contains(s, tok) {
					t.Fatalf("token %q not in input", tok)
				}
			}
		}
	})
}
