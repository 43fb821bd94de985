package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent/internal/testdep"
)

// readmeExample is a curl command of the README and the output it shows
// (the `# {...}` line after it), if any.
type readmeExample struct {
	cmd, shown string
}

// readmeCurls returns the README's `curl … localhost:8080…` commands, with
// backslash continuations joined.
func readmeCurls(t *testing.T) []readmeExample {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeExample
	inSh := false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```sh"):
			inSh = true
			continue
		case strings.HasPrefix(l, "```"):
			inSh = false
			continue
		}
		if !inSh || !strings.HasPrefix(l, "curl ") || !strings.Contains(l, "localhost:8080") {
			continue
		}
		cmd := l
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		ex := readmeExample{cmd: cmd}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "# {") {
			ex.shown = strings.TrimPrefix(lines[i+1], "# ")
		}
		out = append(out, ex)
	}
	return out
}

// runCurl runs a README curl command with the served base URL in place of
// localhost:8080 and decodes what it prints.
func runCurl(t *testing.T, cmd, base string) map[string]any {
	t.Helper()
	cmd = strings.ReplaceAll(cmd, "localhost:8080", strings.TrimPrefix(base, "http://"))
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s printed %q: %v", cmd, out, err)
	}
	return m
}

// keysOf returns the object's keys and, for nested objects, theirs.
func keysOf(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var keys []string
	for k, v := range m {
		keys = append(keys, prefix+k)
		keys = append(keys, keysOf(v, prefix+k+".")...)
	}
	return keys
}

// TestReadmeExamples runs every `curl localhost:8080` line of the README
// the way a user would (real curl, real serve) and checks its answer, and
// that the output the README shows for it has the shape curl printed. The
// quick start and GraphQL run against `serve --demo`, the agent protocol
// against `serve --agents testdata/agents`.
func TestReadmeExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the README's examples")
	}
	examples := readmeCurls(t)
	if len(examples) < 3 {
		t.Fatalf("the README shows %d curl examples, want the quick start, the agent protocol and GraphQL", len(examples))
	}
	demo, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	agents, agentLogs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--agents", "../../testdata/agents")
	waitDemoIngested(t, logs)
	waitDemoIngested(t, agentLogs)
	// With the sample agents loaded, the demo's question goes to the lumen
	// agent, which answers from the demo's collection.
	if code, m := postJSON(t, agents+"/api/v1/agent", `{"question":"What is the default HTTP port of the Lumen server?"}`); code != 200 || m["agent"] != "lumen" || !strings.Contains(fmt.Sprint(m["answer"]), "8086") {
		t.Errorf("serve --demo --agents testdata/agents: %d %v", code, m)
	}
	seen := map[string]bool{}
	for _, ex := range examples {
		path := regexp.MustCompile(`localhost:8080(/[^ '"]*)`).FindStringSubmatch(ex.cmd)[1]
		seen[path] = true
		base := demo
		if strings.HasPrefix(path, "/agents/") {
			base = agents
		}
		got := runCurl(t, ex.cmd, base)
		t.Logf("%s\n  -> %v", ex.cmd, got)
		switch path {
		case "/api/v1/agent":
			srcs, _ := got["sources"].([]any)
			if ans, _ := got["answer"].(string); !strings.Contains(ans, "8086") || len(srcs) == 0 {
				t.Errorf("%s: %v", ex.cmd, got)
			}
		case "/agents/clock/utc_time":
			msg, _ := got["message"].(map[string]any)
			text, _ := msg["text"].(string)
			if got["error"] != nil || !strings.Contains(text, time.Now().UTC().Format("2006")) || !strings.HasSuffix(text, "UTC (+00:00)") {
				t.Errorf("%s: %v", ex.cmd, got)
			}
		case "/graphql":
			if got["errors"] != nil || got["data"] == nil {
				t.Errorf("%s: %v", ex.cmd, got)
			}
		default:
			t.Errorf("README example %s has no check in TestReadmeExamples", ex.cmd)
		}
		if ex.shown == "" {
			continue
		}
		var shown map[string]any
		if err := json.Unmarshal([]byte(ex.shown), &shown); err != nil {
			t.Errorf("the README shows %q after %s: %v", ex.shown, ex.cmd, err)
			continue
		}
		if path == "/graphql" {
			if !reflect.DeepEqual(shown, got) { // nothing in it changes from run to run
				t.Errorf("the README shows\n%s\nbut %s printed\n%v", ex.shown, ex.cmd, got)
			}
			continue
		}
		a, b := keysOf(shown, ""), keysOf(got, "")
		slices.Sort(a)
		slices.Sort(b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("the README shows fields %v after %s, but it printed %v", a, ex.cmd, b)
		}
	}
	for _, p := range []string{"/api/v1/agent", "/agents/clock/utc_time", "/graphql"} {
		if !seen[p] {
			t.Errorf("the README has no curl example of %s", p)
		}
	}

	// The websocket frames are those the README's table documents.
	conn, _, err := websocket.DefaultDialer.Dial(strings.Replace(demo, "http://", "ws://", 1)+"/api/v1/socket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"q1","service":"agent","flow":"default","request":{"question":"What is the default HTTP port of the Lumen server?"}}`)); err != nil {
		t.Fatal(err)
	}
	documented := readmeFrameKinds(t)
	sawAction := false
	for seq := int64(1); ; seq++ {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		var f struct {
			ID       string         `json:"id"`
			Seq      int64          `json:"seq"`
			Response map[string]any `json:"response"`
			Complete bool           `json:"complete"`
		}
		if err := conn.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
		keys := keysOf(f.Response, "")
		slices.Sort(keys)
		kind := strings.Join(keys, ",")
		if f.ID != "q1" || f.Seq != seq {
			t.Errorf("frame %d: id %q seq %d", seq, f.ID, f.Seq)
		}
		if f.Complete {
			if _, ok := f.Response["sources"]; !ok || !strings.Contains(f.Response["answer"].(string), "8086") {
				t.Errorf("final frame %v", f.Response)
			}
			break
		}
		if !coveredBy(keys, documented) {
			t.Errorf("frame %d has the undocumented response %v", seq, f.Response)
		}
		sawAction = sawAction || kind == "action,thought"
	}
	if !sawAction {
		t.Error("no action frame, though the README documents them and the agent calls a func")
	}
}

// shellWords splits a command line as sh would for the README's simple
// lines: words separated by spaces, single or double quotes kept whole, a
// `#` word starting a comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestReadmeCommandLinesParse checks every kgagent command line in the
// README's shell blocks against the binary: the subcommand exists, every
// flag is one of its flags, and the configuration they make validates.
func TestReadmeCommandLinesParse(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	inSh := false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			inSh = strings.HasPrefix(l, "```sh")
			continue
		}
		if !inSh {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		// Every line runs as written after the README's own set-up
		// (`make demo` builds bin/kgagent; nothing puts kgagent on PATH).
		if strings.Contains(l, "$(kgagent ") || strings.HasPrefix(strings.TrimSpace(l), "kgagent ") {
			t.Errorf("README: %s\n  runs `kgagent`, which is not on PATH after `make demo`: write bin/kgagent", l)
		}
		words := shellWords(l)
		if len(words) > 1 && words[0] == "make" {
			checkMakeTarget(t, l, words[1])
			continue
		}
		switch {
		case len(words) > 1 && (words[0] == "bin/kgagent" || words[0] == "kgagent"):
			words = words[1:]
		case len(words) > 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/kgagent":
			words = words[3:]
		default:
			continue
		}
		n++
		checkInvocation(t, "README: "+l, words, nil)
	}
	if n < 6 {
		t.Fatalf("found %d kgagent command lines in the README, want the ingest, ask, eval, serve and worker examples at least", n)
	}
}

// checkMakeTarget checks that the Makefile has the target a README line
// runs, and that the README's comment on `make demo` (`# = …`) is the
// command its recipe runs, whose serve flags parse.
func checkMakeTarget(t *testing.T, line, target string) {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).MatchString(mk) {
		t.Errorf("README: %s\n  the Makefile has no target %q", line, target)
		return
	}
	if target != "demo" {
		return
	}
	_, comment, ok := strings.Cut(line, "# = ")
	if !ok {
		t.Errorf("README: %s\n  says not what make demo runs (# = …)", line)
		return
	}
	for _, part := range strings.Split(comment, "&&") {
		words := shellWords(strings.TrimSpace(part))
		if len(words) > 2 && words[0] == "bin/kgagent" {
			if !strings.Contains(mk, "\t@"+strings.Join(words, " ")+"\n") {
				t.Errorf("README says make demo runs %q, the Makefile does not", strings.Join(words, " "))
			}
			checkInvocation(t, "README: "+line, words[1:], nil)
		} else if len(words) > 2 && words[0] == "go" && words[1] == "build" && !strings.Contains(mk, strings.Join(words, " ")) {
			t.Errorf("README says make demo runs %q, the Makefile does not", strings.Join(words, " "))
		}
	}
}

// readmeFrameKinds reads the README's table of websocket responses: the
// sorted top-level keys of each row's example object, comma-joined.
func readmeFrameKinds(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| `response` | when |")
	if !ok {
		t.Fatal("the README has no table of websocket responses")
	}
	kinds := map[string]bool{}
	key := regexp.MustCompile(`[{,]"(\w+)":`)
	for _, row := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(row, "| `{") {
			break
		}
		cell := strings.SplitN(row, "` |", 2)[0]
		// only the top level: drop nested objects and arrays
		for nested := regexp.MustCompile(`\[[^\[\]]*\]|\{[^{}]*\}`); ; {
			inner := strings.TrimPrefix(cell, "| `{")
			reduced := nested.ReplaceAllString(inner, "X")
			if reduced == inner {
				cell = "{" + inner
				break
			}
			cell = "| `{" + reduced
		}
		var keys []string
		for _, m := range key.FindAllStringSubmatch(cell, -1) {
			keys = append(keys, m[1])
		}
		slices.Sort(keys)
		kinds[strings.Join(keys, ",")] = true
	}
	if len(kinds) < 5 {
		t.Fatalf("read %d kinds of response from the README's table: %v", len(kinds), kinds)
	}
	return kinds
}

func TestReadmeFrameKindsParse(t *testing.T) {
	got := readmeFrameKinds(t)
	for _, want := range []string{"thought", "agent,thought", "action,thought", "answer,delta", "agent,answer,citations,request_id,sources"} {
		if !got[want] {
			t.Errorf("kinds %v lack %q", got, want)
		}
	}
}

// coveredBy reports whether some documented kind has every one of keys
// (fields a row shows may be left out, as "sources" is when a func found
// none; a field no row shows may not appear).
func coveredBy(keys []string, kinds map[string]bool) bool {
	for k := range kinds {
		have := strings.Split(k, ",")
		ok := true
		for _, key := range keys {
			if !slices.Contains(have, key) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestReadmeWebsocketClient runs the README's websocket client (Python's
// websockets package, as make test installs it with the Python clients)
// against serve --demo, as written but for the port: it prints every frame
// up to the complete answer, which names the port and cites its sources.
func TestReadmeWebsocketClient(t *testing.T) {
	py := testdep.Env(t, "KGAGENT_TEST_PYCLIENTS", "KGAGENT_REQUIRE_PYCLIENTS", "KGAGENT_TEST_PYCLIENTS not set: no Python with websockets (make test installs one)")
	if err := exec.Command(py, "-c", "import websockets").Run(); err != nil {
		t.Fatalf("%s has no websockets package: %v", py, err)
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n.venv/bin/python -c '\n")
	code, _, ok2 := strings.Cut(rest, "'\n```")
	if !ok || !ok2 {
		t.Fatal("the README shows no `.venv/bin/python -c '…'` websocket client")
	}
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, logs)
	code = strings.ReplaceAll(code, "localhost:8080", strings.TrimPrefix(base, "http://"))
	out, err := exec.Command(py, "-c", code).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's websocket client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var last struct {
		ID       string         `json:"id"`
		Complete bool           `json:"complete"`
		Response map[string]any `json:"response"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || len(lines) < 3 || !last.Complete || last.ID != "q1" ||
		!strings.Contains(fmt.Sprint(last.Response["answer"]), "8086") || last.Response["sources"] == nil {
		t.Fatalf("the README's websocket client printed:\n%s", out)
	}
}
