package extractive_test

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
)

// TestComposeList checks that a structured graph answer is written as a
// lead citing the subject's section and one line per item citing its own,
// with "and K more" past the limit, ahead of any passage.
func TestComposeList(t *testing.T) {
	ev := kgagent.Evidence{
		Passages: []kgagent.EvidencePassage{{N: 1, URL: "u#module-shutil", Text: "The shutil module offers a number of high-level operations on files."}},
		List: &kgagent.EvidenceList{Shape: kgagent.ShapeList, Subject: "shutil", Relation: "function", Restriction: "copying files",
			N: 1, SourceURL: "u#module-shutil", More: 2,
			Items: []kgagent.EvidenceItem{
				{N: 2, Name: "shutil.copy", Text: "Copies the file src to the file or directory dst.", SourceURL: "u#shutil.copy"},
				{N: 3, Name: "shutil.copyfile", Text: "Copy the contents of the file named src.", SourceURL: "u#shutil.copyfile"},
			}},
	}
	got := extractive.Compose("What functions does the shutil module provide for copying files?", []kgagent.Evidence{ev}, extractive.Config{})
	want := "`shutil` provides 4 functions for copying files [1]:\n" +
		"- `shutil.copy` — Copies the file src to the file or directory dst. [2]\n" +
		"- `shutil.copyfile` — Copy the contents of the file named src. [3]\n" +
		"- and 2 more [1]"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestListAnswerShapes checks the one-line answers of single values and
// the side-by-side comparison.
func TestListAnswerShapes(t *testing.T) {
	item := func(name string) []kgagent.EvidenceItem { return []kgagent.EvidenceItem{{N: 1, Name: name}} }
	for _, c := range []struct {
		l    kgagent.EvidenceList
		want string
	}{
		{kgagent.EvidenceList{Relation: "default", Subject: "os.makedirs", Param: "mode", Items: item("0o777")}, "The default value of `mode` in `os.makedirs` is `0o777` [1]."},
		{kgagent.EvidenceList{Relation: "added_in", Subject: "math.log2", Items: item("3.3")}, "`math.log2` was added in Python 3.3 (New in version 3.3) [1]."},
		{kgagent.EvidenceList{Relation: "deprecated_since", Subject: "gzip.GzipFile", Items: item("3.9")}, "Yes: `gzip.GzipFile` is deprecated since version 3.9 [1]."},
		{kgagent.EvidenceList{Relation: "subclass_of", Subject: "json.JSONDecodeError", Items: item("ValueError")}, "`json.JSONDecodeError` is a subclass of `ValueError` [1]."},
		{kgagent.EvidenceList{Relation: "module", Subject: "shutil.copy", Items: item("shutil")}, "`shutil.copy` is in the `shutil` module [1]."},
		{kgagent.EvidenceList{Relation: "raises", Subject: "json.loads", Items: []kgagent.EvidenceItem{{N: 4, Name: "JSONDecodeError"}}}, "`json.loads` can raise:\n- `JSONDecodeError` [4]"},
		{kgagent.EvidenceList{Relation: "compare", Subject: "json.load", Other: "json.loads", Items: []kgagent.EvidenceItem{
			{N: 1, Name: "json.load(fp)", Text: "Deserialize fp."}, {N: 2, Name: "json.loads(s)", Text: "Deserialize s."}}},
			"`json.load` and `json.loads` side by side:\n- `json.load(fp)` — Deserialize fp. [1]\n- `json.loads(s)` — Deserialize s. [2]"},
	} {
		if got := extractive.ListAnswer(&c.l); got != c.want {
			t.Errorf("%s: got %q, want %q", c.l.Relation, got, c.want)
		}
		if strings.Contains(extractive.ListAnswer(&c.l), "[0]") {
			t.Errorf("%s: cites [0]", c.l.Relation)
		}
	}
}

// TestSupportJudgesListItems checks that a sentence an LLM writes about a
// graph list's item is supported by the item's own section.
func TestSupportJudgesListItems(t *testing.T) {
	ev := kgagent.Evidence{List: &kgagent.EvidenceList{Shape: kgagent.ShapeRelation, Subject: "json.loads", Relation: "raises", N: 1,
		Items: []kgagent.EvidenceItem{{N: 2, Name: "JSONDecodeError", Text: "Subclass of ValueError with the following additional attributes.", SourceURL: "u#json.loads"}}}}
	sup := extractive.NewSupport([]kgagent.Evidence{ev})
	if n := sup.Best("json.loads can raise a JSONDecodeError."); n != 2 {
		t.Errorf("supported by %d, want the item's section 2", n)
	}
	if n := sup.Best("json.loads raises KeyError for missing keys."); n == 2 {
		t.Errorf("a claim about another exception is supported by the item")
	}
}
