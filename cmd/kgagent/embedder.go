package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kgagent/kgagent"
)

// embedderFile names, in the data dir, the embedder whose vectors the
// embedded index holds.
const embedderFile = "embedder"

// checkDataDirEmbedder records name as the embedder of the data dir's
// embedded index the first time a data dir is opened, and refuses another
// embedder after that (CONFLICT): vectors of one model searched with
// another's queries find nothing, silently.
func checkDataDirEmbedder(dataDir, name string) error {
	path := filepath.Join(dataDir, embedderFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if got := strings.TrimSpace(string(b)); got != name {
			return kgagent.Errorf(kgagent.ECONFLICT,
				"data dir %s holds vectors of embedder %q, and this run embeds with %q: run with the embedder it was built with, or use a new data dir and ingest again",
				dataDir, got, name)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading %s", path)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating %s", dataDir)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o644); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing %s", tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing %s", path)
	}
	return nil
}
