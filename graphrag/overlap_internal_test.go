package graphrag

import (
	"math"
	"strings"
	"testing"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// overlapRef is overlap as first written (lower-case, split, map of hits):
// the reference the allocation-free version must agree with.
func overlapRef(q map[string]bool, s string) float64 {
	if len(q) == 0 {
		return 0
	}
	hit := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.'
	}) {
		f = strings.Trim(f, ".")
		if q[f] {
			hit[f] = true
		} else if len(f) > 4 && f[len(f)-1] == 's' {
			if n := text.Singular(f); q[n] {
				hit[n] = true
			}
		}
		if strings.Contains(f, ".") {
			for _, p := range strings.Split(f, ".") {
				if q[p] {
					hit[p] = true
				}
			}
		}
	}
	return float64(len(hit)) / float64(len(q))
}

func FuzzOverlap(f *testing.F) {
	for _, c := range [][2]string{
		{"How do I use json.dumps with files?", "json.dumps(obj, fp) writes JSON Files to os.path"},
		{"What is the GIL?", "Global Interpreter Lock (GIL): the mechanism…"},
		{"Straße Ärger naïve café", "STRASSE ärger NAÏVE Café..."},
		{"classes dictionaries", "Classes and DICTIONARIES, queries"},
		{"", "anything"},
		{"os.path.join json.dumps", "OS.PATH.Join and Json.DUMPS, .Path. x.JOINS"},
		{"İstanbul Ω omega", "İSTANBUL istanbul ΩMEGA Ω.OMEGA"},
		{"a.b.c", "..a..b.c.. \xff\xfeA.B"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, question, text string) {
		q := termSet(question)
		want := overlapRef(q, text)
		if got := overlap(newWordSet(q, 0), text); got != want {
			t.Errorf("overlap(%q, %q) = %v, want %v", question, text, got, want)
		}
	})
}

// FuzzRelevanceOverlap checks that relevance's cached word overlap of
// subject and object is the overlap of "subject name, subject id, object
// name or literal", also when the cache is reused for a second edge of the
// same subject.
func FuzzRelevanceOverlap(f *testing.F) {
	f.Add("What does json.dumps return?", "json.dumps", "json.dumps", "a JSON string", "", "Serialize obj")
	f.Add("threading locks", "Lock Objects", "lock objects", "", "threading.Lock", "Locks")
	f.Add("os path join", "os.path", "os.path", "", "os.path.join", "JOIN")
	f.Fuzz(func(t *testing.T, question, sname, sid, lit, oid, oname string) {
		s := &Service{cfg: Config{}.withDefaults()}
		q := termSet(question)
		ws := newWordSet(q, 0)
		for _, tr := range []kgagent.Triple{
			{Subject: kgagent.Entity{ID: sid, Name: sname}, Predicate: "x", Object: kgagent.Entity{ID: oid, Name: oname}, Literal: lit},
			{Subject: kgagent.Entity{ID: sid, Name: sname}, Predicate: "x", Object: kgagent.Entity{ID: oid, Name: oname}},
			{Subject: kgagent.Entity{ID: oid, Name: oname}, Predicate: "x", Object: kgagent.Entity{ID: sid, Name: sname}},
		} {
			obj := tr.Object.Name
			if tr.Literal != "" {
				obj = text.Clip(tr.Literal, 400)
			}
			want := overlapRef(q, tr.Subject.Name+" "+tr.Subject.ID+" "+obj)
			got := s.relevance(ws, nil, nil, &tr) - predicatePrior("x")
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("relevance overlap of %+v for %q = %v, want %v", tr, question, got, want)
			}
		}
	})
}

// factSet tells facts apart exactly: literals that share their first 32
// bytes and length, or differ only in the source, are distinct; the same
// fact again is not.
func TestFactSet(t *testing.T) {
	long := strings.Repeat("a", 40)
	base := kgagent.Triple{Subject: kgagent.Entity{ID: "json.dumps"}, Predicate: "is_defined_as", Literal: long + "x", SourceURL: "https://d/json#dumps"}
	variants := []func(tr *kgagent.Triple){
		func(tr *kgagent.Triple) { tr.Literal = long + "y" },
		func(tr *kgagent.Triple) { tr.SourceURL += "2" },
		func(tr *kgagent.Triple) { tr.Predicate = "is_a" },
		func(tr *kgagent.Triple) { tr.Subject.ID = "json.dump" },
		func(tr *kgagent.Triple) { tr.Object.ID = "json" },
		func(tr *kgagent.Triple) { tr.Literal = "" },
	}
	f := newFactSet(0)
	first := base
	if !f.add(&first) {
		t.Fatal("first fact not new")
	}
	again := base
	again.DocURL, again.ChunkID = "other", "c2" // not part of a fact's identity
	if f.add(&again) {
		t.Error("the same fact counted twice")
	}
	for i, change := range variants {
		tr := base
		change(&tr)
		if !f.add(&tr) {
			t.Errorf("variant %d (%+v) taken for a seen fact", i, tr)
		}
	}
}

// TestFactSetCollisions: facts whose hashes collide stay distinct (the
// first in the map, the others in its overflow) and each is found again;
// a collision is made by filing a fact under another's hash.
func TestFactSetCollisions(t *testing.T) {
	mk := func(s, lit string) *kgagent.Triple {
		return &kgagent.Triple{Subject: kgagent.Entity{ID: s}, Predicate: "p", Literal: lit, SourceURL: "u"}
	}
	f := newFactSet(4)
	a, b, c := mk("a", "x"), mk("b", "y"), mk("c", strings.Repeat("z", 40))
	k := f.hash(b)
	f.m[k] = a // a collides with b
	f.m[f.hash(c)] = a
	for i, step := range []struct {
		t   *kgagent.Triple
		new bool
	}{{b, true}, {c, true}, {mk("b", "y"), false}, {mk("c", strings.Repeat("z", 40)), false}, {mk("a", "x"), true}, {mk("a", "x"), false},
		{mk("c", strings.Repeat("z", 39)+"w"), true}} {
		if got := f.add(step.t); got != step.new {
			t.Errorf("step %d: add(%s %q) = %v, want %v", i, step.t.Subject.ID, step.t.Literal, got, step.new)
		}
	}
}
