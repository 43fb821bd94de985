package main

import (
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/nats-io/nats.go"
)

// upgradeQuestion is the demo question in a user's words whose action
// the docs name otherwise: they cover migrating from Lumen 1.x to 2, and
// the word "upgrade" is on no page.
const upgradeQuestion = "How do I upgrade from Lumen 2 to Lumen 3?"

// checkUpgradeAnswer checks the answer to upgradeQuestion when the search
// ranks by meaning (make demo, with the MiniLM weights): an answer, not an
// abstention, that opens with the migration guide's heading and its
// `lumen migrate` command, cited [1], says the docs do not use the word
// "upgrade", and the first source is the migration guide (issue 23).
func checkUpgradeAnswer(t *testing.T, a transportAnswer) {
	t.Helper()
	if extractive.Abstained(a.answer) || !strings.HasPrefix(a.answer, "Migrating from Lumen 1.x: Lumen 2.0 changed the on-disk format.") || !strings.Contains(a.answer, "The docs don't use the word “upgrade”; the above is the closest they cover.") {
		t.Errorf("%s: the answer does not open with the migration guide: %q", a.transport, a.answer)
	}
	checkMigrationCited(t, a)
}

// checkUpgradeAbstention checks the answer to upgradeQuestion without
// semantic vectors: it says the docs do not mention upgrading, then
// quotes what they cover — the migration guide's `lumen migrate` command —
// cited [1].
func checkUpgradeAbstention(t *testing.T, a transportAnswer) {
	t.Helper()
	if !strings.HasPrefix(a.answer, "The docs don't say anything about “upgrade”.") {
		t.Errorf("%s: the answer does not say what the docs lack: %q", a.transport, a.answer)
	}
	checkMigrationCited(t, a)
}

// checkMigrationCited checks that a quotes the migration command, cited [1],
// and that its first source is the migration guide.
func checkMigrationCited(t *testing.T, a transportAnswer) {
	t.Helper()
	if !strings.Contains(a.answer, "Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once") {
		t.Errorf("%s: the answer does not quote the migration command: %q", a.transport, a.answer)
	}
	if c := cite.Numbers(a.answer); len(c) == 0 || c[0] != 1 {
		t.Errorf("%s: the quote is not cited [1]: %q", a.transport, a.answer)
	}
	if !strings.HasSuffix(a.first, "/guides/migration.html#migration") {
		t.Errorf("%s: first source %q, want the migration guide: %q", a.transport, a.first, a.answer)
	}
}

// askEveryTransport asks q over REST, websocket and NATS of the serve s.
func askEveryTransport(t *testing.T, s served, q string) []transportAnswer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/socket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	nc, err := nats.Connect(s.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	return []transportAnswer{askREST(t, s.base, q), askSocket(t, ws, q), askNATS(t, nc, q)}
}

// checkUpgradeEveryTransport asks s upgradeQuestion over REST, websocket
// and NATS, checks each answer with check, and that all three are the same.
func checkUpgradeEveryTransport(t *testing.T, s served, check func(*testing.T, transportAnswer)) {
	t.Helper()
	got := askEveryTransport(t, s, upgradeQuestion)
	t.Logf("%q -> %q", upgradeQuestion, got[0].answer)
	for _, a := range got {
		check(t, a)
		if a.answer != got[0].answer {
			t.Errorf("%s answered %q, REST %q", a.transport, a.answer, got[0].answer)
		}
	}
}

// TestDemoUsersWordsEveryTransport asks serve --demo the upgrade question
// over REST, websocket and NATS with semantic search off (no weights): each
// gives the same cited abstention quoting guides/migration.html
// (TestSemanticPassOnServe asks it with the semantic model, as make demo
// serves it: an answer).
func TestDemoUsersWordsEveryTransport(t *testing.T) {
	s := startServeFull(t, "--demo", "--demo-site-dir", siteDir, "--answer-cache-size", "0")
	waitDemoIngested(t, s.stderr)
	checkUpgradeEveryTransport(t, s, checkUpgradeAbstention)
}
