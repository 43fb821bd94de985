package agentfile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/agentfile"
)

// Loading a directory of agent files into a Manager, as
// `kgagent serve --agents DIR` does, and asking one of them.
func ExampleRegister() {
	dir, _ := os.MkdirTemp("", "agents")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "clock.yaml"), []byte(`
name: clock
description: Tells the time in UTC.
few_shots: |
  Q: What is the time in UTC?
  Ask Func[fixie_utc_datetime]: now
  Func[fixie_utc_datetime] says: Sunday, 22 November 2026, 11:00:00 UTC (+00:00)
  A: In UTC it is Sunday, 22 November 2026, 11:00:00 UTC (+00:00).
`), 0o600)
	m, _ := agent.New(agent.Config{})
	names, err := agentfile.Register(context.Background(), m, dir, agentfile.Options{})
	fmt.Println(names, err)
	ans, _ := m.Ask(context.Background(), agent.Request{Question: "What is the time in UTC?"}, nil)
	fmt.Println(ans.Agent, len(ans.Answer) > len("In UTC it is "))

	// An invalid file names the file, the line and the rule.
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\nfew_shots: |\n  Q: hi\n  Ask Func[lookup]: x\n  Func[lookup] says: y\n  A: z\n"), 0o600)
	_, err = agentfile.LoadDir(context.Background(), dir, agentfile.Options{})
	fmt.Println(filepath.Base(err.Error()))
	// Output:
	// [clock] <nil>
	// clock true
	// bad.yaml:4: few-shot stanza 1 ("Q: hi"): every Func name must be a registered func or a fixie_ built-in
}
