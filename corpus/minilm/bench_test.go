package minilm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// flops is the floating-point work of the encoder over one sequence of n
// tokens: the linear layers and the two attention products, 2 per
// multiply-add.
func flops(c BertConfig, n int) float64 {
	h, it := float64(c.Hidden), float64(c.Intermediate)
	linear := 2 * float64(n) * (4*h*h + 2*h*it)
	attn := 2 * 2 * float64(n) * float64(n) * h
	return float64(c.Layers) * (linear + attn)
}

// BenchmarkForward runs the encoder on one goroutine over batches of
// sequences of 128 and 256 tokens, with each kernel (float32 ones, then
// the int8 one), and reports tokens/s and GFLOP/s (one core; int8 counts
// the same operations as float32).
func BenchmarkForward(b *testing.B) {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	if hasVNNI {
		names = append(names, vnniImpl.name)
	}
	for _, name := range names {
		e := testModel(b, name)
		for _, n := range []int{128, 256} {
			b.Run(fmt.Sprintf("%s/len%d", name, n), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				rng := rand.New(rand.NewPCG(3, 4))
				seqs := make([][]int32, 1024/n)
				out := make([][]float32, len(seqs))
				for i := range seqs {
					seqs[i] = make([]int32, n)
					for j := range seqs[i] {
						seqs[i][j] = int32(1000 + rng.IntN(20000))
					}
					out[i] = make([]float32, e.Dimension())
				}
				var ws workspace
				e.model.forward(&ws, seqs, out, nil)
				b.ResetTimer()
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					e.model.forward(&ws, seqs, out, nil)
				}
				cpu := (threadCPU() - cpu0).Seconds()
				sec := b.Elapsed().Seconds()
				tokens := float64(b.N * len(seqs) * n)
				work := float64(b.N*len(seqs)) * flops(e.model.cfg, n) / 1e9
				b.ReportMetric(tokens/sec, "tokens/s")
				b.ReportMetric(work/sec, "GFLOP/s")
				// On a shared machine wall time counts other processes'
				// turns; per CPU-second of this thread is the kernel's speed.
				if cpu > 0 {
					b.ReportMetric(tokens/cpu, "tokens/cpu-s")
					b.ReportMetric(work/cpu, "GFLOP/cpu-s")
				}
			})
		}
	}
}

// BenchmarkEmbed embeds 32 texts of about 256 tokens through Embed, all
// cores, with the default kernel.
func BenchmarkEmbed(b *testing.B) {
	e := testModel(b, "")
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("word%d retention policy backup disk space ", i), 40)
	}
	tokens := 0
	for _, t := range texts {
		tokens += len(e.Tokenize(t))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkQuery embeds one short search query (the latency a search
// pays) with the float32 and the int8 kernels, reporting the median and
// 99th percentile of wall time beside the mean, and CPU time per query.
func BenchmarkQuery(b *testing.B) {
	names := []string{impl.name}
	if hasVNNI {
		names = append(names, vnniImpl.name)
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			e := testModel(b, name)
			took := make([]time.Duration, 0, b.N)
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := e.Embed(context.Background(), []string{"how do I delete a directory tree in python"}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			cpu := processCPU() - cpu0
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkGemm measures each kernel alone on one layer's shapes (64 rows
// of 384 by a 384×1536 weight), in GFLOP per CPU-second of its thread.
func BenchmarkGemm(b *testing.B) {
	for _, k := range kernels() {
		b.Run(k.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			const m, n, kk = 64, 1536, 384
			rng := rand.New(rand.NewPCG(7, 8))
			a := make([]float32, m*kk)
			w := make([]float32, n*kk)
			for i := range a {
				a[i] = rng.Float32()
			}
			for i := range w {
				w[i] = rng.Float32()
			}
			var p packed
			p.packRows(w, n, kk, kk, k.nr)
			c := make([]float32, m*n)
			var s gemmScratch
			b.ResetTimer()
			cpu0 := threadCPU()
			for i := 0; i < b.N; i++ {
				k.gemm(&s, m, a, kk, &p, c, n, nil)
			}
			if cpu := (threadCPU() - cpu0).Seconds(); cpu > 0 {
				b.ReportMetric(float64(b.N)*2*m*n*kk/cpu/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
