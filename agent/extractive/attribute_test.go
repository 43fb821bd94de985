package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestAttribute(t *testing.T) {
	evs := ev("", lumen...)
	tests := []struct {
		name, answer, want string
		supported          int
	}{
		{name: "a supported sentence is cited with its passage",
			answer: "Restoring replaces the data directory with the snapshot, so stop the server first.",
			want:   "Restoring replaces the data directory with the snapshot, so stop the server first [1].", supported: 1},
		{name: "the best passage of each sentence; one citation for a run of the same source",
			answer: "The lumen package is the Python client. Install it with pip. It supports Python 3.9 and later!",
			want:   "The lumen package is the Python client. Install it with pip [4]. It supports Python 3.9 and later [3]!", supported: 3},
		{name: "a sentence with a number no passage holds is not supported",
			answer: "It supports Python 2.7 and later.", want: "It supports Python 2.7 and later.", supported: 0},
		{name: "unrelated words are not supported",
			answer: "The weather in Paris is sunny today.", want: "The weather in Paris is sunny today.", supported: 0},
		{name: "code blocks and list numbers are not judged",
			answer: "1. Create a backup with lumen backup create.\n```\nlumen backup create writes a snapshot\n```\n",
			want:   "1. Create a backup with lumen backup create [2].\n```\nlumen backup create writes a snapshot\n```\n", supported: 1},
		{name: "garbage", answer: "2023-08-24T15:39:56.783Z", want: "2023-08-24T15:39:56.783Z"},
	}
	for _, tt := range tests {
		got := NewSupport(evs).Attribute(tt.answer)
		if got.Text != tt.want || got.Supported != tt.supported {
			t.Errorf("%s:\n got %q (%d supported of %d)\nwant %q (%d)", tt.name, got.Text, got.Supported, got.Sentences, tt.want, tt.supported)
		}
	}
	if got := NewSupport(nil).Attribute("Stop the server first."); got.Text != "Stop the server first." || got.Supported != 0 {
		t.Errorf("no evidence: %+v", got)
	}
}

func FuzzAttribute(f *testing.F) {
	f.Add("Restoring replaces the data directory. Stop the server first.\n```\nx\n```")
	f.Add("It supports Python 3.9 and later!  The lumen package. ")
	evs := ev("", lumen...)
	f.Fuzz(func(t *testing.T, s string) {
		got := NewSupport(evs).Attribute(s)
		if got.Supported > got.Sentences {
			t.Fatalf("%d supported of %d sentences", got.Supported, got.Sentences)
		}
		// Only citations are added: removing them gives the answer back.
		if got.Supported == 0 && got.Text != s {
			t.Fatalf("changed without a citation: %q -> %q", s, got.Text)
		}
		if len(got.Text) < len(s) {
			t.Fatalf("text lost: %q -> %q", s, got.Text)
		}
	})
}

// A passage kept only as a source (EvidencePassage.SourceOnly) is left out
// of Compose's answer but is shown to an LLM like any other, so Support must
// judge an LLM's citation of it by it: its sentence is supported and its URL
// is not invented.
func TestSupportKeepsSourceOnlyPassages(t *testing.T) {
	src := kgagent.EvidencePassage{URL: "http://lumen/ops/upgrade.html", Title: "Upgrading", HeadingPath: []string{"Upgrading"},
		Text: "Upgrading migrates the catalog in place; read https://lumen.example/upgrade-notes before upgrading a cluster.", SourceOnly: true}
	evs := ev("", append(append([]kgagent.EvidencePassage{}, lumen[:3]...), src)...)
	sup := NewSupport(evs)
	sentence := "Upgrading migrates the catalog in place."
	if got := sup.Best(sentence); got != 4 {
		t.Errorf("Best(%q) = %d, want 4 (the source-only passage)", sentence, got)
	}
	if ok, known := sup.Supports(sentence, 4); !ok || !known {
		t.Errorf("Supports(%q, 4) = %v, %v; want true, true", sentence, ok, known)
	}
	answer := "Read https://lumen.example/upgrade-notes before upgrading a cluster [4]."
	if inv := sup.Invented(answer); len(inv) != 0 {
		t.Errorf("Invented(%q) = %q, want none", answer, inv)
	}
	// Compose still answers from the passages it always did.
	if got := Compose("How do I upgrade the catalog?", evs, Config{}); strings.Contains(got, "upgrade-notes") {
		t.Errorf("Compose used the source-only passage: %q", got)
	}
}
