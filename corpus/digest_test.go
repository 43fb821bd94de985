package corpus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// javaTypes are the types of a small Javadoc-like site: name, description.
var javaTypes = [][2]string{
	{"TrayIcon.MessageType", "The message type determines which icon will be displayed in the caption of the message, and a possible system sound a message may generate upon showing."},
	{"BufferOverflowException", "Unchecked exception thrown when a relative put operation reaches the target buffer's limit."},
	{"InvalidMarkException", "Unchecked exception thrown when an attempt is made to reset a buffer when its mark is not defined."},
	{"AbstractSet<E>", "This class provides a skeletal implementation of the Set interface to minimize the effort required to implement this interface."},
	{"SystemTray", "The SystemTray class represents the system tray for a desktop."},
	{"ReadOnlyBufferException", "Unchecked exception thrown when a content-mutation method such as put or compact is invoked upon a read-only buffer."},
	{"AccessibleBundle", "Base class used to maintain a strongly typed enumeration."},
	{"Channels", "Defines static methods to create channels."},
}

func para(texts ...string) []kgagent.Block {
	var bs []kgagent.Block
	for _, t := range texts {
		bs = append(bs, kgagent.Block{Kind: kgagent.BlockParagraph, Text: t})
	}
	return bs
}

// javadocSite is an allclasses-index.html (each type's name, then the first
// sentence of its description, as the crawler extracts Javadoc's div
// tables) and one page per type, whose description is one paragraph among
// its inheritance, signature and notes.
func javadocSite() []kgagent.Document {
	const base = "http://docs.test/api/"
	index := kgagent.Document{Collection: "jdk", URL: base + "allclasses-index.html", Title: "All Classes and Interfaces (Java SE 17 & JDK 17)"}
	var rows []string
	rows = append(rows, "Class", "Description")
	for _, ty := range javaTypes {
		rows = append(rows, ty[0], ty[1])
	}
	index.Sections = []kgagent.Section{{Heading: "All Classes and Interfaces", Level: 1, HeadingPath: []string{"All Classes and Interfaces"}, Blocks: para(rows...)}}
	docs := []kgagent.Document{index}
	for _, ty := range javaTypes {
		name := strings.TrimSuffix(ty[0], "<E>")
		name, _, _ = strings.Cut(name, "<")
		d := kgagent.Document{Collection: "jdk", URL: base + name + ".html", Title: name + " (Java SE 17 & JDK 17)"}
		d.Sections = []kgagent.Section{
			{Heading: d.Title, Level: 0, HeadingPath: []string{d.Title}, Blocks: para("Module java.base", "Package java.util")},
			{Heading: "Class " + name, Level: 1, Anchor: "", HeadingPath: []string{"Class " + name}, Blocks: para(
				"java.lang.Object", "java.util."+name,
				"All Implemented Interfaces:: Serializable",
				"public class "+name+" extends Object implements Serializable",
				ty[1], "Since:: 1.4", "See Also:: Serialized Form")},
			{Heading: "Constructor Summary", Level: 2, Anchor: "constructor-summary", HeadingPath: []string{"Class " + name, "Constructor Summary"}, Blocks: para(
				"Constructors", "Constructor", "Description", name+"()", "Constructs an instance of this class.")},
		}
		docs = append(docs, d)
	}
	return docs
}

// sphinxSite is a Sphinx module index (py-modindex.html: a table of module
// names and synopses) and the module pages, whose title carries the synopsis.
func sphinxSite() []kgagent.Document {
	const base = "http://docs.test/py/"
	mods := [][2]string{
		{"json", "JSON encoder and decoder for Python objects"},
		{"shutil", "High-level file operations, including copying whole directory trees"},
		{"tempfile", "Generate temporary files and directories for scratch data"},
		{"zipfile", "Read and write ZIP-format archive files on disk"},
		{"sched", "General purpose event scheduler running delayed events"},
	}
	index := kgagent.Document{Collection: "py", URL: base + "py-modindex.html", Title: "Python Module Index — Python 3.11 documentation"}
	var rows []string
	for _, m := range mods {
		rows = append(rows, m[0]+" | "+m[1])
	}
	index.Sections = []kgagent.Section{{Heading: "Python Module Index", Level: 1, HeadingPath: []string{"Python Module Index"},
		Blocks: []kgagent.Block{{Kind: kgagent.BlockTable, Text: strings.Join(rows, "\n")}}}}
	docs := []kgagent.Document{index}
	for _, m := range mods {
		title := m[0] + " — " + m[1]
		d := kgagent.Document{Collection: "py", URL: base + "library/" + m[0] + ".html", Title: title + " — Python 3.11 documentation"}
		d.Sections = []kgagent.Section{{Heading: title, Level: 1, HeadingPath: []string{title}, Blocks: para(
			"Source code: Lib/"+m[0]+".py",
			"This module provides functions for the task its name says; see the functions below for the details of each one and the examples at the end of the page.")}}
		docs = append(docs, d)
	}
	return docs
}

func TestDigestEntries(t *testing.T) {
	site := javadocSite()
	chunks := corpus.ChunkDocument(site[0], corpus.ChunkConfig{})
	found := 0
	for _, c := range chunks {
		found += len(corpus.DigestEntries(c.Text))
	}
	if found < len(javaTypes)-1 {
		t.Errorf("the class index gives %d entries, want %d", found, len(javaTypes))
	}
	for _, d := range site[1:] {
		for _, c := range corpus.ChunkDocument(d, corpus.ChunkConfig{}) {
			if es := corpus.DigestEntries(c.Text); es != nil {
				t.Errorf("class page %s chunk %q taken for a digest: %v", d.URL, c.Text, es)
			}
		}
	}
	py := sphinxSite()
	if es := corpus.DigestEntries(corpus.ChunkDocument(py[0], corpus.ChunkConfig{})[0].Text); len(es) != 5 || es[0].Name != "json" {
		t.Errorf("module index entries %v, want 5 starting with json", es)
	}
	for _, text := range []string{
		// prose, a code block, a short list of names, a genindex-like list of names without descriptions
		"The json module encodes and decodes JSON.\n\nIt follows RFC 8259. Use loads() to decode a string.\n\nUse dumps() to encode.",
		"import json\nprint(json.dumps({}))\nx = json.loads('{}')\ny = 2",
		"json\n\nshutil\n\ntempfile",
		"loads()\n\n(in module json)\n\ndumps()\n\n(in module json)\n\nJSONDecodeError\n\n(exception in json)",
	} {
		if es := corpus.DigestEntries(text); es != nil {
			t.Errorf("%q taken for a digest: %v", text, es)
		}
	}
}

func indexAll(t *testing.T, s *corpus.Service, docs []kgagent.Document) {
	t.Helper()
	for _, d := range docs {
		if _, err := s.IndexDocument(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
}

func pages(hits []corpus.Hit) []string {
	var out []string
	for _, h := range hits {
		if len(out) == 0 || out[len(out)-1] != h.DocURL {
			out = append(out, h.DocURL)
		}
	}
	return out
}

// TestDigestNeverOutranksThePageItDescribes: a question made of a type's
// description finds the type's page before the class index that repeats
// the description, in every mode, even when only one hit is asked for (the
// index is then followed to the page its entry names).
func TestDigestNeverOutranksThePageItDescribes(t *testing.T) {
	ctx := context.Background()
	for _, site := range []struct {
		name, collection string
		docs             []kgagent.Document
		query, gold      string
	}{
		{"javadoc", "jdk", javadocSite(), "Which Java class is this: the message type determines which icon will be displayed in the caption of the message, and a possible system sound a message may generate upon showing.", "http://docs.test/api/TrayIcon.MessageType.html"},
		{"javadoc", "jdk", javadocSite(), "Which Java class is this: unchecked exception thrown when an attempt is made to reset a buffer when its mark is not defined.", "http://docs.test/api/InvalidMarkException.html"},
		{"sphinx", "py", sphinxSite(), "Which Python module should I use for this: read and write ZIP-format archive files on disk?", "http://docs.test/py/library/zipfile.html"},
	} {
		s := newService(t)
		indexAll(t, s, site.docs)
		for _, mode := range []corpus.Mode{corpus.ModeHybrid, corpus.ModeKeyword, corpus.ModeDense} {
			for _, k := range []int{1, 10} {
				hits, err := s.Search(ctx, corpus.SearchRequest{Query: site.query, Collection: site.collection, K: k, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				ps := pages(hits)
				if len(ps) == 0 || ps[0] != site.gold {
					t.Errorf("%s %s k=%d: pages %v, want %s first", site.name, mode, k, ps, site.gold)
				}
				for i := 1; i < len(hits); i++ {
					if hits[i].Score > hits[i-1].Score {
						t.Errorf("%s %s k=%d: scores rise at %d: %v > %v", site.name, mode, k, i, hits[i].Score, hits[i-1].Score)
					}
				}
				if len(hits) > k {
					t.Errorf("%s %s: %d hits for k=%d", site.name, mode, len(hits), k)
				}
			}
		}
	}
}

func TestDemoteDigestsKeepsOtherOrder(t *testing.T) {
	digest := "Class\n\nDescription\n\nFoo\n\nFoo does the first thing for you always.\n\nBar\n\nBar does the second thing for you always.\n\nBaz\n\nBaz does the third thing for you always."
	hits := []corpus.Hit{
		{Chunk: kgagent.Chunk{DocURL: "index", Text: digest}, Score: 1},
		{Chunk: kgagent.Chunk{DocURL: "a", Text: "Some prose about another matter entirely, with no list."}, Score: 0.9},
		{Chunk: kgagent.Chunk{DocURL: "bar", Text: "public class Bar\n\nBar does the second thing for you always. More about it."}, Score: 0.3},
		{Chunk: kgagent.Chunk{DocURL: "c", Text: "Yet more prose, unrelated to the index."}, Score: 0.2},
	}
	got := corpus.DemoteDigests(hits)
	var order []string
	for _, h := range got {
		order = append(order, h.DocURL)
	}
	// below "a" (it scores 0.9 > 0.5) and below "bar", the page it describes
	if strings.Join(order, " ") != "a bar index c" {
		t.Errorf("order %v, want [a bar index c]", order)
	}
	if got[2].Score > got[1].Score {
		t.Errorf("scores %v", got)
	}
	plain := hits[1:]
	if got := corpus.DemoteDigests(plain); &got[0] != &plain[0] {
		t.Error("hits without a digest were copied")
	}
}

// TestSmallDigestGoesBelowItsPage: a "uses of" table with one entry is not
// weighted down for its shape (a function entry looks the same), but it
// still never outranks the page it repeats.
func TestSmallDigestGoesBelowItsPage(t *testing.T) {
	hits := []corpus.Hit{
		{Chunk: kgagent.Chunk{DocURL: "package-use", Text: "Classes used by javax.management.timer\n\nClass\n\nDescription\n\nTimerMBean\n\nExposes the management interface of the timer MBean."}, Score: 1},
		{Chunk: kgagent.Chunk{DocURL: "other", Text: "Prose about timers that says nothing of the interface."}, Score: 0.6},
		{Chunk: kgagent.Chunk{DocURL: "TimerMBean", Text: "public interface TimerMBean\n\nExposes the management interface of the timer MBean.\n\nSince:: 1.5"}, Score: 0.4},
	}
	got := corpus.DemoteDigests(hits)
	if got[0].DocURL != "other" || got[1].DocURL != "TimerMBean" || got[2].DocURL != "package-use" {
		t.Errorf("order %s %s %s, want other TimerMBean package-use", got[0].DocURL, got[1].DocURL, got[2].DocURL)
	}
	fn := []corpus.Hit{
		{Chunk: kgagent.Chunk{DocURL: "os", Text: "os.getcwd()\n\nReturn a string representing the current working directory."}, Score: 1},
		{Chunk: kgagent.Chunk{DocURL: "pathlib", Text: "Path.cwd() returns a new path object of the current directory."}, Score: 0.9},
	}
	if got := corpus.DemoteDigests(fn); got[0].DocURL != "os" || got[0].Score != 1 {
		t.Errorf("a function entry was ranked down: %v", got)
	}
}

// TestRunOnDigest: a table the crawler flattened into one list item (a
// Javadoc package-use page) is a digest too; prose with capitalised
// sentences is not.
func TestRunOnDigest(t *testing.T) {
	use := "Packages that use javax.xml.parsers\n\nPackage\n\nDescription\n\njavax.xml.parsers\n\nProvides the classes for processing XML documents with a SAX parser or a DOM Document builder.\n\n" +
		"- Classes in javax.xml.parsers used by javax.xml.parsers Class Description DocumentBuilder Defines the API to obtain DOM Document instances from an XML document. " +
		"DocumentBuilderFactory Defines a factory API that enables applications to obtain a parser that produces DOM object trees from XML documents. " +
		"ParserConfigurationException Indicates a serious configuration error. SAXParser Defines the API that wraps an XMLReader implementation class. " +
		"SAXParserFactory Defines a factory API that enables applications to configure and obtain a SAX based parser to parse XML documents."
	es := corpus.DigestEntries(use)
	names := map[string]bool{}
	for _, e := range es {
		names[e.Name] = true
	}
	if !names["SAXParser"] || !names["javax.xml.parsers"] {
		t.Errorf("package-use entries %v, want SAXParser and javax.xml.parsers among them", es)
	}
	prose := "The ZipFile class reads archives. Python supports many archive formats through its modules. ZipInfo Objects are returned by the getinfo() method of ZipFile objects. " +
		"Each one stores information about a single member of the archive. Most users never create them directly, and the module creates them as needed while reading."
	if es := corpus.DigestEntries(prose); es != nil {
		t.Errorf("prose taken for a digest: %v", es)
	}
}
