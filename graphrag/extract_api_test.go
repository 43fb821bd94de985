package graphrag_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// pyDoc extracts a page of testdata/pydocs/library (trimmed from Debian's
// python3.11-doc) as the crawler would, served at /library/<name>.
func pyDoc(t testing.TB, name string) kgagent.Document {
	t.Helper()
	body, err := os.ReadFile("../testdata/pydocs/library/" + name)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := crawler.Extract("http://docs.test/library/"+name, "text/html; charset=utf-8", body)
	if err != nil {
		t.Fatal(err)
	}
	doc.Collection = "pydocs"
	return doc
}

func pyTriples(t testing.TB, name string) []kgagent.Triple {
	t.Helper()
	ts, err := graphrag.BuiltinExtractor{}.Extract(context.Background(), pyDoc(t, name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// objects lists the objects (entity ids, or literals) of subject's
// triples with predicate p, with the section each came from.
func objects(ts []kgagent.Triple, subject, p string) (objs []string, srcs []string) {
	for _, t := range ts {
		if t.Subject.ID == subject && t.Predicate == p {
			o := t.Object.ID
			if t.Literal != "" {
				o = t.Literal
			}
			objs = append(objs, o)
			srcs = append(srcs, t.SourceURL)
		}
	}
	return objs, srcs
}

// TestExtractSphinxAPI checks the relations read from Sphinx API entries
// of real pages (trimmed from python3.11-doc): kinds, parameters with
// defaults, raised exceptions (version notes and "Subclass of" left out),
// version notes and subclasses, each from the entry's own section.
func TestExtractSphinxAPI(t *testing.T) {
	ts := append(pyTriples(t, "shutil.html"), pyTriples(t, "json.html")...)
	sec := func(page, anchor string) string { return "http://docs.test/library/" + page + "#" + anchor }
	for _, c := range []struct {
		s, p string
		want []string // objects (ids or literals), in order
		src  string   // the section every one of them comes from
	}{
		{"shutil.copyfile", graphrag.PredHasParameter, []string{"src", "dst", "follow_symlinks=True"}, sec("shutil.html", "shutil.copyfile")},
		{"shutil.copyfileobj", graphrag.PredHasParameter, []string{"fsrc", "fdst", "length"}, sec("shutil.html", "shutil.copyfileobj")},
		// "IOError used to be raised" is history (a version note): left out.
		{"shutil.copyfile", graphrag.PredRaises, []string{"shutil.samefileerror", "oserror"}, sec("shutil.html", "shutil.copyfile")},
		{"json.loads", graphrag.PredRaises, []string{"json.jsondecodeerror"}, sec("json.html", "json.loads")},
		// "Subclass of ValueError" is no raise.
		{"json.jsondecodeerror", graphrag.PredRaises, nil, ""},
		{"json.jsondecodeerror", graphrag.PredSubclassOf, []string{"valueerror"}, sec("json.html", "json.JSONDecodeError")},
		{"json.jsondecodeerror", graphrag.PredAddedIn, []string{"3.5"}, sec("json.html", "json.JSONDecodeError")},
		{"shutil.disk_usage", graphrag.PredAddedIn, []string{"3.3"}, sec("shutil.html", "shutil.disk_usage")},
		// "New in version 3.8: the dirs_exist_ok parameter" dates a part.
		{"shutil.copytree", graphrag.PredAddedIn, nil, ""},
	} {
		got, srcs := objects(ts, c.s, c.p)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.s, c.p, got, c.want)
		}
		for _, s := range srcs {
			if s != c.src {
				t.Errorf("%s %s: source %s, want %s", c.s, c.p, s, c.src)
			}
		}
	}
	types := map[string]string{}
	for _, tr := range ts {
		if tr.Predicate == graphrag.PredDefines && strings.HasSuffix(tr.SourceURL, "#"+tr.Object.Name) {
			types[tr.Object.ID] = tr.Object.Type
		}
	}
	for id, want := range map[string]string{
		"shutil.copyfile": graphrag.TypeFunction, "shutil.samefileerror": graphrag.TypeException, "shutil.error": graphrag.TypeException,
		"json.jsonencoder": graphrag.TypeClass, "json.jsonencoder.default": graphrag.TypeMethod, "json.jsondecoder.decode": graphrag.TypeMethod,
		"json.jsondecodeerror": graphrag.TypeException,
	} {
		if types[id] != want {
			t.Errorf("%s is defined as a %q, want %q", id, types[id], want)
		}
	}
}

// FuzzSigParams checks that any signature splits without a panic into
// parameters that are no markers.
func FuzzSigParams(f *testing.F) {
	for _, s := range []string{"(src, dst, *, follow_symlinks=True)", "(fsrc, fdst[, length])", "(a=(1, 2), /, *args, **kw)", "(", "())", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sig string) {
		for _, p := range graphrag.SigParams(sig) {
			if p == "" || p == "*" || p == "/" {
				t.Fatalf("SigParams(%q) has %q", sig, p)
			}
		}
	})
}

// TestExtractDecoratorEntry checks that a decorator entry
// ("@contextlib.contextmanager", no parameter list) is a function.
func TestExtractDecoratorEntry(t *testing.T) {
	doc := kgagent.Document{Collection: "pydocs", URL: "http://docs.test/library/contextlib.html", Title: "contextlib", Sections: []kgagent.Section{
		{Anchor: "module-contextlib", Heading: "contextlib — Utilities for with-statement contexts", Level: 1},
		{Anchor: "contextlib.contextmanager", Heading: "@contextlib.contextmanager", Level: 2,
			Blocks: []kgagent.Block{{Kind: kgagent.BlockParagraph, Text: "This function is a decorator that can be used to define a factory function."}}},
	}}
	ts, err := graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if tr.Predicate == graphrag.PredDefines && tr.Object.ID == "contextlib.contextmanager" {
			if tr.Subject.ID != "contextlib" || tr.Object.Type != graphrag.TypeFunction {
				t.Errorf("%s defines %s (%s), want contextlib defines a function", tr.Subject.ID, tr.Object.ID, tr.Object.Type)
			}
			return
		}
	}
	t.Errorf("no defines triple for the decorator: %v", ts)
}

// TestExtractJavadoc checks the relations read from a real Javadoc page
// (OpenJDK 17's FileInputStream, from Debian's openjdk-17-doc): the
// package defines the class; extends, implemented interfaces and Since:
// from the class section; each method section defines a member with its
// Parameters:, Throws: and signature, constructors left out.
func TestExtractJavadoc(t *testing.T) {
	body, err := os.ReadFile("../testdata/javadocs/api/java.base/java/io/FileInputStream.html")
	if err != nil {
		t.Fatal(err)
	}
	const url = "http://docs.test/api/java.base/java/io/FileInputStream.html"
	doc, err := crawler.Extract(url, "text/html; charset=utf-8", body)
	if err != nil {
		t.Fatal(err)
	}
	doc.Collection = "jdk"
	ts, err := graphrag.BuiltinExtractor{}.Extract(t.Context(), doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s, p string
		want []string
		src  string // the section of the first one
	}{
		{"java.io", graphrag.PredDefines, []string{"fileinputstream"}, url},
		{"fileinputstream", graphrag.PredSubclassOf, []string{"inputstream"}, url},
		{"fileinputstream", graphrag.PredImplements, []string{"closeable", "autocloseable"}, url},
		{"fileinputstream", graphrag.PredAddedIn, []string{"1.0"}, url},
		{"fileinputstream", graphrag.PredDefines, []string{"fileinputstream.read", "fileinputstream.read", "fileinputstream.read", "fileinputstream.skip",
			"fileinputstream.available", "fileinputstream.close", "fileinputstream.getfd", "fileinputstream.getchannel"}, url + "#read()"},
		{"fileinputstream.read", graphrag.PredRaises, []string{"ioexception", "ioexception", "nullpointerexception", "indexoutofboundsexception", "ioexception"}, url + "#read()"},
		{"fileinputstream.read", graphrag.PredHasParameter, []string{"b", "b", "off", "len"}, url + "#read(byte[])"},
		{"fileinputstream.read", graphrag.PredHasSignature, []string{"public int read() throws IOException", "public int read(byte[] b) throws IOException",
			"public int read(byte[] b, int off, int len) throws IOException"}, url + "#read()"},
	} {
		got, srcs := objects(ts, c.s, c.p)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.s, c.p, got, c.want)
		} else if srcs[0] != c.src {
			t.Errorf("%s %s: first from %s, want %s", c.s, c.p, srcs[0], c.src)
		}
	}
}

// BenchmarkExtractSphinxAPI extracts the two Python docs pages of testdata
// (API entries with prose that names exceptions).
func BenchmarkExtractSphinxAPI(b *testing.B) {
	docs := []kgagent.Document{pyDoc(b, "json.html"), pyDoc(b, "shutil.html")}
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			if _, err := (graphrag.BuiltinExtractor{}).Extract(context.Background(), d, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// apiTexts are the paragraphs, list items and definitions of the Python
// docs pages of testdata: real inputs of the exception-name matchers.
func apiTexts(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, name := range []string{"json.html", "shutil.html"} {
		for _, s := range pyDoc(t, name).Sections {
			for _, bl := range s.Blocks {
				out = append(out, bl.Text)
				for _, d := range bl.Terms {
					out = append(out, d.Term, d.Definition)
				}
			}
		}
	}
	return out
}

// TestMatchersOnDocs: the hand-written matchers agree with their
// expressions on every text of the testdata Python docs pages, which name
// exceptions often enough to tell.
func TestMatchersOnDocs(t *testing.T) {
	texts := apiTexts(t)
	found := 0
	for _, s := range texts {
		graphrag.CheckMatchers(t, s)
		found += len(graphrag.ReExcName.FindAllString(s, -1))
	}
	if len(texts) < 100 || found < 10 {
		t.Fatalf("%d texts naming %d exceptions: too few to compare on", len(texts), found)
	}
}

// BenchmarkAPIMatchers runs the exception-name matchers, and the regular
// expressions they replace, over the texts of the testdata Python docs.
func BenchmarkAPIMatchers(b *testing.B) {
	texts := apiTexts(b)
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			for _, s := range texts {
				_ = graphrag.ReExcName.FindAllString(s, -1)
				_ = graphrag.ReCapIdent.FindAllString(s, -1)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		n := 0
		for b.Loop() {
			for _, s := range texts {
				graphrag.ExcNames(s, func(string) bool { n++; return true })
				graphrag.CapIdents(s, func(string) bool { n++; return true })
			}
		}
	})
}
