package agent

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
		final := newCiteMap(3).rewrite(tt.in)
		if final != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, final, tt.want)
		}
		for step := 1; step <= 7; step++ {
			c := newCiteMap(3)
			var out strings.Builder
			emitted := 0
			for end := step; ; end += step {
				last := end >= len(tt.in)
				if last {
					end = len(tt.in)
				}
				safe := end
				if !last {
					if oc := openCitation(tt.in[:safe]); oc >= emitted {
						safe = oc
					}
				}
				if safe > emitted {
					out.WriteString(c.rewriteStream(tt.in[emitted:safe]))
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
