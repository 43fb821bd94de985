package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
)

// pydocsDir is two pages trimmed from Debian's python3.11-doc (shutil and
// json) with an index linking them.
const pydocsDir = "../../testdata/pydocs"

// TestGraphListAnswersEveryTransport asks issue 24's two questions of a
// `serve --demo` over those pages on REST, websocket and NATS: the answer
// is a list naming every item, each line citing the item's own section,
// and the same text on every transport.
func TestGraphListAnswersEveryTransport(t *testing.T) {
	s := startServeFull(t, "--demo", "--demo-site-dir", pydocsDir, "--answer-cache-size", "0")
	waitDemoIngested(t, s.stderr)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/socket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	nc, err := nats.Connect(s.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, c := range []struct {
		q     string
		items map[string]string // item named in a line -> the anchor its citation must name
		lead  string            // the anchor the lead cites ("" for none)
	}{
		{"What functions does the shutil module provide for copying files?", map[string]string{
			"shutil.copyfileobj": "shutil.copyfileobj", "shutil.copyfile": "shutil.copyfile", "shutil.copymode": "shutil.copymode",
			"shutil.copystat": "shutil.copystat", "shutil.copy": "shutil.copy", "shutil.copy2": "shutil.copy2", "shutil.copytree": "shutil.copytree",
		}, "module-shutil"},
		// The raise is stated in json.loads's own section.
		{"Which exceptions can json.loads raise?", map[string]string{"JSONDecodeError": "json.loads"}, ""},
	} {
		b, _ := json.Marshal(map[string]string{"question": c.q})
		code, m := postJSON(t, s.base+"/api/v1/agent", string(b))
		if code != 200 {
			t.Fatalf("REST %q: %d %v", c.q, code, m)
		}
		answer, _ := m["answer"].(string)
		var urls []string
		srcs, _ := m["sources"].([]any)
		for _, x := range srcs {
			src, _ := x.(map[string]any)
			u, _ := src["url"].(string)
			urls = append(urls, u)
		}
		t.Logf("%q ->\n%s\n%v", c.q, answer, urls)
		cited := func(line string) string {
			ns := regexp.MustCompile(`\[(\d+)\]:?$`).FindStringSubmatch(strings.TrimSpace(line))
			if ns == nil {
				return ""
			}
			n, _ := strconv.Atoi(ns[1])
			if n < 1 || n > len(urls) {
				t.Errorf("%q: citation [%d] with %d sources", c.q, n, len(urls))
				return ""
			}
			_, anchor, _ := strings.Cut(urls[n-1], "#")
			return anchor
		}
		lines := strings.Split(answer, "\n")
		if got := cited(lines[0]); got != c.lead {
			t.Errorf("%q: lead %q cites %q, want %q", c.q, lines[0], got, c.lead)
		}
		named := map[string]bool{}
		for _, l := range lines[1:] {
			name, ok := strings.CutPrefix(l, "- `")
			if !ok {
				t.Errorf("%q: %q is no item line", c.q, l)
				continue
			}
			name, _, _ = strings.Cut(name, "`")
			want, listed := c.items[name]
			if !listed {
				t.Errorf("%q: %q is not one of the items", c.q, name)
				continue
			}
			named[name] = true
			if got := cited(l); got != want {
				t.Errorf("%q: %s cites the section %q, want %q", c.q, name, got, want)
			}
		}
		if len(named) != len(c.items) {
			t.Errorf("%q: named %d of the %d items: %q", c.q, len(named), len(c.items), answer)
		}
		for _, a := range []transportAnswer{askSocket(t, ws, c.q), askNATS(t, nc, c.q)} {
			if a.answer != answer || a.sources != len(urls) {
				t.Errorf("%q: %s answered %q with %d sources; REST %q with %d", c.q, a.transport, a.answer, a.sources, answer, len(urls))
			}
			if a.streamed != "" && strings.TrimSpace(a.streamed) != strings.TrimSpace(a.answer) {
				t.Errorf("%q: %s streamed %q, answered %q", c.q, a.transport, a.streamed, a.answer)
			}
		}
	}
}
