package session

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// closedRetained starts n bash sessions that each print lines of output,
// closes them, and returns the heap they leave behind, per session.
func closedRetained(t testing.TB, n, lines int) float64 {
	m := NewManager(Limits{CloseGrace: 50 * time.Millisecond, MaxExited: n}, nil)
	defer m.Shutdown(context.Background())
	before := heapInUse()
	for range n {
		s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnvB(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(context.Background(), "seq 1 "+itoa(lines), true, WaitOpts{Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(context.Background(), s.ID()); err != nil {
			t.Fatal(err)
		}
	}
	after := heapInUse()
	return (float64(after) - float64(before)) / float64(n)
}

func testEnvB(t testing.TB) []string {
	return append(os.Environ(), "HOME="+t.TempDir(), "TERM=xterm-256color")
}

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkClosedSessionRetained reports the heap a closed session leaves
// behind (kept readable until MaxExited newer ones push it out), after it
// printed 20,000 lines.
func BenchmarkClosedSessionRetained(b *testing.B) {
	for range b.N {
		b.ReportMetric(closedRetained(b, 8, 20000), "B/closed-session")
	}
}

// TestClosedSessionsLetGoOfTheirScreens: a closed session keeps what it
// shows, bounded, not its emulator and history (about 1.6 MB after 20,000
// lines before they were let go).
func TestClosedSessionsLetGoOfTheirScreens(t *testing.T) {
	if per := closedRetained(t, 8, 20000); per > 100<<10 {
		t.Fatalf("a closed session keeps %.0f bytes", per)
	}
}
