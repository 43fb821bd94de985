package minilm

import (
	"fmt"
	"math"

	"github.com/kgagent/kgagent"
)

// BertConfig is the architecture of a BERT encoder (HuggingFace config.json).
type BertConfig struct {
	Hidden       int     `json:"hidden_size"`
	Layers       int     `json:"num_hidden_layers"`
	Heads        int     `json:"num_attention_heads"`
	Intermediate int     `json:"intermediate_size"`
	MaxPositions int     `json:"max_position_embeddings"`
	TypeVocab    int     `json:"type_vocab_size"`
	Vocab        int     `json:"vocab_size"`
	LayerNormEps float64 `json:"layer_norm_eps"`
	HiddenAct    string  `json:"hidden_act"`
	ModelType    string  `json:"model_type"`
}

// validate checks that c describes an encoder this package can run.
func (c BertConfig) validate() error {
	bad := func(format string, args ...any) error {
		return kgagent.Errorf(kgagent.EINVALID, "config.json: "+format, args...)
	}
	if c.ModelType != "" && c.ModelType != "bert" {
		return bad("model_type %q, want bert", c.ModelType)
	}
	if c.HiddenAct != "" && c.HiddenAct != "gelu" {
		return bad("hidden_act %q, want gelu", c.HiddenAct)
	}
	if c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.Intermediate <= 0 || c.MaxPositions <= 0 || c.Vocab <= 0 {
		return bad("sizes must be positive: %+v", c)
	}
	if c.Hidden%c.Heads != 0 {
		return bad("hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	}
	if c.Hidden > 4096 || c.Intermediate > 16384 || c.Layers > 48 || c.MaxPositions > 8192 {
		return bad("model too large for the built-in runtime: %+v", c)
	}
	return nil
}

// bertLayer is one encoder layer with its linear weights packed for the
// kernel (query, key and value fused into one matrix): float32 panels, or
// int8 ones when the model runs its linear layers in int8.
type bertLayer struct {
	qkv, attnOut, inter, out     packed
	qkvQ, attnOutQ, interQ, outQ qpacked
	qkvB, attnOutB, interB, outB []float32
	ln1G, ln1B, ln2G, ln2B       []float32
}

// bert is a loaded BERT encoder.
type bert struct {
	cfg            BertConfig
	eps            float32
	word, pos, typ []float32
	word16         []uint16 // the word table as float16 (int8 models: half the memory), word nil
	embLNG, embLNB []float32
	layers         []bertLayer
	kern           gemmImpl
	q              *qgemmImpl // the linear layers' int8 kernel; nil: float32
	vec            vecImpl    // softmax and GELU for the same instruction set
}

// loadBert builds the encoder from safetensors tensors named as
// HuggingFace's BertModel names them (with or without a "bert." prefix).
// With qk, the linear layers run in int8 on that kernel (their float32
// weights are not kept).
func loadBert(cfg BertConfig, tensors map[string]Tensor, kern gemmImpl, qk *qgemmImpl) (*bert, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	prefix := ""
	if _, ok := tensors["embeddings.word_embeddings.weight"]; !ok {
		if _, ok := tensors["bert.embeddings.word_embeddings.weight"]; ok {
			prefix = "bert."
		}
	}
	get := func(name string, shape ...int) ([]float32, error) {
		t, ok := tensors[prefix+name]
		if !ok {
			return nil, kgagent.Errorf(kgagent.EINVALID, "model.safetensors: no tensor %s%s", prefix, name)
		}
		if err := expectShape(prefix+name, t, shape...); err != nil {
			return nil, err
		}
		return t.Float32()
	}
	h, it := cfg.Hidden, cfg.Intermediate
	m := &bert{cfg: cfg, eps: float32(cfg.LayerNormEps), kern: kern, q: qk, vec: vecImpls()[0]}
	for _, v := range vecImpls() {
		if v.name == kern.name {
			m.vec = v
		}
	}
	if m.eps <= 0 {
		m.eps = 1e-12
	}
	var err error
	load := func(dst *[]float32, name string, shape ...int) {
		if err == nil {
			*dst, err = get(name, shape...)
		}
	}
	load(&m.word, "embeddings.word_embeddings.weight", cfg.Vocab, h)
	if qk != nil && err == nil {
		// An int8 model keeps its largest table, 30,522 × 384 for
		// all-MiniLM-L6-v2, in float16: 23 MB less, and its rounding
		// (2⁻¹¹ relative) is far below the int8 layers'.
		m.word16 = make([]uint16, len(m.word))
		for i, v := range m.word {
			m.word16[i] = floatToHalf(v)
		}
		m.word = nil
	}
	load(&m.pos, "embeddings.position_embeddings.weight", cfg.MaxPositions, h)
	load(&m.typ, "embeddings.token_type_embeddings.weight", max(cfg.TypeVocab, 1), h)
	load(&m.embLNG, "embeddings.LayerNorm.weight", h)
	load(&m.embLNB, "embeddings.LayerNorm.bias", h)
	for l := 0; l < cfg.Layers && err == nil; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		var q, k, v, qb, kb, vb, ao, in, out []float32
		var ly bertLayer
		load(&q, p+"attention.self.query.weight", h, h)
		load(&k, p+"attention.self.key.weight", h, h)
		load(&v, p+"attention.self.value.weight", h, h)
		load(&qb, p+"attention.self.query.bias", h)
		load(&kb, p+"attention.self.key.bias", h)
		load(&vb, p+"attention.self.value.bias", h)
		load(&ao, p+"attention.output.dense.weight", h, h)
		load(&ly.attnOutB, p+"attention.output.dense.bias", h)
		load(&ly.ln1G, p+"attention.output.LayerNorm.weight", h)
		load(&ly.ln1B, p+"attention.output.LayerNorm.bias", h)
		load(&in, p+"intermediate.dense.weight", it, h)
		load(&ly.interB, p+"intermediate.dense.bias", it)
		load(&out, p+"output.dense.weight", h, it)
		load(&ly.outB, p+"output.dense.bias", h)
		load(&ly.ln2G, p+"output.LayerNorm.weight", h)
		load(&ly.ln2B, p+"output.LayerNorm.bias", h)
		if err != nil {
			break
		}
		// Scale the query by 1/sqrt(head size) once here, not per score.
		scale := float32(1 / math.Sqrt(float64(h/cfg.Heads)))
		for i := range q {
			q[i] *= scale
		}
		for i := range qb {
			qb[i] *= scale
		}
		qkv := make([]float32, 0, 3*h*h)
		qkv = append(append(append(qkv, q...), k...), v...)
		ly.qkvB = append(append(append(make([]float32, 0, 3*h), qb...), kb...), vb...)
		if qk != nil {
			ly.qkvQ.quantizeRows(qkv, 3*h, h, h, ly.qkvB)
			ly.attnOutQ.quantizeRows(ao, h, h, h, ly.attnOutB)
			ly.interQ.quantizeRows(in, it, h, h, ly.interB)
			ly.outQ.quantizeRows(out, h, it, it, ly.outB)
		} else {
			ly.qkv.packRows(qkv, 3*h, h, h, kern.nr)
			ly.attnOut.packRows(ao, h, h, h, kern.nr)
			ly.inter.packRows(in, it, h, h, kern.nr)
			ly.out.packRows(out, h, it, it, kern.nr)
		}
		m.layers = append(m.layers, ly)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// workspace is the scratch memory of one goroutine's forward passes, kept
// between calls so that a steady stream of texts allocates nothing.
type workspace struct {
	x, qkv, ctx, tmp, inter, scores, sums []float32
	hidden                                int // the model's hidden size, once a forward pass ran
	kp, vp                                packed
	g                                     gemmScratch
	qs                                    qscratch
}

// linear sets C = A·W + bias for the rows of A, on the int8 kernel when the
// model has one, else on the float32 one.
func (m *bert) linear(ws *workspace, rows int, a []float32, lda int, p *packed, q *qpacked, bias, c []float32, ldc int) {
	if m.q != nil {
		m.q.gemm(&ws.qs, rows, a, lda, q, c, ldc)
		return
	}
	m.kern.gemm(&ws.g, rows, a, lda, p, c, ldc, bias)
}

// ffnRows is how many token rows the feed-forward block computes at a
// time (a variable so that tests can vary it): its activations take 6 KiB
// a row at 1,536 intermediate units, 6 MiB for a 1,024-token batch at once.
var ffnRows = 128

// rows is how many token rows ws holds without growing.
func (ws *workspace) rows() int { return cap(ws.tmp) / max(1, ws.hidden) }

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n, n+n/4)
	}
	return s[:n]
}

// forward runs the encoder over seqs (token ids, each at most MaxPositions
// long) packed row after row, and writes each sequence's mean-pooled,
// L2-normalised hidden state into out[i] (len Hidden). A non-nil stop is
// asked before each layer: when it says so, forward returns false at once
// and out holds nothing of use (a cancelled call waits one layer, not a
// whole batch).
func (m *bert) forward(ws *workspace, seqs [][]int32, out [][]float32, stop func() bool) bool {
	h, it, heads := m.cfg.Hidden, m.cfg.Intermediate, m.cfg.Heads
	hd := h / heads
	total := 0
	for _, s := range seqs {
		total += len(s)
	}
	ws.x = grow(ws.x, total*h)
	ws.qkv = grow(ws.qkv, total*3*h)
	ws.ctx = grow(ws.ctx, total*h)
	ws.tmp = grow(ws.tmp, total*h)
	ws.inter = grow(ws.inter, min(total, ffnRows)*it)
	ws.hidden = h
	x := ws.x

	// Embeddings: word + position + token type 0, then LayerNorm.
	row := 0
	for _, s := range seqs {
		for i, id := range s {
			dst := x[row*h : row*h+h]
			p := m.pos[i*h : i*h+h]
			t := m.typ[:h]
			if m.word16 != nil {
				w := m.word16[int(id)*h : int(id)*h+h]
				for j := range dst {
					dst[j] = halfToFloat(w[j]) + p[j] + t[j]
				}
			} else {
				w := m.word[int(id)*h : int(id)*h+h]
				for j := range dst {
					dst[j] = w[j] + p[j] + t[j]
				}
			}
			row++
		}
	}
	layerNormRows(x, total, h, m.embLNG, m.embLNB, m.eps)

	for li := range m.layers {
		if stop != nil && stop() {
			return false
		}
		ly := &m.layers[li]
		m.linear(ws, total, x, h, &ly.qkv, &ly.qkvQ, ly.qkvB, ws.qkv, 3*h)
		// Self-attention, per sequence and head.
		row = 0
		for _, s := range seqs {
			n := len(s)
			ws.scores = grow(ws.scores, n*n)
			ws.sums = grow(ws.sums, n)
			base := row * 3 * h
			for hh := 0; hh < heads; hh++ {
				q := ws.qkv[base+hh*hd:]
				k := ws.qkv[base+h+hh*hd:]
				v := ws.qkv[base+2*h+hh*hd:]
				ws.kp.packRows(k, n, hd, 3*h, m.kern.nr)
				m.kern.gemm(&ws.g, n, q, 3*h, &ws.kp, ws.scores, n, nil)
				for i := 0; i < n; i++ {
					ws.sums[i] = 1 / m.vec.expRow(ws.scores[i*n:i*n+n])
				}
				ws.vp.packCols(v, n, hd, 3*h, m.kern.nr)
				ctx := ws.ctx[row*h+hh*hd:]
				m.kern.gemm(&ws.g, n, ws.scores, n, &ws.vp, ctx, h, nil)
				for i := 0; i < n; i++ {
					cr := ctx[i*h : i*h+hd]
					for j := range cr {
						cr[j] *= ws.sums[i]
					}
				}
			}
			row += n
		}
		m.linear(ws, total, ws.ctx, h, &ly.attnOut, &ly.attnOutQ, ly.attnOutB, ws.tmp, h)
		for r := 0; r < total; r++ {
			xr, tr := x[r*h:r*h+h], ws.tmp[r*h:r*h+h]
			for j := range xr {
				xr[j] += tr[j]
			}
		}
		layerNormRows(x, total, h, ly.ln1G, ly.ln1B, m.eps)
		// The feed-forward block ffnRows rows at a time: each row's
		// result is its own, and the intermediate activations (4× the
		// hidden size) need not be held for the whole batch.
		for r0 := 0; r0 < total; r0 += ffnRows {
			n := min(ffnRows, total-r0)
			m.linear(ws, n, x[r0*h:], h, &ly.inter, &ly.interQ, ly.interB, ws.inter, it)
			m.vec.gelu(ws.inter[:n*it])
			m.linear(ws, n, ws.inter, it, &ly.out, &ly.outQ, ly.outB, ws.tmp[r0*h:], h)
		}
		for r := 0; r < total; r++ {
			xr, tr := x[r*h:r*h+h], ws.tmp[r*h:r*h+h]
			for j := range xr {
				xr[j] += tr[j]
			}
		}
		layerNormRows(x, total, h, ly.ln2G, ly.ln2B, m.eps)
	}

	// Mean pooling over each sequence's tokens, then L2 normalisation.
	row = 0
	for si, s := range seqs {
		o := out[si][:h]
		clear(o)
		for i := range s {
			xr := x[(row+i)*h : (row+i)*h+h]
			for j := range o {
				o[j] += xr[j]
			}
		}
		row += len(s)
		var ss float64
		for j := range o {
			o[j] /= float32(len(s))
			ss += float64(o[j]) * float64(o[j])
		}
		if ss > 0 {
			inv := float32(1 / math.Sqrt(ss))
			for j := range o {
				o[j] *= inv
			}
		}
	}
	return true
}

// layerNorm normalises x to zero mean and unit variance, then scales by g
// and shifts by b.
func layerNorm(x, g, b []float32, eps float32) {
	var sum float32
	for _, v := range x {
		sum += v
	}
	mean := sum / float32(len(x))
	var vs float32
	for _, v := range x {
		d := v - mean
		vs += d * d
	}
	normalize(x, mean, vs, g, b, eps)
}

// normalize is layerNorm's last step, given x's mean and its sum of
// squared deviations.
func normalize(x []float32, mean, vs float32, g, b []float32, eps float32) {
	inv := float32(1 / math.Sqrt(float64(vs/float32(len(x))+eps)))
	g, b = g[:len(x)], b[:len(x)]
	for i, v := range x {
		x[i] = (v-mean)*inv*g[i] + b[i]
	}
}

// layerNormRows applies layerNorm to each of the first rows rows of x (h
// values a row), four rows at a time. Each row's two sums are the same
// float32 additions in the same order as layerNorm's, so every bit of the
// result is the same; but a sum is a chain of dependent additions (one
// every few cycles), and four rows' chains run side by side instead of one
// after the other.
func layerNormRows(x []float32, rows, h int, g, b []float32, eps float32) {
	r := 0
	for ; r+4 <= rows; r += 4 {
		x0 := x[r*h : r*h+h]
		x1 := x[(r+1)*h : (r+1)*h+h][:len(x0)]
		x2 := x[(r+2)*h : (r+2)*h+h][:len(x0)]
		x3 := x[(r+3)*h : (r+3)*h+h][:len(x0)]
		var s0, s1, s2, s3 float32
		for i, v := range x0 {
			s0 += v
			s1 += x1[i]
			s2 += x2[i]
			s3 += x3[i]
		}
		n := float32(h)
		m0, m1, m2, m3 := s0/n, s1/n, s2/n, s3/n
		var v0, v1, v2, v3 float32
		for i, v := range x0 {
			d0, d1, d2, d3 := v-m0, x1[i]-m1, x2[i]-m2, x3[i]-m3
			v0 += d0 * d0
			v1 += d1 * d1
			v2 += d2 * d2
			v3 += d3 * d3
		}
		normalize(x0, m0, v0, g, b, eps)
		normalize(x1, m1, v1, g, b, eps)
		normalize(x2, m2, v2, g, b, eps)
		normalize(x3, m3, v3, g, b, eps)
	}
	for ; r < rows; r++ {
		layerNorm(x[r*h:r*h+h], g, b, eps)
	}
}

// expRowGo replaces x by exp(x - max x), in place, and returns the sum of
// the results: a softmax row before its division (done on the attention
// output instead, 32 values a row rather than one per token). It and geluGo
// are the portable element-wise steps; vecmath_amd64.go has vectorised ones.
func expRowGo(x []float32) float32 {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float32
	for i, v := range x {
		e := expf(v - mx)
		x[i] = e
		sum += e
	}
	return sum
}

// geluGo applies the exact (erf) GELU in place: x·(1 + erf(x/√2))/2.
func geluGo(x []float32) {
	for i, v := range x {
		x[i] = 0.5 * v * (1 + erff(v*math.Sqrt2/2))
	}
}

// expf is e^x in float32 (relative error below 2e-7): x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by its Taylor polynomial, 2^n put in the exponent.
func expf(x float32) float32 {
	if x < -87.3 {
		return 0
	}
	if x > 88.7 {
		return float32(math.Inf(1))
	}
	const log2e = 1.44269504088896341
	const ln2hi, ln2lo = 0.693359375, -2.12194440e-4
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// erff is erf(x) in float32, a rational approximation on [-4, 4] (absolute
// error about 1e-7; erf is ±1 to float32 precision outside).
func erff(x float32) float32 {
	x = min(max(x, -4), 4)
	x2 := x * x
	p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
	p = x2*p + -2.10102402082508e-06
	p = x2*p + -5.69250639462346e-05
	p = x2*p + -7.34990630326855e-04
	p = x2*p + -2.95459980854025e-03
	p = x2*p + -1.60960333262415e-02
	p *= x
	q := x2*-1.45660718464996e-05 + -2.13374055278905e-04
	q = x2*q + -1.68282697438203e-03
	q = x2*q + -7.37332916720468e-03
	q = x2*q + -1.42647390514189e-02
	return p / q
}
