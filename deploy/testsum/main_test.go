package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummaryOfARealRun runs `go test -json` on a small module with a
// passing, a skipped, a failing test and subtests, plus a package that does
// not build, and checks the summary a person reads.
func TestSummaryOfARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a scratch module")
	}
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module scratch\n\ngo 1.22\n")
	write("a/a_test.go", `package a

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Log("looking"); t.Skip("needs FOO_URL") }
func TestFail(t *testing.T) { t.Error("the answer was 41") }
func TestSub(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) { t.Skip("not today") })
}
`)
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { undefined() }\n")
	write("c/c.go", "package c\n") // no test files
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, _ := cmd.Output() // exits 1: a test fails

	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if s.report() {
		t.Errorf("a run with a failed test and a failed build reported success")
	}
	got := out.String()
	for _, want := range []string{
		"--- FAIL scratch/a TestFail\n",
		"the answer was 41",
		"FAIL scratch/a\t",
		"3 passed, 1 failed, 2 skipped",
		"BUILD FAILED scratch/b",
		"undefined: undefined",
		"== skipped (2)\n  scratch/a TestSkip: a_test.go:6: needs FOO_URL\n  scratch/a TestSub/two: a_test.go:10: not today\n",
		"== failed (1)\n  scratch/a TestFail\n  build failed: scratch/b",
		"FAIL: 3 passed, 1 failed, 2 skipped; 2 of 2 packages failed, 1 builds failed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "scratch/c") {
		t.Errorf("a package without tests is in the table:\n%s", got)
	}
}

func TestAllPassedAndEmptyStream(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
not json: copied through
{"Action":"pass","Package":"p","Elapsed":0.2}
`
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if !s.report() {
		t.Errorf("a passing run reported failure:\n%s", out.String())
	}
	for _, want := range []string{"not json: copied through\n", "ok   p\t0.2s\t1 passed, 0 failed, 0 skipped", "PASS: 1 passed, 0 failed, 0 skipped; 0 of 1 packages failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if s := newSummary(&out); s.report() {
		t.Errorf("an empty stream reported success")
	}
}

// TestPanicFailsTheRunningTests: a test binary that dies (panic, -timeout)
// ends its package with fail while tests are still running.
func TestPanicFailsTheRunningTests(t *testing.T) {
	stream := `{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	var out bytes.Buffer
	s := newSummary(&out)
	_ = s.read(strings.NewReader(stream))
	if s.report() || !strings.Contains(out.String(), "--- FAIL p TestHang\npanic: test timed out") {
		t.Errorf("a hung test was not reported failed:\n%s", out.String())
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"Action":"skip","Package":"p","Test":"T"}` + "\n" + `{"Action":"fail","Package":"p"}`))
	f.Add([]byte(`{"Action":"build-fail","ImportPath":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		s := newSummary(&out)
		_ = s.read(bytes.NewReader(b))
		_ = s.report()
	})
}
