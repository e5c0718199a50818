package redact

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zricethezav/gitleaks/v8/detect"
)

// BenchmarkRedactProcess times `termgate redact < 64 MB of terminal text`
// as a whole process (start-up, rule compilation, reading, writing), for
// this tree's binary and for the one built from TERMGATE_BENCH_BASE (a git
// revision, default main), run alternately TERMGATE_BENCH_ROUNDS times
// (default 5); and gitleaks' own detector on a part of the same text, in
// this process. The figures are medians: MB/s of CPU time (user + system:
// per core) and of wall time.
//
//	go test ./redact -run '^$' -bench RedactProcess -benchtime 1x
func BenchmarkRedactProcess(b *testing.B) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("the go command is not available")
	}
	dir := b.TempDir()
	bins := map[string]string{"new": filepath.Join(dir, "termgate-new")}
	if out, err := exec.Command(goBin, "build", "-o", bins["new"], "../cmd/termgate").CombinedOutput(); err != nil {
		b.Fatalf("building this tree: %v: %s", err, out)
	}
	base := os.Getenv("TERMGATE_BENCH_BASE")
	if base == "" {
		base = "main"
	}
	if bin, err := buildRevision(goBin, base, dir); err != nil {
		b.Logf("no %s binary to compare with: %v", base, err)
	} else {
		bins["base"] = bin
	}
	input := filepath.Join(dir, "terminal.txt")
	text := benchTextSize(8, 64<<20)
	if err := os.WriteFile(input, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("TERMGATE_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	mb := float64(len(text)) / 1e6
	cpu, wall := map[string][]float64{}, map[string][]float64{}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range bins {
			if !yield(n) {
				return
			}
		}
	})
	b.ResetTimer()
	for i := range rounds * b.N {
		for k := range names {
			name := names[(i+k)%len(names)] // alternate who goes first
			c, w, err := runRedact(bins[name], input)
			if err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			cpu[name] = append(cpu[name], mb/c.Seconds())
			wall[name] = append(wall[name], mb/w.Seconds())
		}
	}
	b.StopTimer()
	for _, n := range names {
		b.ReportMetric(median(cpu[n]), n+"-cpu-MB/s")
		b.ReportMetric(median(wall[n]), n+"-wall-MB/s")
	}
	if len(cpu["base"]) > 0 {
		b.ReportMetric(median(cpu["new"])/median(cpu["base"]), "x-base-cpu")
	}
	// gitleaks' detector, in this process, on a 64th of the text (it is
	// three orders of magnitude slower).
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	sample := text[:len(text)/64]
	t0 := time.Now()
	d.DetectString(sample)
	b.ReportMetric(float64(len(sample))/1e6/time.Since(t0).Seconds(), "gitleaks-MB/s")
	b.ReportMetric(0, "ns/op")
}

// runRedact runs `bin redact < input > /dev/null` and returns its CPU and
// wall time.
func runRedact(bin, input string) (cpu, wall time.Duration, err error) {
	in, err := os.Open(input)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer null.Close()
	cmd := exec.Command(bin, "redact")
	cmd.Stdin, cmd.Stdout = in, null
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, err
	}
	wall = time.Since(t0)
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), wall, nil
}

// buildRevision builds cmd/termgate as it is at a git revision of this
// repository.
func buildRevision(goBin, rev, dir string) (string, error) {
	src := filepath.Join(dir, "src-"+strings.ReplaceAll(rev, "/", "_"))
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", err
	}
	archive, err := exec.Command("git", "-C", strings.TrimSpace(string(top)), "archive", "--format=tar", rev).Output()
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		p := filepath.Join(src, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
					err = os.WriteFile(p, b, 0o644)
				}
			}
		}
		if err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, "termgate-base")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/termgate")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
