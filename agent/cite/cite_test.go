package cite

import (
	"strings"
	"testing"
)

// TestCiteMapStreamMatchesFinal streams answers cut at every byte the way
// the ReAct loop emits deltas (holding back an unfinished citation, fence
// marker or trailing space) and checks that the renumbered deltas join to
// the renumbered final text.
func TestCiteMapStreamMatchesFinal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Use it [3]. See [1, 3] and [2].", "Use it [1]. See [2, 1] and [3]."},
		{"Bad [9] and good [2].", "Bad and good [1]."},
		{"Code `arr[0]` and\n```\nx = a[1]\n```\nthen [2].", "Code `arr[0]` and\n```\nx = a[1]\n```\nthen [1]."},
		{"No citations at all.", "No citations at all."},
	}
	for _, tt := range tests {
		final := NewMap(3).Rewrite(tt.in)
		if final != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, final, tt.want)
		}
		for step := 1; step <= 7; step++ {
			c := NewMap(3)
			var out strings.Builder
			emitted := 0
			for end := step; ; end += step {
				last := end >= len(tt.in)
				if last {
					end = len(tt.in)
				}
				safe := end
				if !last {
					if oc := OpenAt(tt.in[:safe]); oc >= emitted {
						safe = oc
					}
				}
				if safe > emitted {
					out.WriteString(c.RewriteStream(tt.in[emitted:safe]))
					emitted = safe
				}
				if last {
					break
				}
			}
			if out.String() != final {
				t.Errorf("streamed in pieces of %d: %q, final %q", step, out.String(), final)
			}
		}
	}
}

func TestNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"a [1] b [2]", []int{1, 2}},
		{"a [1, 3]", []int{1, 3}},
		{"x[12].", []int{12}},
		{"[a] [] [1", nil},
		{"arr[0] and [99999]", []int{0}},
	}
	for _, tt := range tests {
		got := Numbers(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("Numbers(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Numbers(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func FuzzNumbers(f *testing.F) {
	f.Add("see [1] and [2, 3]")
	f.Add("[[1]] [ 2 ] [99999]")
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range Numbers(s) {
			if n < 0 || n > 9999 {
				t.Fatalf("citation %d out of range in %q", n, s)
			}
		}
	})
}

// TestCheckMoves: a group whose numbers are all wrong (out of range, or a
// passage that does not support its sentence) gets the passage that does
// from Move; a right number is kept as written and counted, a moved one
// is not counted, and Move leaves Check's groups as they were.
func TestCheckMoves(t *testing.T) {
	// testJudge: passage 1 supports a judged sentence of odd length, 2
	// one of even length.
	text := "Odd sentence is here [2]. Even sentence here [7]. Odd sentence here [1]."
	ct := Parse(text)
	groups, count := ct.Check(testJudge{}, 5)
	render := func(g [][]int) string { return ct.Render(func(i int, _ Group) []int { return g[i] }) }
	if got, want := render(groups), "Odd sentence is here. Even sentence here. Odd sentence here [1]."; got != want || count != 1 {
		t.Errorf("checked: %q (%d kept), want %q (1)", got, count, want)
	}
	moved := ct.Move(testJudge{}, 5, groups)
	if got, want := render(moved), "Odd sentence is here [1]. Even sentence here [2]. Odd sentence here [1]."; got != want {
		t.Errorf("moved: %q, want %q", got, want)
	}
	if got, want := render(groups), "Odd sentence is here. Even sentence here. Odd sentence here [1]."; got != want {
		t.Errorf("Move changed Check's groups: %q", got)
	}
	// A passage Best names out of range is not given.
	if moved := ct.Move(testJudge{}, 1, groups); render(moved) != "Odd sentence is here [1]. Even sentence here. Odd sentence here [1]." {
		t.Errorf("moved with one source: %q", render(moved))
	}
}

// bestCounter is testJudge counting its Best and Supports calls.
type bestCounter struct {
	testJudge
	calls, supports *int
}

func (j bestCounter) Best(sentence string) int {
	*j.calls++
	return j.testJudge.Best(sentence)
}

func (j bestCounter) Supports(sentence string, n int) (bool, bool) {
	*j.supports++
	return j.testJudge.Supports(sentence, n)
}

// TestCheckAsksBestOnlyToMove: Judge.Best (every passage weighed against
// the sentence) is asked only by Move, and only for a group Check left
// with none of its numbers; Move asks Supports nothing, so a checked and
// moved answer has each citation's support judged once.
func TestCheckAsksBestOnlyToMove(t *testing.T) {
	ct := Parse("Odd sentence is here [2]. Even sentence here [7]. Odd sentence here [1].")
	best, supports := 0, 0
	j := bestCounter{testJudge{}, &best, &supports}
	groups, _ := ct.Check(j, 5)
	if best != 0 || supports != 2 {
		t.Errorf("Check asked Best %d and Supports %d times, want 0 and 2 (the in-range numbers)", best, supports)
	}
	ct.Move(j, 5, groups)
	if best != 2 || supports != 2 {
		t.Errorf("after Move: Best asked %d and Supports %d times, want 2 and 2", best, supports)
	}
}
