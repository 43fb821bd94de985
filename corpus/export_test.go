package corpus

// LexicalConfigOf is l's configuration with its defaults filled in, for the
// external tests that check Lexical against a reference implementation
// (lexical_bench_test.go, external because it extracts pages with the
// crawler, which imports this package through knowledge).
func LexicalConfigOf(l *Lexical) LexicalConfig { return l.cfg }

// FNV64 is the FNV-1a hash the lexical embedder folds features with.
var FNV64 = fnv64
