package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// newID returns a random 16-hex-digit id.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newToken returns a random 128-bit token (resume tokens).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
