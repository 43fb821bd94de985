package graphrag_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// TestAnalyzeQuestion checks shapes recognised by structure, in wordings
// beyond the benchmark's, and questions left to retrieval.
func TestAnalyzeQuestion(t *testing.T) {
	for _, c := range []struct {
		q    string
		want graphrag.Shape
	}{
		{"What functions does the shutil module provide for copying files?", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "shutil", Relation: graphrag.TypeFunction, Restriction: []string{"copying", "files"}}},
		{"which functions are in os.path", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "os.path", Relation: graphrag.TypeFunction}},
		{"Which tempfile functions are for creating?", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "tempfile", Relation: graphrag.TypeFunction, Restriction: []string{"creating"}}},
		{"List the classes of the collections module.", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "collections", Relation: graphrag.TypeClass}},
		{"what errors does ftplib have", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "ftplib", Relation: graphrag.TypeException}},
		{"What exceptions are defined in xdrlib?", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "xdrlib", Relation: graphrag.TypeException}},
		{"What methods does threading.Event have?", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "threading.Event", Relation: graphrag.TypeMethod}},
		{"Which functions does json.JSONEncoder have?", graphrag.Shape{Kind: kgagent.ShapeList, Subject: "json.JSONEncoder", Relation: graphrag.TypeMethod}},
		{"Which exceptions can json.loads raise?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "json.loads", Relation: graphrag.RelRaises}},
		{"what might os.remove() throw?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "os.remove", Relation: graphrag.RelRaises}},
		{"What is urllib.error.HTTPError a subclass of?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "urllib.error.HTTPError", Relation: graphrag.RelSubclass}},
		{"What does FileInputStream extend?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "FileInputStream", Relation: graphrag.RelSubclass}},
		{"Which interfaces does FileInputStream implement?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "FileInputStream", Relation: graphrag.RelImplements}},
		{"Which module is mkstemp in?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "mkstemp", Relation: graphrag.RelModule}},
		{"What module do I import OrderedDict from?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "OrderedDict", Relation: graphrag.RelModule}},
		{"What arguments does time.strptime accept?", graphrag.Shape{Kind: kgagent.ShapeRelation, Subject: "time.strptime", Relation: graphrag.RelParameters}},
		{"What is the default value of mode in os.makedirs?", graphrag.Shape{Kind: kgagent.ShapeAttribute, Subject: "os.makedirs", Relation: graphrag.RelDefault, Param: "mode"}},
		{"What does backlog default to in socket.create_server?", graphrag.Shape{Kind: kgagent.ShapeAttribute, Subject: "socket.create_server", Relation: graphrag.RelDefault, Param: "backlog"}},
		{"In which version was math.log2 added?", graphrag.Shape{Kind: kgagent.ShapeAttribute, Subject: "math.log2", Relation: graphrag.RelAdded}},
		{"when was math.isqrt introduced", graphrag.Shape{Kind: kgagent.ShapeAttribute, Subject: "math.isqrt", Relation: graphrag.RelAdded}},
		{"Is asyncore deprecated?", graphrag.Shape{Kind: kgagent.ShapeAttribute, Subject: "asyncore", Relation: graphrag.RelDeprecated}},
		{"What is the difference between json.dump and json.dumps?", graphrag.Shape{Kind: kgagent.ShapeComparison, Subject: "json.dump", Other: "json.dumps", Relation: graphrag.RelCompare}},
		{"os.pipe vs os.pipe2", graphrag.Shape{Kind: kgagent.ShapeComparison, Subject: "os.pipe", Other: "os.pipe2", Relation: graphrag.RelCompare}},
		{"difference between deque and list", graphrag.Shape{Kind: kgagent.ShapeComparison, Subject: "deque", Other: "list", Relation: graphrag.RelCompare}},
		// Left to retrieval.
		{"How do I parse JSON in Python?", graphrag.Shape{}},
		{"Which Python module should I use for this: low-level threading API?", graphrag.Shape{}},
		{"What is a context manager?", graphrag.Shape{}},
		{"", graphrag.Shape{}},
	} {
		got := graphrag.AnalyzeQuestion(c.q)
		if got.Kind != c.want.Kind || got.Subject != c.want.Subject || got.Other != c.want.Other ||
			got.Relation != c.want.Relation || got.Param != c.want.Param || !slices.Equal(got.Restriction, c.want.Restriction) {
			t.Errorf("AnalyzeQuestion(%q) = %+v, want %+v", c.q, got, c.want)
		}
	}
}

// FuzzAnalyzeQuestion checks that any text is analysed without a panic and
// that a shape's subject is a word of the question.
func FuzzAnalyzeQuestion(f *testing.F) {
	for _, q := range []string{"Which exceptions can json.loads raise?", "default of x in y", "a vs b", "what methods (does) X.Y() have for z", "\xff\xfe"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		sh := graphrag.AnalyzeQuestion(q)
		if sh.Kind != "" && !strings.Contains(strings.ToLower(q), strings.ToLower(sh.Subject)) {
			t.Fatalf("subject %q is not in %q", sh.Subject, q)
		}
	})
}
