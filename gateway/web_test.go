package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium for the test, or skips when there is
// none (fails instead when KGAGENT_REQUIRE_BROWSER=1).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testdep.Missing(t, "KGAGENT_REQUIRE_BROWSER", "chromium not found; install it (apt-get install chromium) to run the browser test")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func TestChatPageInBrowser(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := browser(t)
	const q = "How do I install it?"
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("question")),
		chromedp.WaitReady(chromedp.CSS(`#collection option[value="python"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	options, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`#collection option`)))
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("collection"), "python"),
		chromedp.SendKeys(chromedp.ID("question"), q),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS("a.citation")),
	)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".turn .answer")))
	if err != nil {
		t.Fatal(err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("a.citation"), "href"))
	if err != nil {
		t.Fatal(err)
	}
	href := attr.Value
	steps, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(".turn details ol")))
	if err != nil {
		t.Fatal(err)
	}
	if len(options) != 2 {
		t.Errorf("collection picker has %d options, want the 2 collections (no \"(default)\" beside them)", len(options))
	}
	for _, o := range options {
		if o.AttributeValue("value") == "" {
			t.Errorf("collection picker still offers the placeholder %v beside the collections", o)
		}
	}
	if strings.TrimSpace(answer) != "Answer to: "+q {
		t.Errorf("answer = %q", answer)
	}
	if href != "https://docs.example.org/guide.html#install-section" {
		t.Errorf("citation href = %q", href)
	}
	if !strings.Contains(steps, "I need to query a knowledge base") || !strings.Contains(steps, "Some docs text.") {
		t.Errorf("thoughts/observations = %q", steps)
	}
	f.asker.mu.Lock()
	got := f.asker.reqs[len(f.asker.reqs)-1]
	f.asker.mu.Unlock()
	if got.Collection != "python" || got.Question != q {
		t.Errorf("asker got %+v", got)
	}
}

// TestChatPageRendersAnswer: the final answer's code block shows as code
// (escaped, never HTML), inline code as code, [n] links to the cited
// section, and the thoughts panel lists the search and the sections found.
func TestChatPageRendersAnswer(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("question")),
		chromedp.SendKeys(chromedp.ID("question"), "code: how do I restore?"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(".turn .answer pre code")),
	)
	if err != nil {
		t.Fatal(err)
	}
	code, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(".turn .answer pre code")))
	if err != nil {
		t.Fatal(err)
	}
	if code != "lumen backup restore --input <b>x</b>" { // as text: not parsed as HTML
		t.Errorf("code block = %q", code)
	}
	inline, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(".turn .answer p code")))
	if err != nil {
		t.Fatal(err)
	}
	if inline != "lumen backup restore" {
		t.Errorf("inline code = %q", inline)
	}
	cite, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(".turn .answer a.cite"), "href"))
	if err != nil {
		t.Fatal(err)
	}
	if cite.Value != "https://docs.example.org/backup.html#restore" {
		t.Errorf("[1] links to %q, want the cited section", cite.Value)
	}
	steps, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(".turn details ol")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(steps, "Searched the docs for “code: how do I restore?”") || !strings.Contains(steps, "Backups › Restoring") ||
		strings.Contains(steps, "Some docs text.") {
		t.Errorf("thoughts panel = %q, want the search and the sections found", steps)
	}
	section, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(".turn details a.section"), "href"))
	if err != nil {
		t.Fatal(err)
	}
	if section.Value != "https://docs.example.org/backup.html#restore" {
		t.Errorf("found section links to %q", section.Value)
	}
}

// TestChatPageRendersListAnswer: a list answer (a lead, then "- " lines)
// shows as a bulleted list, one item per line, each item's [n] linking to
// its own section.
func TestChatPageRendersListAnswer(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("question")),
		chromedp.SendKeys(chromedp.ID("question"), "list: what functions does shutil provide for copying files?"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(".turn .answer ul li")),
	)
	if err != nil {
		t.Fatal(err)
	}
	items, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".turn .answer ul li")).map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	hrefs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".turn .answer ul li a.cite")).map(a => a.getAttribute("href"))`))
	if err != nil {
		t.Fatal(err)
	}
	wantItems := []string{"shutil.copy - Copies the file src. [2]", "shutil.copyfile - Copy the contents. [3]"}
	wantHrefs := []string{"https://docs.example.org/shutil.html#shutil.copy", "https://docs.example.org/shutil.html#shutil.copyfile"}
	if !slices.Equal(items, wantItems) || !slices.Equal(hrefs, wantHrefs) {
		t.Errorf("list items %q linking %q, want %q linking %q", items, hrefs, wantItems, wantHrefs)
	}
	lead, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(".turn .answer p")))
	if err != nil {
		t.Fatal(err)
	}
	if lead != "shutil provides 2 functions for copying files [1]:" {
		t.Errorf("lead = %q", lead)
	}
}

func TestWidgetEmbedsChat(t *testing.T) {
	f := newFixture(t, Config{})
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><html><body><h1>Product site</h1><script src="` + f.ts.URL + `/widget.js" data-collection="python"></script></body></html>`))
	}))
	defer host.Close()
	ctx := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(host.URL),
		chromedp.WaitVisible(chromedp.ID("kgagent-widget-button")),
		chromedp.Click(chromedp.ID("kgagent-widget-button")),
		chromedp.WaitVisible(chromedp.ID("kgagent-widget-frame")),
	)
	if err != nil {
		t.Fatal(err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("kgagent-widget-frame"), "src"))
	if err != nil {
		t.Fatal(err)
	}
	src := attr.Value
	display, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.getElementById("kgagent-widget-frame")).display`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(src, f.ts.URL+"/?") || !strings.Contains(src, "collection=python") {
		t.Errorf("iframe src = %q", src)
	}
	if display != "block" {
		t.Errorf("frame display = %q", display)
	}
}

func TestChatPageAsksForKey(t *testing.T) {
	f := newFixture(t, authConfig())
	ctx := browser(t)
	steps := []struct {
		name string
		a    chromedp.Action[chromedp.Void]
	}{
		{"open", chromedp.Navigate(f.ts.URL + "/")},
		{"key field shown", chromedp.WaitVisible(chromedp.ID("apikey"))},
		{"type key", chromedp.SendKeys(chromedp.ID("apikey"), "py-key")},
		{"save", chromedp.Click(chromedp.CSS("#keyform button"))},
		// After the reload the key is used: the restricted key sees its collection.
		{"collections", chromedp.WaitReady(chromedp.CSS(`#collection option[value="python"]`))},
		{"key field hidden", chromedp.WaitNotVisible(chromedp.ID("apikey"))},
		{"ask", chromedp.SendKeys(chromedp.ID("question"), "With a key?")},
		{"send", chromedp.Click(chromedp.ID("send"))},
		{"citation", chromedp.WaitVisible(chromedp.CSS("a.citation"))},
	}
	for _, st := range steps {
		if err := chromedp.Do(ctx, st.a); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	answer, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".turn .answer")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(answer) != "Answer to: With a key?" {
		t.Errorf("answer = %q", answer)
	}
}
