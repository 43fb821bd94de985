package main

import (
	"bytes"
	"fmt"
	"net"
	"os"

	"github.com/kgagent/kgagent/gateway"
	"go.yaml.in/yaml/v3"
)

// apiKeysFile is the YAML file named by api_keys_file: keys are stored as
// their sha256 (`kgagent` never needs the plain key).
type apiKeysFile struct {
	Keys []gateway.APIKey `yaml:"keys"`
}

// loadAuth fills the gateway's credentials from the config.
func loadAuth(cfg Config, gc *gateway.Config) error {
	if cfg.APIKeysFile != "" {
		b, err := os.ReadFile(cfg.APIKeysFile)
		if err != nil {
			return fmt.Errorf("config: key %q: %w", "api_keys_file", err)
		}
		var f apiKeysFile
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("config: key %q: %s: %v", "api_keys_file", cfg.APIKeysFile, err)
		}
		for i, k := range f.Keys {
			if k.Name == "" || len(k.Hash) != 64 {
				return fmt.Errorf("config: key %q: %s: key %d needs a name and a 64-hex-digit sha256 hash", "api_keys_file", cfg.APIKeysFile, i+1)
			}
		}
		gc.APIKeys = f.Keys
	}
	gc.JWT = gateway.JWTConfig{JWKSFile: cfg.JWKSFile, JWKSURL: cfg.JWKSURL, Audience: cfg.JWTAudience}
	return nil
}

// gatewayAuthEnabled reports whether the config names any credential.
func gatewayAuthEnabled(cfg Config) bool {
	return cfg.APIKeysFile != "" || cfg.JWKSFile != "" || cfg.JWKSURL != ""
}

// isLoopbackAddr reports whether a listen address binds to loopback only.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
