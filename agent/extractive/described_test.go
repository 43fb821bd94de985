package extractive

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestComposeLeadsWithTheEntryWhoseDescriptionIsClosest: with the semantic
// model at hand, the API entry whose opening sentence (what it does) is
// closest in meaning to the question leads, although its best sentence
// shares few of the question's words (under entryShare of the best) and
// its whole section's cosine is lower than a neighbour's. Without the
// model, when it fails, or when no description reaches describedMin, the
// entry that shares the question's words leads as before.
func TestComposeLeadsWithTheEntryWhoseDescriptionIsClosest(t *testing.T) {
	const q = "how do I delete a folder with everything in it"
	folder := page("http://d/library/mailbox.html#mailbox.Maildir.remove_folder", "mailbox — Manipulate mailboxes in various formats", "remove_folder(folder)",
		"Delete the folder whose name is folder. If the folder contains any messages, a NotEmptyError exception will be raised and the folder will not be deleted.")
	rmtree := page("http://d/library/shutil.html#shutil.rmtree", "shutil — High-level file operations", "shutil.rmtree(path, ignore_errors=False, onerror=None)",
		"Remove an entire directory tree; path must point to a directory (but not a symbolic link to a directory).")
	folder.Semantic, rmtree.Semantic = 0.51, 0.45
	// The model: the question and rmtree's opening sentence point one
	// way, remove_folder's another. far: rmtree's description is closer
	// than remove_folder's but under describedMin, no evidence that it
	// does what is asked.
	model := func(rmtree, other []float32) func(context.Context, []string) ([][]float32, error) {
		return func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i, s := range texts {
				switch {
				case s == q:
					out[i] = []float32{1, 0}
				case strings.HasPrefix(s, "Remove an entire directory tree"):
					out[i] = rmtree
				default:
					out[i] = other
				}
			}
			return out, nil
		}
	}
	if got := Compose(q, ev("", folder, rmtree), Config{Embed: model([]float32{0.8, 0.6}, []float32{0.4, 0.92})}); !strings.HasPrefix(got, "`shutil.rmtree()`: Remove an entire directory tree") {
		t.Errorf("answer = %q, want the entry whose description is closest in meaning first", got)
	}
	far := model([]float32{0.3, 0.95}, []float32{0.2, 0.98})
	for _, cfg := range []Config{{}, {Embed: far}, {Embed: func(context.Context, []string) ([][]float32, error) { return nil, errors.New("deadline") }}} {
		if got := Compose(q, ev("", folder, rmtree), cfg); !strings.HasPrefix(got, "`mailbox.Maildir.remove_folder()`") {
			t.Errorf("without the model, or no description close enough (embed set: %v): %q, want the entry that shares the question's words first", cfg.Embed != nil, got)
		}
	}
}
