package cite

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestSourcesNameFivePages: an answer citing two sections of one page
// still lists the search's first five pages. The cap counted sections, so
// the fifth page (the OpenJDK set's gold page, for some questions) was left
// off the list although the search ranked it fifth.
func TestSourcesNameFivePages(t *testing.T) {
	all := []kgagent.Source{
		{URL: "http://d/a.html#x"}, {URL: "http://d/a.html#y"}, {URL: "http://d/b.html"},
		{URL: "http://d/c.html"}, {URL: "http://d/d.html"}, {URL: "http://d/e.html"}, {URL: "http://d/f.html"},
	}
	c := NewMap(len(all))
	if got := c.Rewrite("One [1]. Two [2]."); got != "One [1]. Two [2]." {
		t.Fatalf("Rewrite = %q", got)
	}
	var urls []string
	for _, s := range c.Sources(all) {
		urls = append(urls, s.URL)
	}
	want := "http://d/a.html#x http://d/a.html#y http://d/b.html http://d/c.html http://d/d.html http://d/e.html"
	if got := strings.Join(urls, " "); got != want {
		t.Errorf("sources = %s\nwant      %s", got, want)
	}
}
