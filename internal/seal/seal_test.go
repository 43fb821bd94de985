package seal

import (
	"bytes"
	"errors"
	"testing"
)

// TestSealOpen: a value opens with its key and context only; damage and
// plain text are refused with their errors.
func TestSealOpen(t *testing.T) {
	a, _ := New([]byte("key a"))
	b, _ := New([]byte("key b"))
	sealed := a.SealString("tok", "ctx")
	if got, err := a.OpenString(sealed, "ctx"); err != nil || got != "tok" {
		t.Fatalf("open: %q %v", got, err)
	}
	for _, tt := range []struct {
		s    *Sealer
		v    string
		ctx  string
		want error
	}{
		{a, "tok", "ctx", ErrNotSealed},
		{a, Prefix + "!!", "ctx", ErrDamaged},
		{a, sealed[:len(sealed)-2], "ctx", ErrOtherKey},
		{a, sealed, "other context", ErrOtherKey},
		{b, sealed, "ctx", ErrOtherKey},
	} {
		if _, err := tt.s.OpenString(tt.v, tt.ctx); !errors.Is(err, tt.want) {
			t.Errorf("OpenString(%q, %q) = %v, want %v", tt.v, tt.ctx, err, tt.want)
		}
	}
	if got, err := a.OpenString("", "ctx"); got != "" || err != nil || a.SealString("", "ctx") != "" {
		t.Errorf("empty: %q %v", got, err)
	}
	raw := a.Seal([]byte("frame data"), "s")
	if bytes.Contains(raw, []byte("frame data")) {
		t.Error("Seal left the plain text in")
	}
	if got, err := a.Open(raw, "s"); err != nil || string(got) != "frame data" {
		t.Errorf("Open: %q %v", got, err)
	}
	if _, err := a.Open(raw[:5], "s"); !errors.Is(err, ErrDamaged) {
		t.Errorf("short: %v", err)
	}
}

// FuzzOpenString: no input panics; what opens was sealed.
func FuzzOpenString(f *testing.F) {
	s, _ := New([]byte("k"))
	f.Add(s.SealString("x", "c"))
	f.Add(Prefix)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, v string) {
		if got, err := s.OpenString(v, "c"); err == nil && v != "" && s.SealString(got, "c") == v {
			t.Fatalf("nonce reused for %q", v)
		}
	})
}
