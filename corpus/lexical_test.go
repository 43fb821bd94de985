package corpus

import (
	"context"
	"math"
	"testing"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestLexicalDeterministicNormalised(t *testing.T) {
	l := NewLexical(LexicalConfig{})
	if l.Dimension() != 384 || l.Name() != "lexical-v1-384" {
		t.Fatalf("dim %d name %s", l.Dimension(), l.Name())
	}
	vs, err := l.Embed(context.Background(), []string{"zipfile — Work with ZIP archives\nRead and write ZIP files.", "", "zipfile — Work with ZIP archives\nRead and write ZIP files."})
	if err != nil {
		t.Fatal(err)
	}
	if n := dot(vs[0], vs[0]); math.Abs(n-1) > 1e-5 {
		t.Errorf("norm^2 = %v", n)
	}
	if dot(vs[1], vs[1]) != 0 {
		t.Errorf("empty text should give the zero vector")
	}
	for i := range vs[0] {
		if vs[0][i] != vs[2][i] {
			t.Fatal("not deterministic")
		}
	}
}

func TestLexicalSimilarityOrder(t *testing.T) {
	l := NewLexical(LexicalConfig{})
	q := l.Vector("how do I read a zip archive")
	tests := []struct{ near, far string }{
		{"zipfile — Work with ZIP archives\nThe ZIP file format is a common archive standard.", "json — JSON encoder and decoder\nEncode Python objects as JSON."},
		{"Reading zipped archives", "Sending emails with SMTP"},
	}
	for _, tt := range tests {
		if dn, df := dot(q, l.Vector(tt.near)), dot(q, l.Vector(tt.far)); dn <= df {
			t.Errorf("sim(near)=%v <= sim(far)=%v for %q", dn, df, tt.near)
		}
	}
}

func TestLexicalCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLexical(LexicalConfig{}).Embed(ctx, []string{"x"}); err == nil {
		t.Fatal("want error on canceled context")
	}
}
