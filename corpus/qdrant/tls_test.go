package qdrant_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stand-in"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := startStandIn(t, qdranttest.Options{APIKey: "k", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})

	ix := open(t, qdrant.Config{Addr: srv.Addr(), APIKey: "k", TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 2)
	hits, err := ix.Search(context.Background(), hybrid("alpacas", 5))
	if err != nil || len(hits) != 2 {
		t.Fatalf("search over TLS: %d hits, %v", len(hits), err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tests := []struct {
		name string
		cfg  qdrant.Config
	}{
		{"plaintext client", qdrant.Config{Addr: srv.Addr(), APIKey: "k"}},
		{"untrusted certificate", qdrant.Config{Addr: srv.Addr(), APIKey: "k", TLS: true}},
	}
	for _, tt := range tests {
		ix, err := qdrant.New(ctx, tt.cfg, corpustest.Dim, corpustest.Embedder.Name())
		if err == nil {
			ix.Close()
		}
		if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("%s: %v, want %s", tt.name, err, kgagent.EUNAVAILABLE)
		}
	}
}
