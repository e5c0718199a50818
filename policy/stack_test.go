package policy

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkDecideNewGoroutine decides each input of the decision
// benchmark's corpus on a new goroutine, as the gateway does (the go-sdk
// runs each request's handler on one): with Decide, which grows the
// stack first (growStack), and with decide, which does not, alternating
// input by input. It reports each one's median and p99 wall time and the
// ratio of the medians (Decide's over decide's).
func BenchmarkDecideNewGoroutine(b *testing.B) {
	e, inputs := warmEngine(b)
	ctx := context.Background()
	ways := []func(context.Context, Input) (Decision, error){e.Decide, e.decide}
	took := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
	done := make(chan time.Duration)
	b.ResetTimer()
	for i := range b.N {
		in := inputs[i%len(inputs)]
		for k := range 2 {
			w := (k + i) % 2
			go func() {
				t0 := time.Now()
				if _, err := ways[w](ctx, in); err != nil {
					b.Error(err)
				}
				done <- time.Since(t0)
			}()
			took[w] = append(took[w], <-done)
		}
	}
	b.StopTimer()
	var med [2]time.Duration
	for w, name := range []string{"grown", "ungrown"} {
		slices.Sort(took[w])
		med[w] = took[w][len(took[w])/2]
		b.ReportMetric(float64(med[w].Microseconds()), name+"-median-µs")
		b.ReportMetric(float64(took[w][len(took[w])*99/100].Microseconds()), name+"-p99-µs")
	}
	b.ReportMetric(float64(med[0])/float64(med[1]), "median-ratio")
}
