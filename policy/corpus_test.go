package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// corpusCase is one line of testdata/corpus/*.jsonl: an input document
// (what `termgate policy eval --jsonl` reads) and what the default bundle
// must decide: deny or confirm for a dangerous input, allow for a benign
// one. class groups the cases for the report; source says where the case
// comes from (this repository, or a peer's own test suite: then peer is
// what that suite expects of it).
type corpusCase struct {
	Input
	Expect string `json:"expect"`
	Class  string `json:"class"`
	Source string `json:"source"`
	Peer   string `json:"peer"`
	file   string
	line   int
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/corpus/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []corpusCase
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			var c corpusCase
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s:%d: %v", p, n, err)
			}
			switch c.Expect {
			case "deny", "confirm", "allow":
			default:
				t.Fatalf("%s:%d: expect %q", p, n, c.Expect)
			}
			if c.Class == "" || c.Source == "" {
				t.Fatalf("%s:%d: a case needs a class and a source", p, n)
			}
			c.file, c.line = filepath.Base(p), n
			out = append(out, c)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// classStats counts one class's cases.
type classStats struct {
	dangerous, stopped, benign, falseStops, exact int
}

var corpusTable = flag.Bool("corpus.table", false, "print the per-class corpus table (markdown)")

// TestCorpusClasses runs the whole corpus through one engine and holds
// the default bundle to it, class by class: at least 95 % of the
// dangerous inputs stopped (denied or sent to a human), at most 2 % of the
// benign ones. Every miss is listed.
func TestCorpusClasses(t *testing.T) {
	e := defaultEngine(t)
	cases := loadCorpus(t)
	stats := map[string]*classStats{}
	var misses []string
	for _, c := range cases {
		d, err := e.Decide(context.Background(), c.Input)
		if err != nil {
			t.Errorf("%s:%d %q: %v", c.file, c.line, c.Text, err)
			continue
		}
		s := stats[c.Class]
		if s == nil {
			s = &classStats{}
			stats[c.Class] = s
		}
		stopped := d.Action != "allow"
		if d.Action == c.Expect {
			s.exact++
		}
		if c.Expect == "allow" {
			s.benign++
			if stopped {
				s.falseStops++
				misses = append(misses, fmt.Sprintf("false stop  %s:%d [%s] %q: %s %s", c.file, c.line, c.Class, c.Text, d.Action, d.Rule))
			}
			continue
		}
		s.dangerous++
		if stopped {
			s.stopped++
		} else {
			misses = append(misses, fmt.Sprintf("missed      %s:%d [%s] %q", c.file, c.line, c.Class, c.Text))
		}
	}
	for _, m := range misses {
		t.Log(m)
	}
	classes := make([]string, 0, len(stats))
	for k := range stats {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	var table strings.Builder
	table.WriteString("| class | dangerous stopped | benign stopped |\n|---|---|---|\n")
	var td, ts, tb, tf int
	for _, k := range classes {
		s := stats[k]
		fmt.Fprintf(&table, "| %s | %s | %s |\n", k, ratio(s.stopped, s.dangerous), ratio(s.falseStops, s.benign))
		td, ts, tb, tf = td+s.dangerous, ts+s.stopped, tb+s.benign, tf+s.falseStops
		if s.dangerous > 0 && float64(s.stopped) < 0.95*float64(s.dangerous) {
			t.Errorf("class %s: %d of %d dangerous inputs stopped, want at least 95 %%", k, s.stopped, s.dangerous)
		}
		if float64(s.falseStops) > 0.02*float64(s.benign) {
			t.Errorf("class %s: %d of %d benign inputs stopped, want at most 2 %%", k, s.falseStops, s.benign)
		}
	}
	fmt.Fprintf(&table, "| all | %s | %s |\n", ratio(ts, td), ratio(tf, tb))
	if tb < td {
		t.Errorf("the corpus has %d benign inputs for %d dangerous ones: at least as many benign", tb, td)
	}
	if *corpusTable {
		fmt.Print(table.String())
	}
	t.Logf("corpus: %d cases\n%s", len(cases), table.String())
}

func ratio(a, b int) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%d / %d (%.1f %%)", a, b, 100*float64(a)/float64(b))
}

// BenchmarkDecideCorpus measures one decision with the default bundle over
// the whole corpus (testdata/corpus, a thousand inputs of every class, and
// the code corpus's REPL code, one-liners and SQL), shell, code and SQL
// analysis included, after one pass over it; it reports the median and
// the p99 of wall time, and of the CPU time the decision took on its
// thread (cpu-median-µs, cpu-p99-µs: the goroutine is locked to one
// thread, whose clock leaves out the time a decision waited for a core
// while other work loads the machine; a garbage collection's assists run
// on it and count, its background marking does not), and the collections
// the run made per thousand decisions (gc-per-1k: the collector sets the
// tail, and runs as often as this test's small heap makes it; the
// server's own heap is measured by cmd/termgate's
// BenchmarkGatewayDecideCorpus).
func BenchmarkDecideCorpus(b *testing.B) {
	e, inputs := warmEngine(b)
	ctx := context.Background()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gcs)
	gc0 := gcs[0].Value.Uint64()
	b.ResetTimer()
	for i := range b.N {
		t0, c0 := time.Now(), threadCPU(b)
		if _, err := e.Decide(ctx, inputs[i%len(inputs)]); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, threadCPU(b)-c0)
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	metrics.Read(gcs)
	b.ReportMetric(float64(gcs[0].Value.Uint64()-gc0)*1000/float64(b.N), "gc-per-1k")
	for _, m := range []struct {
		ds   []time.Duration
		name string
	}{{d, ""}, {cpu, "cpu-"}} {
		slices.Sort(m.ds)
		b.ReportMetric(float64(m.ds[len(m.ds)/2].Microseconds()), m.name+"median-µs")
		b.ReportMetric(float64(m.ds[len(m.ds)*99/100].Microseconds()), m.name+"p99-µs")
	}
}

// warmEngine is the default engine and the decision benchmark's inputs,
// each decided once, so that compiling each regex and glob on first use
// (once per process) is not measured.
func warmEngine(b *testing.B) (*Engine, []Input) {
	e := defaultEngine(b)
	inputs := benchInputs(b)
	for _, in := range inputs {
		if _, err := e.Decide(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	return e, inputs
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
