package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
