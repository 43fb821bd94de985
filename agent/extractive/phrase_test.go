package extractive

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestCompoundNames(t *testing.T) {
	for q, want := range map[string][]string{
		"How do I deploy a function to AWS Lambda?":                  {"AWS Lambda"},
		"Which VS Code setting changes the Python interpreter?":      {"VS Code"},
		"What is the stock price of the Python Software Foundation?": {"Python Software Foundation"},
		"How do I record a macro in Microsoft Excel?":                {"Microsoft Excel"},
		"How do I reuse connections with a requests Session?":        nil,
		"Which module implements the ElementTree API?":               {"ElementTree API"},
		"Does Lumen run on Windows? Linux too?":                      nil, // a sentence start and punctuation end a name
		"How do I serve HTTP/3 over QUIC with http.server?":          nil,
		"How do I use Lumen, Python and Go?":                         nil,
		"What is the default HTTP port of the Lumen server?":         nil,
	} {
		if got := compoundNames(q); !reflect.DeepEqual(got, want) {
			t.Errorf("compoundNames(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestComposeNeedsCompoundNamesAsPhrases: evidence that holds the words
// of "AWS Lambda" apart (the Python docs: an "aws" parameter, lambda
// expressions) does not answer a question about AWS Lambda; one word
// between the words of the name still holds it ("ElementTree XML API").
// Before, the question was answered from the lambda sections.
func TestComposeNeedsCompoundNamesAsPhrases(t *testing.T) {
	aws := []kgagent.EvidencePassage{
		{URL: "http://py/library/asyncio-task.html#asyncio.gather", Title: "Coroutines and Tasks", HeadingPath: []string{"asyncio.gather(*aws, return_exceptions=False)"},
			Text: "Run awaitable objects in the aws sequence concurrently. If any awaitable in aws is a coroutine, it is automatically scheduled as a Task."},
		{URL: "http://py/reference/expressions.html#lambda", Title: "Expressions", HeadingPath: []string{"6.14. Lambdas"},
			Text: "Lambda expressions are used to create anonymous functions. The expression lambda parameters: expression yields a function object. Deploy it where a function is needed."},
	}
	got := Compose("How do I deploy a function to AWS Lambda?", ev("", aws...), Config{})
	if !strings.HasPrefix(got, NotFound) || !strings.Contains(got, "none of the sections found mentions “AWS Lambda”") {
		t.Errorf("answer = %q, want the not-found abstention naming AWS Lambda", got)
	}
	et := []kgagent.EvidencePassage{{URL: "http://py/library/xml.etree.elementtree.html", Title: "xml.etree.ElementTree — The ElementTree XML API",
		HeadingPath: []string{"xml.etree.ElementTree — The ElementTree XML API"},
		Text:        "The xml.etree.ElementTree module implements a simple and efficient API for parsing and creating XML data."}}
	if got := Compose("Which module implements the ElementTree API?", ev("", et...), Config{}); Abstained(got) {
		t.Errorf("answer = %q, want an answer from the ElementTree XML API", got)
	}
}
