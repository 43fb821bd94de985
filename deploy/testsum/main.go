// Command testsum turns the JSON stream of `go test -json` into what a
// person reads at the end of `make test`: a line per package as it
// finishes, the output of every failed test as it fails, and at the end a
// table of passed, failed and skipped tests per package, the skipped tests
// by name with the reason each gave, and the failed tests by name.
//
//	go test -json ./... | go run ./deploy/testsum
//
// It exits 1 when a test, a package or a build failed, or when the stream
// held no test results at all; lines that are not JSON are copied through.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

func main() {
	s := newSummary(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	if !s.report() {
		os.Exit(1)
	}
}

// event is one object of the go test -json stream (see go doc
// cmd/test2json), including the build events of go test -json.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// keepLines bounds the output kept per running test or package.
const keepLines = 200

type pkgResult struct {
	passed, failed, skipped int
	result                  string // ok, FAIL, or "" while running
	elapsed                 float64
	output                  []string
	running                 map[string][]string // test -> its output so far
}

type named struct{ pkg, test, reason string }

// summary is the state built from the stream.
type summary struct {
	out       io.Writer
	pkgs      map[string]*pkgResult
	skipped   []named
	failed    []named
	buildOut  map[string][]string
	buildFail []string
	events    int
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, pkgs: map[string]*pkgResult{}, buildOut: map[string][]string{}}
}

func (s *summary) pkg(name string) *pkgResult {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgResult{running: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

// read consumes the stream until EOF.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(s.out, "%s\n", line)
			continue
		}
		s.events++
		s.handle(e)
	}
	return sc.Err()
}

func appendBounded(lines []string, l string) []string {
	lines = append(lines, l)
	if len(lines) > keepLines {
		lines = lines[len(lines)-keepLines:]
	}
	return lines
}

func (s *summary) handle(e event) {
	switch e.Action {
	case "build-output":
		s.buildOut[e.ImportPath] = appendBounded(s.buildOut[e.ImportPath], e.Output)
		return
	case "build-fail":
		s.buildFail = append(s.buildFail, e.ImportPath)
		fmt.Fprintf(s.out, "BUILD FAILED %s\n%s", e.ImportPath, strings.Join(s.buildOut[e.ImportPath], ""))
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		s.packageEvent(e, p)
		return
	}
	switch e.Action {
	case "run":
		p.running[e.Test] = nil
	case "output":
		p.running[e.Test] = appendBounded(p.running[e.Test], e.Output)
	case "pass":
		p.passed++
		delete(p.running, e.Test)
	case "skip":
		p.skipped++
		s.skipped = append(s.skipped, named{e.Package, e.Test, skipReason(p.running[e.Test])})
		delete(p.running, e.Test)
	case "fail":
		s.testFailed(e.Package, e.Test, p)
	}
}

func (s *summary) testFailed(pkg, test string, p *pkgResult) {
	p.failed++
	s.failed = append(s.failed, named{pkg: pkg, test: test})
	fmt.Fprintf(s.out, "--- FAIL %s %s\n%s", pkg, test, strings.Join(p.running[test], ""))
	delete(p.running, test)
}

func (s *summary) packageEvent(e event, p *pkgResult) {
	switch e.Action {
	case "output":
		p.output = appendBounded(p.output, e.Output)
	case "pass", "fail", "skip":
		p.elapsed = e.Elapsed
		p.result = map[string]string{"pass": "ok", "fail": "FAIL", "skip": "ok"}[e.Action]
		if e.Action == "fail" {
			// Tests still running when the package failed (a panic, the
			// -timeout) failed with it.
			var left []string
			for t := range p.running {
				left = append(left, t)
			}
			sort.Strings(left)
			for _, t := range left {
				s.testFailed(e.Package, t, p)
			}
			if e.FailedBuild == "" && p.failed == 0 {
				fmt.Fprintf(s.out, "%s", strings.Join(p.output, ""))
			}
		}
		if p.passed+p.failed+p.skipped == 0 && e.Action != "fail" {
			return // no test files, or no tests
		}
		fmt.Fprintf(s.out, "%-4s %s\t%.1fs\t%s\n", p.result, e.Package, p.elapsed, counts(p))
	}
}

func counts(p *pkgResult) string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", p.passed, p.failed, p.skipped)
}

// skipReason is the last line a skipped test printed besides the framing
// lines of go test (=== RUN, --- SKIP, …): the message given to t.Skip.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		return l
	}
	return "(no reason given)"
}

// report prints the table and the lists, and says whether all passed.
func (s *summary) report() bool {
	var names []string
	var total pkgResult
	incomplete := 0
	for name, p := range s.pkgs {
		if p.passed+p.failed+p.skipped == 0 && p.result != "FAIL" {
			continue
		}
		names = append(names, name)
		total.passed += p.passed
		total.failed += p.failed
		total.skipped += p.skipped
		if p.result == "" {
			incomplete++
		}
	}
	sort.Strings(names)
	fmt.Fprintln(s.out, "\n== test summary (tests and subtests per package)")
	w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "package\tpassed\tfailed\tskipped\tresult\t")
	for _, n := range names {
		p := s.pkgs[n]
		res := p.result
		if res == "" {
			res = "unfinished"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t\n", n, p.passed, p.failed, p.skipped, res)
	}
	fmt.Fprintf(w, "total (%d packages)\t%d\t%d\t%d\t\t\n", len(names), total.passed, total.failed, total.skipped)
	w.Flush()
	if len(s.skipped) > 0 {
		fmt.Fprintf(s.out, "\n== skipped (%d)\n", len(s.skipped))
		sort.Slice(s.skipped, func(i, j int) bool {
			a, b := s.skipped[i], s.skipped[j]
			return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
		})
		for _, k := range s.skipped {
			fmt.Fprintf(s.out, "  %s %s: %s\n", k.pkg, k.test, k.reason)
		}
	}
	failedPkgs := 0
	for _, n := range names {
		if s.pkgs[n].result == "FAIL" {
			failedPkgs++
		}
	}
	if len(s.failed) > 0 {
		fmt.Fprintf(s.out, "\n== failed (%d)\n", len(s.failed))
		for _, k := range s.failed {
			fmt.Fprintf(s.out, "  %s %s\n", k.pkg, k.test)
		}
	}
	for _, b := range s.buildFail {
		fmt.Fprintf(s.out, "  build failed: %s\n", b)
	}
	ok := s.events > 0 && total.failed == 0 && failedPkgs == 0 && len(s.buildFail) == 0 && incomplete == 0
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(s.out, "\n%s: %d passed, %d failed, %d skipped; %d of %d packages failed, %d builds failed\n",
		verdict, total.passed, total.failed, total.skipped, failedPkgs, len(names), len(s.buildFail))
	if s.events == 0 {
		fmt.Fprintln(s.out, "no test results were read")
	}
	return ok
}
