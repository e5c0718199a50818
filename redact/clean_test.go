package redact

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zricethezav/gitleaks/v8/detect"
)

// cleanText is terminal output with no secret in it, of the kinds a coding
// agent's terminal shows all day: build logs, ls -l, git log with SHAs,
// checksums, UUIDs, base64 of ordinary data, go test output, compiler
// errors, a python traceback. About size bytes.
func cleanText(seed uint64, size int) string {
	r := rand.New(rand.NewPCG(seed, 11))
	words := strings.Fields("the build cache module package install compile link test run error warning file line " +
		"function return value config server client request response handler session token key api access auth " +
		"secret password user admin deploy release version update fetch merge branch commit tag docker image layer")
	var b strings.Builder
	hexs := func(n int) string { return rnd(r, "0123456789abcdef", n) }
	for b.Len() < size {
		switch r.IntN(12) {
		case 0:
			fmt.Fprintf(&b, "go: downloading github.com/%s/%s v1.%d.%d\n", words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(30), r.IntN(9))
		case 1:
			fmt.Fprintf(&b, "-rw-r--r-- 1 dev dev %7d Nov %2d 10:%02d %s_%s.go\n", r.IntN(99999), 1+r.IntN(28), r.IntN(60), words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 2:
			sum := sha1.Sum([]byte(fmt.Sprint(r.Uint64())))
			fmt.Fprintf(&b, "commit %s\nAuthor: Dev Eloper <dev@example.com>\nDate:   Mon Nov 3 10:%02d:00 2026 +0000\n\n    %s %s the %s\n\n", hex.EncodeToString(sum[:]), r.IntN(60), words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 3:
			sum := sha256.Sum256([]byte(fmt.Sprint(r.Uint64())))
			fmt.Fprintf(&b, "%s  dist/%s-%d.tar.gz\n", hex.EncodeToString(sum[:]), words[r.IntN(len(words))], r.IntN(100))
		case 4:
			fmt.Fprintf(&b, "request id %s-%s-4%s-a%s-%s completed in %dms\n", hexs(8), hexs(4), hexs(3), hexs(3), hexs(12), r.IntN(900))
		case 5:
			line := strings.Join([]string{words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))]}, " ")
			fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString([]byte(line)))
		case 6:
			fmt.Fprintf(&b, "=== RUN   Test%s%s\n--- PASS: Test%s%s (0.%02ds)\n", strings.Title(words[r.IntN(len(words))]), strings.Title(words[r.IntN(len(words))]), "X", "Y", r.IntN(99))
		case 7:
			fmt.Fprintf(&b, "./%s/%s.go:%d:%d: undefined: %s%s\n", words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(900), r.IntN(80), words[r.IntN(len(words))], strings.Title(words[r.IntN(len(words))]))
		case 8:
			fmt.Fprintf(&b, "  File \"/app/%s.py\", line %d, in %s\n    return self.%s(%s)\nKeyError: '%s'\n", words[r.IntN(len(words))], r.IntN(500), words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 9:
			fmt.Fprintf(&b, "\x1b[32m✓\x1b[0m %s %s \x1b[2m(%dms)\x1b[0m\n", words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(300))
		case 10:
			fmt.Fprintf(&b, "npm WARN deprecated %s@%d.%d.%d: use %s instead\n", words[r.IntN(len(words))], r.IntN(9), r.IntN(9), r.IntN(9), words[r.IntN(len(words))])
		case 11:
			// Keys are what loggers use; a key named password or
			// secret with a value is a secret, and is caught.
			keys := []string{"status", "duration", "path", "method", "bytes", "retries", "module", "user", "host"}
			fmt.Fprintf(&b, "[%s] INFO %s: %s %s=%d %s=%s\n", time.Date(2026, 11, 3, 10, r.IntN(60), 0, 0, time.UTC).Format(time.RFC3339), keys[r.IntN(len(keys))], words[r.IntN(len(words))], keys[r.IntN(len(keys))], r.IntN(1000), keys[r.IntN(len(keys))], words[r.IntN(len(words))])
		}
	}
	return b.String()
}

// TestCleanCorpusFalsePositives reports the share of clean lines that get
// a placeholder, and bounds it.
func TestCleanCorpusFalsePositives(t *testing.T) {
	e := testEngine(t)
	text := cleanText(1, 2<<20)
	out := e.Redact(text)
	lines := strings.Count(text, "\n")
	hit := 0
	var examples []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "[REDACTED:") {
			hit++
			if len(examples) < 5 {
				examples = append(examples, l)
			}
		}
	}
	rate := float64(hit) / float64(lines)
	t.Logf("false positives: %d of %d lines (%.4f%%); e.g. %q", hit, lines, 100*rate, examples)
	if rate > 0.001 {
		t.Fatalf("false-positive rate %.4f%% is over 0.1%%: %q", 100*rate, examples)
	}
}

// FuzzStream: for any chunking of text holding a planted secret, and any
// pauses between the writes (on the stream's clock: a pause costs the
// fuzzer nothing), no 8 bytes of the secret in a row come out; and text
// without secrets comes out unchanged.
func FuzzStream(f *testing.F) {
	e, err := New(Options{Key: []byte("fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	c := corpus(5)
	f.Add(uint8(0), uint8(0), []byte{3, 7, 1}, []byte{0}, []byte("x\x1b[1m"))
	f.Add(uint8(3), uint8(2), []byte{1, 1, 1, 1}, []byte{1}, []byte("\x1b]0;t\x07"))
	// Slow and split writes: a secret in two writes 150 ms apart, and one
	// byte at a time 60 ms apart.
	for which := range len(c) {
		f.Add(uint8(which), uint8(0), []byte{20}, []byte{3}, []byte("slow"))
		f.Add(uint8(which), uint8(which%len(wrappers)), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, []byte{2}, []byte(""))
	}
	steps := []time.Duration{0, 5 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond, 10 * time.Minute}
	f.Fuzz(func(t *testing.T, which, wrap uint8, cuts, pauses, noise []byte) {
		p := c[int(which)%len(c)]
		text := wrappers[int(wrap)%len(wrappers)].f(p.text, p.secrets)
		// Clean noise around it: printable bytes only, so it cannot
		// open an escape sequence that swallows the secret.
		var pre strings.Builder
		for _, b := range noise {
			if b >= 0x20 && b < 0x7f {
				pre.WriteByte(b)
			}
		}
		text = pre.String() + "\n" + text
		var chunks []chunk
		rest := text
		for i, n := range cuts {
			k := int(n) % (len(rest) + 1)
			var pause time.Duration
			if len(pauses) > 0 {
				pause = steps[int(pauses[i%len(pauses)])%len(steps)]
			}
			chunks = append(chunks, chunk{rest[:k], pause})
			rest = rest[k:]
		}
		chunks = append(chunks, chunk{rest, 0})
		// Repairs name bytes that went out, each once.
		var reported []Repair
		var out string
		repair := func(r Repair) {
			if r.End <= r.Start || r.End > int64(len(out)) {
				t.Fatalf("repair %+v of %d bytes emitted", r, len(out))
			}
			for _, p := range reported {
				if r.Start < p.End && p.Start < r.End {
					t.Fatalf("repair %+v overlaps %+v", r, p)
				}
			}
			reported = append(reported, r)
		}
		var k sink
		clock := &fakeClock{}
		s := e.NewStreamWith(func(p []byte) { k.emit(p); out = k.String() }, StreamOptions{Clock: clock, Repair: repair})
		for _, c := range chunks {
			s.Write([]byte(c.text))
			clock.Advance(c.pause)
		}
		s.Close()
		if w := leaks(k.String(), p.secrets); w != "" {
			t.Fatalf("%q came out, with chunks %+v", w, chunks)
		}
		clean := pre.String() + "\nno secret here, just text\n"
		if out := streamed(e, clean[:len(clean)/2], clean[len(clean)/2:]); out != e.Redact(clean) {
			t.Fatalf("clean text changed: %q", out)
		}
	})
}

// benchText is what the benchmarks read: 8 MiB of clean terminal output
// with a planted secret every 64 KiB or so.
func benchText() string { return benchTextSize(2, 8<<20) }

// benchTextSize is size bytes of clean terminal output with a planted
// secret every 64 KiB or so.
func benchTextSize(seed uint64, size int) string {
	text := cleanText(seed, size)
	var b strings.Builder
	c := corpus(6)
	for i := 0; i < len(text); i += 64 << 10 {
		end := min(i+64<<10, len(text))
		if j := strings.LastIndexByte(text[i:end], '\n'); j >= 0 && end < len(text) {
			end = i + j + 1
		}
		b.WriteString(text[i:end])
		b.WriteString(c[(i>>16)%len(c)].text)
		i = end - 64<<10
	}
	return b.String()
}

func BenchmarkRedactOneShot(b *testing.B) {
	e := testEngine(b)
	text := benchText()
	b.SetBytes(int64(len(text)))
	defer reportCPU(b, len(text))()
	for range b.N {
		e.Redact(text)
	}
}

// BenchmarkRedactStream: reads of 4 KiB, 16 KiB (a session's) and 256
// KiB (termgate redact's).
func BenchmarkRedactStream(b *testing.B) {
	text := []byte(benchText())
	for _, size := range []int{4 << 10, 16 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("read=%dKiB", size>>10), func(b *testing.B) {
			e := testEngine(b)
			b.SetBytes(int64(len(text)))
			defer reportCPU(b, len(text))()
			for range b.N {
				s := e.NewStream(time.Hour, func([]byte) {})
				for i := 0; i < len(text); i += size {
					s.Write(text[i:min(i+size, len(text))])
				}
				s.Close()
			}
		})
	}
}

// BenchmarkVersusGitleaks reads the same text with this engine and with
// gitleaks' DetectString, side by side in one run, and reports both
// throughputs and their ratio.
func BenchmarkVersusGitleaks(b *testing.B) {
	e := testEngine(b)
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	text := benchText()
	mb := float64(len(text)) / 1e6
	var ours, theirs time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		e.Redact(text)
		ours += time.Since(t0)
		t0 = time.Now()
		d.DetectString(text)
		theirs += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(mb*n/ours.Seconds(), "termgate-MB/s")
	b.ReportMetric(mb*n/theirs.Seconds(), "gitleaks-MB/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x-faster")
}
