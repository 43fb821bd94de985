package knowledge_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/graphrag"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("KGAGENT_KNOWLEDGE_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// openDir opens the embedded stores of a data dir the way cmd/kgagent does
// (without the entity index's semantic query).
func openDir(dir string) (*corpus.Service, *graphrag.Service, *graphsqlite.Store, *crawlersqlite.Store, func(), error) {
	idx, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	cs, _ := corpus.NewService(corpus.ServiceConfig{Index: idx})
	st, err := graphsqlite.Open(filepath.Join(dir, "graph.db"))
	if err != nil {
		idx.Close()
		return nil, nil, nil, nil, nil, err
	}
	g, err := graphrag.New(graphrag.Config{Store: st, Embedder: cs.Embedder(), Index: idx, Entities: cs})
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	states, err := crawlersqlite.Open(filepath.Join(dir, "crawl.db"))
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	return cs, g, st, states, func() { states.Close(); st.Close(); idx.Close() }, nil
}

func crashPage(i, v int) kgagent.Document {
	u := fmt.Sprintf("https://docs.example.com/p%d.html", i)
	var blocks []kgagent.Block
	for s := range 3 + v%4 { // the number of chunks changes with the version
		blocks = append(blocks, kgagent.Block{Kind: kgagent.BlockParagraph,
			Text: fmt.Sprintf("version %d part %d. The lumen backup command creates snapshots. Lumen Server%d is a database. The retention policy is a setting.", v, s, i)})
	}
	var secs []kgagent.Section
	for s, b := range blocks {
		h := fmt.Sprintf("Part %d", s)
		secs = append(secs, kgagent.Section{Anchor: fmt.Sprintf("s%d", s), Heading: h, Level: 2, HeadingPath: []string{"Page", h}, Blocks: []kgagent.Block{b}})
	}
	return kgagent.Document{Collection: "c", URL: u, CanonicalURL: u, Title: fmt.Sprintf("Page %d", i), ContentType: "text/html", Sections: secs}
}

// crashChild puts new versions of eight pages through the Writer, going on
// from the newest version a page state records, until it is killed.
func crashChild(dir string) {
	cs, g, _, states, _, err := openDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w := knowledge.NewWriter(cs, g, states)
	ctx := context.Background()
	pages, err := states.ListPages(ctx, "c")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	from := 1
	for _, p := range pages {
		var v int
		fmt.Sscanf(p.ContentHash, "v%d", &v)
		from = max(from, v+1)
	}
	for v := from; ; v++ {
		for i := range 8 {
			if _, _, err := w.Put(ctx, crashPage(i, v), knowledge.PageState{ContentHash: fmt.Sprintf("v%d", v), LastSeen: time.Now()}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Println("put") // the parent kills only after a put it has seen
		}
	}
}

// TestKillDuringPuts kills a process putting pages through the Writer over
// the embedded SQLite stores with SIGKILL, three times, and checks what a
// crash leaves: every page that has a page state has its chunks (one whole
// version, never older than the state's), its triples and its entity index
// entries — a page is never recorded as written while a store lacks it, so
// the next crawl either skips a whole page or writes it again.
func TestKillDuringPuts(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KGAGENT_KNOWLEDGE_CRASH_CHILD="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		// Wait for the child's first put of this round (a whole page with
		// its state: the check below needs one), however slow the machine,
		// then kill it at a different point of its work each round.
		puts := make(chan struct{}, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				select {
				case puts <- struct{}{}:
				default:
				}
			}
		}()
		select {
		case <-puts:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the child put no page in 60 s", round)
		}
		time.Sleep(time.Duration(50+round*70) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		cs, g, st, states, closeAll, err := openDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		pages, err := states.ListPages(ctx, "c")
		if err != nil || len(pages) == 0 {
			t.Fatalf("round %d: %d page states, %v", round, len(pages), err)
		}
		ts, err := st.Find(ctx, graphrag.Pattern{Collection: "c", Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		withTriples := map[string]bool{}
		for _, x := range ts {
			withTriples[x.DocURL] = true
		}
		maxV := 0
		for _, p := range pages {
			var sv int
			fmt.Sscanf(p.ContentHash, "v%d", &sv)
			chunks, err := cs.DocumentChunks(ctx, "c", p.URL)
			if err != nil || len(chunks) == 0 {
				t.Errorf("round %d: %s has state v%d but no chunks (%v)", round, p.URL, sv, err)
				continue
			}
			var cv int
			fmt.Sscanf(chunks[0].Text, "version %d", &cv)
			if want := 3 + cv%4; len(chunks) != want {
				t.Errorf("round %d: %s has %d chunks of a %d-chunk version", round, p.URL, len(chunks), want)
			}
			for _, c := range chunks {
				if !strings.HasPrefix(c.Text, fmt.Sprintf("version %d ", cv)) {
					t.Errorf("round %d: %s mixes versions: %.20q and %.20q", round, p.URL, chunks[0].Text, c.Text)
				}
			}
			if cv < sv {
				t.Errorf("round %d: %s: page state v%d is newer than its chunks v%d", round, p.URL, sv, cv)
			}
			if !withTriples[p.URL] {
				t.Errorf("round %d: %s has state v%d but no triples", round, p.URL, sv)
			}
			if ents, err := cs.DocumentChunks(ctx, "c"+g.Config().EntitySuffix, p.URL); err != nil || len(ents) == 0 {
				t.Errorf("round %d: %s has state v%d but no entity index entries (%v)", round, p.URL, sv, err)
			}
			maxV = max(maxV, sv)
		}
		t.Logf("round %d: killed with %d pages written, newest state v%d", round, len(pages), maxV)
		closeAll()
	}
}
