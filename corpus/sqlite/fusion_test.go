package sqlite

import (
	"math"
	"slices"
	"testing"
)

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

// semRanking is a semantic ranking of rows 100.. with cosines falling from
// 0.70 by 0.004 a row (n rows), and the cosines as SemanticFusion gets them.
func semRanking(n int) ([]scored, map[int64]float64) {
	sem := make([]scored, n)
	cos := map[int64]float64{}
	for i := range sem {
		sem[i] = scored{int64(100 + i), 0.70 - 0.004*float64(i)}
		cos[sem[i].rid] = sem[i].score
	}
	return sem, cos
}

// TestSemanticFusionSinksAWordMatchTheModelRejects: the keyword ranking's
// best hit (row 1) is one the semantic model puts far below its own last
// hit. ScoreFusion, which gives it the same nothing as that last hit, keeps
// it first; SemanticFusion scores it by its own cosine, and the semantic
// ranking's best comes first. Row 2, a keyword hit without a vector (not
// embedded yet), is neither helped nor held back by the model.
func TestSemanticFusionSinksAWordMatchTheModelRejects(t *testing.T) {
	sem, cos := semRanking(50)
	cos[1] = 0.05
	kw := []scored{{1, 12}, {2, 11.9}, {100, 6}, {3, 4}, {4, 4}, {5, 4}, {6, 4}, {7, 4}, {8, 4}, {9, 4}, {10, 3}}
	w := []float64{1}
	if got := rids(ScoreFusion(5, []float64{1, 1}, kw, sem)); got[0] != 1 {
		t.Fatalf("ScoreFusion order %v: the test no longer shows its weakness (want 1 first)", got)
	}
	got := rids(SemanticFusion(50, 1, sem, cos, kw, w, kw))
	if got[0] != 100 {
		t.Errorf("SemanticFusion order %v, want the semantic best (100) first", got[:5])
	}
	pos := map[int64]int{1: len(got)} // row 1 may be cut
	for i, r := range got {
		pos[r] = i
	}
	if pos[1] <= pos[2] {
		t.Errorf("row 1 (cosine 0.05) at %d, not below row 2 (no vector) at %d", pos[1], pos[2])
	}
	if pos[2] > 3 {
		t.Errorf("row 2 (no vector, keyword second) at %d: held back by the model", pos[2])
	}
}

// TestSemanticFusionKeepsAnAgreedKeywordHit: when the model rates the
// keyword ranking's clear best (row 1) close to its own best, the rankings
// agree and that hit stays first, though the semantic ranking puts another
// row first.
func TestSemanticFusionKeepsAnAgreedKeywordHit(t *testing.T) {
	sem, cos := semRanking(50)
	sem = append([]scored{sem[0]}, append([]scored{{1, 0.69}}, sem[1:]...)...)
	cos[1] = 0.69
	kw := []scored{{1, 12}, {3, 5}, {4, 4.9}, {5, 4.8}, {6, 4.7}, {7, 4.6}, {8, 4.5}, {9, 4.4}, {10, 4.3}, {11, 4.2}}
	got := rids(SemanticFusion(5, 1, sem, cos, kw, []float64{1}, kw))
	if got[0] != 1 {
		t.Errorf("order %v, want the keyword best (1) first", got)
	}
}

// TestSemanticShare: the semantic ranking's factor is 1 while the keyword
// ranking's best has at least agreeHigh of the semantic best's cosine,
// agreeBoost at agreeLow and below, linear between; 1 when the keyword
// best has no vector.
func TestSemanticShare(t *testing.T) {
	for _, c := range []struct {
		kc    float64
		known bool
		top   float64
		want  float64
	}{
		{0.6, true, 0.6, 1},
		{0.5, true, 0.6, 1},    // 0.83 of the best
		{0.39, true, 0.6, 1.5}, // 0.65
		{0.3, true, 0.6, 2},    // 0.5
		{-0.1, true, 0.6, 2},
		{0.1, false, 0.6, 1},
		{0.1, true, 0, 1},
	} {
		if got := semanticShare(c.kc, c.known, c.top); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("semanticShare(%v, %v, %v) = %v, want %v", c.kc, c.known, c.top, got, c.want)
		}
	}
}

// TestSemanticFusionWithoutKeywordHits: a query no keyword matches counts
// as disagreement (the semantic ranking gets agreeBoost), and with no
// semantic ranking the lexical rankings fuse as ScoreFusion does.
func TestSemanticFusionWithoutKeywordHits(t *testing.T) {
	sem, cos := semRanking(20)
	dense := []scored{{7, 0.9}, {100, 0.5}}
	got := rids(SemanticFusion(3, 1, sem, cos, nil, []float64{0.15}, dense))
	if got[0] != 100 {
		t.Errorf("order %v, want the semantic best first", got)
	}
	kw := []scored{{1, 3}, {2, 2}, {3, 1}}
	if a, b := rids(SemanticFusion(3, 1, nil, nil, kw, []float64{1}, kw)), rids(ScoreFusion(3, []float64{1}, kw)); !slices.Equal(a, b) {
		t.Errorf("without a semantic ranking %v, ScoreFusion %v", a, b)
	}
}

// TestSemanticFusionFlatSemanticRanking: when the semantic ranking is flat
// (near-duplicate pages: its 50 hits between 0.710 and 0.705), its spread
// says little, and the keyword ranking's clear best (row 1), which the model
// rates close to its best (0.62 of 0.71), must not fall from first to last:
// normalised by the spread 0.005 alone, its gap of 0.085 below the last hit
// gave it -17 times the semantic weight (-7.4 in all). The spread counts as
// at least semanticSpreadFloor.
func TestSemanticFusionFlatSemanticRanking(t *testing.T) {
	sem := make([]scored, 50)
	cos := map[int64]float64{}
	for i := range sem {
		sem[i] = scored{int64(100 + i), 0.710 - 0.0001*float64(i)}
		cos[sem[i].rid] = sem[i].score
	}
	cos[1] = 0.62
	kw := []scored{{1, 12}, {2, 5}, {3, 4.9}, {4, 4.8}, {5, 4.7}, {6, 4.6}, {7, 4.5}, {8, 4.4}, {9, 4.3}, {10, 4.2}}
	got := SemanticFusion(60, 1, sem, cos, kw, []float64{1}, kw)
	if got[0].rid != 1 {
		pos := slices.IndexFunc(got, func(s scored) bool { return s.rid == 1 })
		t.Errorf("row 1 (keyword best, cosine 0.62) at %d of %d with score %.2f, want first (order %v)", pos, len(got), got[max(pos, 0)].score, rids(got[:5]))
	}
	for _, s := range got {
		if s.score < -1 {
			t.Errorf("row %d scores %.2f: a flat ranking's cosine gap outweighs every lexical share", s.rid, s.score)
		}
	}
}
