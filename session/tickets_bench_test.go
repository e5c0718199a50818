package session

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkTicketCheck measures what the shell's ticket check costs, side
// by side in one run: the same input sent alternately to a bash with the
// check and one without, each iteration once to each; the medians and
// their ratio are reported. loop is a shell loop of 1,000 commands (the
// check runs once per Enter, never per command); enter is one short
// command, where the check's work at each Enter (the ticket written by
// the gateway, read by bash, the prompt's line drawn again) shows. For
// comparison, trap is the same bash without the check but with the
// cheapest DEBUG trap a check per command could be (one test, extdebug
// on), the design the check at the accept replaced.
func BenchmarkTicketCheck(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"loop", "for i in $(seq 1000); do :; done"},
		{"enter", "true"},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := NewManager(Limits{}, nil)
			defer m.Shutdown(context.Background())
			start := func(without bool) *Session {
				s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(b), Dir: b.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY, withoutTickets: without})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 10 * time.Second}); err != nil {
					b.Fatal(err)
				}
				return s
			}
			with, without, trap := start(false), start(true), start(true)
			if with.tickets == nil || without.tickets != nil {
				b.Fatal("the sessions are not one with and one without the check")
			}
			if r, err := trap.Send(context.Background(), "__tgb=1; shopt -s extdebug; trap '[[ -n $__tgb ]]' DEBUG", true, WaitOpts{Timeout: 10 * time.Second}); err != nil || r.Completion != CompletionCommandFinished {
				b.Fatalf("%+v, %v", r, err)
			}
			run := func(s *Session) time.Duration {
				t0 := time.Now()
				r, err := s.Send(context.Background(), c.line, true, WaitOpts{Timeout: 30 * time.Second})
				if err != nil || r.Completion != CompletionCommandFinished {
					b.Fatalf("%+v, %v", r, err)
				}
				return time.Since(t0)
			}
			var dw, dn, dt []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dw = append(dw, run(with))
				dn = append(dn, run(without))
				dt = append(dt, run(trap))
			}
			b.StopTimer()
			median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
			mw, mn, mt := median(dw), median(dn), median(dt)
			b.ReportMetric(float64(mw.Microseconds()), "µs/check")
			b.ReportMetric(float64(mn.Microseconds()), "µs/nocheck")
			b.ReportMetric(float64(mt.Microseconds()), "µs/trap")
			b.ReportMetric(float64(mw)/float64(mn), "check/nocheck")
			b.ReportMetric(float64(mt)/float64(mn), "trap/nocheck")
		})
	}
}
