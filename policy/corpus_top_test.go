package policy

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"mvdan.cc/sh/v3/syntax"
)

var corpusTop = flag.Int("corpus-top", 0, "TestCorpusTop: print the N corpus inputs that cost the most CPU time a decision")

// TestCorpusTop times each input of the decision benchmark's corpus on
// its own (run with -corpus-top 20): the CPU time of a decision, split
// into the analysis (Input.prepare: shell parsing, the code parsers, the
// SQL tokenizer), building the document (derive and value) and OPA's
// evaluation, and the bytes and allocations of a whole decision. Each
// phase's figure is the median of its repetitions, on a thread locked to
// the goroutine. It decides nothing about the policy; without the flag it
// only checks that the phases it times make the engine's decision.
func TestCorpusTop(t *testing.T) {
	e := defaultEngine(t)
	ctx := context.Background()
	inputs := benchInputs(t)
	n, reps := *corpusTop, 31
	if n == 0 {
		inputs, reps = inputs[:min(len(inputs), 40)], 1
	}
	type row struct {
		text                 string
		prep, doc, eval, all time.Duration
		bytes, allocs        uint64
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rows := make([]row, 0, len(inputs))
	b := e.Bundle()
	for _, in0 := range inputs {
		var prep, doc, eval []time.Duration
		for range reps {
			in := in0
			c0 := threadCPU(t)
			parsed := in.Shell == nil
			p := e.parsers.Get().(*syntax.Parser)
			in.prepare(p, b.shell)
			e.parsers.Put(p)
			c1 := threadCPU(t)
			b.derive(&in, parsed)
			v := in.value()
			c2 := threadCPU(t)
			rs, err := b.query.Eval(ctx, rego.EvalParsedInput(v), rego.EvalMetrics(metrics.NoOp()))
			c3 := threadCPU(t)
			if err != nil || len(rs) == 0 {
				t.Fatalf("%q: %v %v", in0.Text, err, rs)
			}
			got, err := toDecision(rs[0].Expressions[0].Value)
			want, err2 := e.Decide(ctx, in0)
			if err != nil || err2 != nil || got.Action != want.Action || got.Rule != want.Rule {
				t.Fatalf("%q: phases decide %+v (%v), the engine %+v (%v)", in0.Text, got, err, want, err2)
			}
			prep, doc, eval = append(prep, c1-c0), append(doc, c2-c1), append(eval, c3-c2)
		}
		if n == 0 {
			continue
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range reps {
			if _, err := e.Decide(ctx, in0); err != nil {
				t.Logf("%q: %v", in0.Text, err) // the engine's time limit, on a loaded machine
			}
		}
		runtime.ReadMemStats(&m1)
		r := row{text: in0.Text, prep: med(prep), doc: med(doc), eval: med(eval),
			bytes: (m1.TotalAlloc - m0.TotalAlloc) / uint64(reps), allocs: (m1.Mallocs - m0.Mallocs) / uint64(reps)}
		if r.text == "" && in0.Start != nil {
			r.text = "start: " + strings.Join(in0.Start.Argv, " ")
		}
		if r.text == "" && in0.Exec != nil {
			r.text = "exec: " + strings.Join(in0.Exec.Argv, " ")
		}
		r.all = r.prep + r.doc + r.eval
		rows = append(rows, r)
	}
	if n == 0 {
		return
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.all - a.all) })
	var total time.Duration
	over := 0
	for _, r := range rows {
		total += r.all
		if r.all > 300*time.Microsecond {
			over++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d inputs, mean %v CPU a decision, %d over 300 µs\n", len(rows), total/time.Duration(len(rows)), over)
	fmt.Fprintf(&sb, "%8s %6s %6s %6s %8s %6s  %s\n", "cpu-µs", "parse", "doc", "opa", "bytes", "allocs", "input")
	for _, r := range rows[:min(n, len(rows))] {
		pct := func(d time.Duration) string { return fmt.Sprintf("%d%%", 100*d/max(r.all, 1)) }
		text := strings.ReplaceAll(r.text, "\n", "⏎")
		if len(text) > 90 {
			text = text[:90] + "…"
		}
		fmt.Fprintf(&sb, "%8d %6s %6s %6s %8d %6d  %s\n", r.all.Microseconds(), pct(r.prep), pct(r.doc), pct(r.eval), r.bytes, r.allocs, text)
	}
	fmt.Print(sb.String())
}

func med(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// benchInputs is BenchmarkDecideCorpus's inputs: the corpus, then the code
// corpus typed into its programs.
func benchInputs(t testing.TB) []Input {
	cases, code := loadCorpus(t), loadCodeCorpus(t)
	inputs := make([]Input, 0, len(cases)+len(code))
	for _, c := range cases {
		inputs = append(inputs, c.Input)
	}
	for _, c := range code {
		inputs = append(inputs, Input{Action: "input", Program: c.program, Text: c.text})
	}
	return inputs
}

var (
	sideA = flag.String("side-a", "", "TestBundlesSideBySide: the bundle directory to compare (the one before)")
	sideB = flag.String("side-b", "", "TestBundlesSideBySide: the bundle directory to compare it with (the one after)")
)

// TestBundlesSideBySide compares two bundles' decisions over the decision
// benchmark's corpus in one process (run with -side-a DIR -side-b DIR):
// it reports every input they decide differently, then the CPU time of a
// whole decision (analysis, document, evaluation) with each, the two
// alternating input by input over twelve passes, so a machine's drift
// and its noise fall on both alike; the median, p90, p99 and mean, and
// the after/before ratios of the mean and the p99. Both run under this
// tree's engine, so it measures a bundle's rules, not the engine's own
// changes. Without the flags it is skipped.
func TestBundlesSideBySide(t *testing.T) {
	if *sideA == "" || *sideB == "" {
		t.Skip("needs -side-a and -side-b")
	}
	ctx := context.Background()
	ea, err := New(ctx, Source{Dir: *sideA})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := New(ctx, Source{Dir: *sideB})
	if err != nil {
		t.Fatal(err)
	}
	inputs := benchInputs(t)
	for _, in := range inputs {
		da, errA := ea.Decide(ctx, in)
		db, errB := eb.Decide(ctx, in)
		if errA != nil || errB != nil || da.Action != db.Action || da.Rule != db.Rule || da.Reason != db.Reason {
			t.Logf("%q: %s %s (%v) → %s %s (%v)", in.Text, da.Action, da.Rule, errA, db.Action, db.Rule, errB)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b []time.Duration
	for pass := range 12 {
		for i, in := range inputs {
			order := []*Engine{ea, eb}
			if (i+pass)%2 == 1 {
				order = []*Engine{eb, ea}
			}
			for _, e := range order {
				c0 := threadCPU(t)
				if _, err := e.Decide(ctx, in); err != nil {
					t.Logf("%q: %v", in.Text, err) // the engine's time limit, on a loaded machine
				}
				if d := threadCPU(t) - c0; e == ea {
					a = append(a, d)
				} else {
					b = append(b, d)
				}
			}
		}
	}
	stats := func(ds []time.Duration) (med, p90, p99, mean time.Duration) {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)*99/100], sum / time.Duration(len(ds))
	}
	am, a90, a99, amean := stats(a)
	bm, b90, b99, bmean := stats(b)
	fmt.Printf("CPU per decision, %d decisions each\n", len(a))
	fmt.Printf("  before: median %v, p90 %v, p99 %v, mean %v\n", am, a90, a99, amean)
	fmt.Printf("  after:  median %v, p90 %v, p99 %v, mean %v\n", bm, b90, b99, bmean)
	fmt.Printf("  after/before: mean %.3f, p99 %.3f\n", float64(bmean)/float64(amean), float64(b99)/float64(a99))
}
