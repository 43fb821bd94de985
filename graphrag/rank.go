package graphrag

import (
	"sort"
	"strings"

	"github.com/kgagent/kgagent"
)

// EntityMatch is an entity a Store found for a name lookup: whether it is
// named exactly like one of the terms, and how connected it is (its degree
// or reference count).
type EntityMatch struct {
	Entity kgagent.Entity
	Exact  bool
	Degree int64
}

// RankEntities orders matches as every Store's Entities returns them: exact
// name matches first, then the better connected, then by id; and keeps at
// most limit. It reorders ms in place.
func RankEntities(ms []EntityMatch, limit int) []kgagent.Entity {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Exact != b.Exact {
			return a.Exact
		}
		if a.Degree != b.Degree {
			return a.Degree > b.Degree
		}
		return a.Entity.ID < b.Entity.ID
	})
	ms = ms[:min(len(ms), max(limit, 0))]
	out := make([]kgagent.Entity, len(ms))
	for i, m := range ms {
		out[i] = m.Entity
	}
	return out
}

// ContainsWords reports whether term occurs in the normalised name norm on
// word boundaries (spaces) or on the dot boundaries of code names, the rule
// every Store's Entities uses for a term inside a longer name.
func ContainsWords(norm, term string) bool {
	for i := 0; i < len(norm); {
		j := strings.Index(norm[i:], term)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(term)
		before := j == 0 || norm[j-1] == ' ' || norm[j-1] == '.'
		after := end == len(norm) || norm[end] == ' ' || norm[end] == '.'
		if before && after {
			return true
		}
		i = j + 1
	}
	return false
}
