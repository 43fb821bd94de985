package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// A code-shot agent with one Go func, answered by the built-in extractive
// model: the question matches the few-shot's pattern, so the model calls the
// func with the symbol and fills the stanza's answer.
func Example() {
	quote := agent.Func{Name: "quote", Handler: agent.TextFunc(func(ctx context.Context, symbol string) (string, error) {
		return map[string]string{"GOOG": "$105.22"}[strings.ToUpper(symbol)], nil
	})}
	stocks, err := agent.NewCodeShotAgent(agent.AgentConfig{
		Name:       "stocks",
		BasePrompt: "I answer questions about stock prices.",
		FewShots: agent.SplitFewShots(`
Q: What is the current price for SYMBOL?
Ask Func[quote]: SYMBOL
Func[quote] says: $123.45
A: The current price for SYMBOL is $123.45.`),
		Funcs: []agent.Func{quote},
	})
	if err != nil {
		panic(err)
	}
	m, _ := agent.New(agent.Config{})
	if err := m.Register(stocks); err != nil {
		panic(err)
	}
	ans, err := m.Ask(context.Background(), agent.Request{Question: "What is the current price for GOOG?"}, func(e kgagent.Event) {
		if !e.Delta {
			fmt.Println(e.Seq, e.Kind, e.Text)
		}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(ans.Agent, "|", ans.Answer)
	// Output:
	// 1 route routed to agent stocks (similarity 1.00)
	// 2 action Ask Func[quote]: GOOG
	// 3 observation $105.22
	// 8 answer The current price for GOOG is $105.22.
	// stocks | The current price for GOOG is $105.22.
}
