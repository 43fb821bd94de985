package sqlite

import "testing"

func rids(s []scored) []int64 {
	out := make([]int64, len(s))
	for i, x := range s {
		out[i] = x.rid
	}
	return out
}

// TestScoreFusionKeepsAConfidentHit: a ranking that clearly prefers a hit
// keeps it on top, though a flat ranking of equal weight ranks it last;
// plain RRF lets the flat ranking pull it down.
func TestScoreFusionKeepsAConfidentHit(t *testing.T) {
	confident := []scored{{1, 10}, {2, 3}, {3, 2.9}, {4, 2.8}, {5, 2.7}}
	flat := []scored{{5, 0.31}, {4, 0.305}, {3, 0.30}, {2, 0.30}, {11, 0.30}, {12, 0.30}, {13, 0.30}, {14, 0.30}, {15, 0.30}, {1, 0.299}}
	w := []float64{1, 1}
	if got := rids(ScoreFusion(5, w, flat, confident)); got[0] != 1 {
		t.Errorf("ScoreFusion order %v, want 1 first", got)
	}
	if got := rids(RRF(20, 5, w, flat, confident)); got[0] == 1 {
		t.Errorf("RRF order %v: the test no longer shows RRF's weakness", got)
	}
}

// TestScoreFusionFlatRankings: rankings with one score for all still add
// their order, and empty rankings are skipped.
func TestScoreFusionFlatRankings(t *testing.T) {
	got := rids(ScoreFusion(3, []float64{1, 1}, []scored{{7, 1}, {8, 1}, {9, 1}}, nil))
	if len(got) != 3 || got[0] != 7 || got[1] != 8 || got[2] != 9 {
		t.Errorf("order %v, want 7 8 9", got)
	}
	if got := ScoreFusion(3, []float64{1}, nil); len(got) != 0 {
		t.Errorf("no rankings: %v", got)
	}
}
