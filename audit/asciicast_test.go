package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/redact"
)

// TestRecordingRepair: output already recorded (in the file or still
// buffered) is masked in place, escape sequences kept, and the file stays
// an asciicast whose events decode.
func TestRecordingRepair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.cast")
	r, err := NewRecording(path, Header{Width: 80, Height: 24})
	if err != nil {
		t.Fatal(err)
	}
	r.Output([]byte("key: \x1b[1mab"))
	r.Input([]byte("typed"))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	r.Output([]byte("cd\"<é")) // a quote and < are escaped in JSON; é is two bytes
	r.Output([]byte(" after\r\n"))
	start := int64(len("key: "))
	end := int64(len("key: \x1b[1mabcd\"<é"))
	r.Repair(start, end)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	var out, in strings.Builder
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		switch ev[1] {
		case "o":
			out.WriteString(ev[2].(string))
		case "i":
			in.WriteString(ev[2].(string))
		}
	}
	if got, want := out.String(), "key: \x1b[1m"+strings.Repeat("*", 8)+" after\r\n"; got != want {
		t.Fatalf("output after the repair: %q, want %q", got, want)
	}
	if in.String() != "typed" {
		t.Fatalf("input: %q", in.String())
	}
}

// FuzzRecordingRepair: whatever output a recording is given, in whatever
// chunks, and whatever span it is told to repair, the file stays an
// asciicast whose events decode, and the output it replays is what was
// given with some bytes masked, none moved.
func FuzzRecordingRepair(f *testing.F) {
	f.Add("key: \x1b[1mabcd\"<é after\r\n", uint8(7), int64(5), int64(20))
	f.Add("\x1b]0;t\x07x\x1b[31mred\x1b[0m\r\n日本", uint8(3), int64(0), int64(99))
	// A repair ending inside a character masks all of it.
	f.Add("?00000000000000&0?000000000000000?0ٱ0", uint8(64), int64(14), int64(36))
	f.Fuzz(func(t *testing.T, out string, chunk uint8, start, end int64) {
		out = strings.ToValidUTF8(out, "?")
		path := filepath.Join(t.TempDir(), "f.cast")
		r, err := NewRecording(path, Header{Width: 80, Height: 24})
		if err != nil {
			t.Fatal(err)
		}
		n := max(int(chunk), 1)
		for i := 0; i < len(out); i += n {
			r.Output([]byte(out[i:min(i+n, len(out))]))
			if i%3 == 0 {
				r.Input([]byte("k"))
			}
			if i%5 == 0 {
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.Repair(start, end)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if i == 0 {
				continue
			}
			var ev []any
			if err := json.Unmarshal([]byte(line), &ev); err != nil || len(ev) != 3 {
				t.Fatalf("event %q: %v", line, err)
			}
			if ev[1] == "o" {
				got.WriteString(ev[2].(string))
			}
		}
		g := got.String()
		// A character is masked whole: the span widens to the
		// characters its ends are in.
		lo, hi := min(max(start, 0), int64(len(out))), min(end, int64(len(out)))
		if lo < hi {
			a, b := redact.CharSpan(func(i int) byte { return out[i] }, len(out), int(lo), int(hi))
			start, end = int64(a), int64(b)
		}
		if len(g) != len(out) {
			t.Fatalf("replayed %d bytes, %d given:\n%q\n%q", len(g), len(out), out, g)
		}
		for i := range len(out) {
			if g[i] != out[i] && (g[i] != '*' || int64(i) < start || int64(i) >= end) {
				t.Fatalf("byte %d changed outside the repair:\n%q\n%q", i, out, g)
			}
		}
	})
}
