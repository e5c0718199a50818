package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// gitleaks' own true- and false-positive samples, as its rule generators
// (cmd/generate/config/rules) build them: each rule function makes its
// samples, often with random secrets, and hands them to utils.Validate.
// The test copies those generators out of the module cache into a
// temporary module where Validate records instead of checking, runs it,
// and reads the samples as JSON. Nothing of gitleaks' code is kept in this
// repository; the JSON is cached in the user's cache directory.

// glSample is one rule's samples.
type glSample struct {
	Rule  string   `json:"rule"`
	Paths bool     `json:"paths,omitempty"` // validated with file paths: the rule needs one
	TPs   []glCase `json:"tps"`
	FPs   []glCase `json:"fps"`
}

// glCase is one sample and the secrets gitleaks finds in it with the
// rule's own detector; a false positive of one rule that another of
// gitleaks' rules finds is Flagged.
type glCase struct {
	Text    string   `json:"text"`
	Secrets []string `json:"secrets,omitempty"`
	Flagged bool     `json:"flagged,omitempty"`
}

const glRecorder = `package utils

import (
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

type Case struct {
	Text    string   ` + "`json:\"text\"`" + `
	Secrets []string ` + "`json:\"secrets,omitempty\"`" + `
	Flagged bool     ` + "`json:\"flagged,omitempty\"`" + `
}

type Sample struct {
	Rule  string ` + "`json:\"rule\"`" + `
	Paths bool   ` + "`json:\"paths,omitempty\"`" + `
	TPs   []Case ` + "`json:\"tps\"`" + `
	FPs   []Case ` + "`json:\"fps\"`" + `
}

var Recorded []Sample

var full *detect.Detector

func record(r *config.Rule, paths bool, tps, fps []string) {
	d := createSingleRuleDetector(r)
	s := Sample{Rule: r.RuleID, Paths: paths}
	for _, tp := range tps {
		c := Case{Text: tp}
		if !paths {
			for _, f := range d.DetectString(tp) {
				c.Secrets = append(c.Secrets, f.Secret)
			}
		}
		s.TPs = append(s.TPs, c)
	}
	if full == nil {
		var err error
		if full, err = detect.NewDetectorDefaultConfig(); err != nil {
			panic(err)
		}
	}
	for _, fp := range fps {
		s.FPs = append(s.FPs, Case{Text: fp, Flagged: len(full.DetectString(fp)) > 0})
	}
	Recorded = append(Recorded, s)
}

func Validate(rule config.Rule, truePositives []string, falsePositives []string) *config.Rule {
	r := &rule
	record(r, false, truePositives, falsePositives)
	return r
}

func ValidateWithPaths(rule config.Rule, truePositives map[string]string, falsePositives map[string]string) *config.Rule {
	r := &rule
	var tps, fps []string
	for _, v := range truePositives {
		tps = append(tps, v)
	}
	for _, v := range falsePositives {
		fps = append(fps, v)
	}
	record(r, true, tps, fps)
	return r
}
`

// gitleaksSamples returns gitleaks' rule samples, or skips the test when
// the module's source or the go command is not at hand.
func gitleaksSamples(t testing.TB) []glSample {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("gitleaks samples: the go command is not available")
	}
	out, err := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}|{{.Version}}", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		t.Skipf("gitleaks samples: go list of the gitleaks module failed: %v", err)
	}
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	gen := filepath.Join(dir, "cmd", "generate", "config")
	if _, err := os.Stat(filepath.Join(gen, "rules")); dir == "" || err != nil {
		t.Skipf("gitleaks samples: the module's source is not in the module cache (%q)", dir)
	}
	// The cache key: the version and the generators' own text.
	h := sha256.New()
	h.Write([]byte(glRecorder))
	_ = filepath.WalkDir(gen, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = t.TempDir()
	}
	cache := filepath.Join(cacheDir, "termgate-test", "gitleaks-samples-"+version+"-"+hex.EncodeToString(h.Sum(nil)[:8])+".json")
	if b, err := os.ReadFile(cache); err == nil {
		var s []glSample
		if json.Unmarshal(b, &s) == nil && len(s) > 0 {
			return s
		}
	}
	b, err := generateGitleaksSamples(t, goBin, dir)
	if err != nil {
		t.Skipf("gitleaks samples: could not build gitleaks' rule generators: %v", err)
	}
	var s []glSample
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("gitleaks samples: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err == nil {
		_ = os.WriteFile(cache, b, 0o600)
	}
	return s
}

var glRuleCall = regexp.MustCompile(`(?m)^\s*rules\.(\w+)\(\),`)

func generateGitleaksSamples(t testing.TB, goBin, modDir string) ([]byte, error) {
	tmp := t.TempDir()
	gen := filepath.Join(modDir, "cmd", "generate", "config")
	// The module: ours, renamed, so that every dependency resolves to the
	// versions already in use; gitleaks' go.sum adds what its generators
	// need besides (a regex-driven secret generator).
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		return nil, err
	}
	gomod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(gomod, []byte("module samples"))
	glMod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`github.com/lucasjones/reggen (\S+)`).FindSubmatch(glMod)
	if m == nil {
		return nil, errors.New("gitleaks' go.mod names no secret generator")
	}
	gomod = append(gomod, []byte("\nrequire github.com/lucasjones/reggen "+string(m[1])+"\n")...)
	sum, err := os.ReadFile("../go.sum")
	if err != nil {
		return nil, err
	}
	glSum, _ := os.ReadFile(filepath.Join(modDir, "go.sum"))
	sum = append(sum, glSum...)
	files := map[string][]byte{"go.mod": gomod, "go.sum": sum, "utils/record.go": []byte(glRecorder)}
	const utilsImport = "github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	for _, sub := range []string{"rules", "utils"} {
		entries, err := os.ReadDir(filepath.Join(gen, sub))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(gen, sub, name))
			if err != nil {
				return nil, err
			}
			b = bytes.ReplaceAll(b, []byte(`"`+utilsImport+`"`), []byte(`"samples/utils"`))
			if sub == "utils" && name == "validate.go" {
				b = bytes.Replace(b, []byte("func Validate("), []byte("func validateChecked("), 1)
				b = bytes.Replace(b, []byte("func ValidateWithPaths("), []byte("func validateWithPathsChecked("), 1)
			}
			files[filepath.Join(sub, name)] = b
		}
	}
	mainGo, err := os.ReadFile(filepath.Join(gen, "main.go"))
	if err != nil {
		return nil, err
	}
	var calls strings.Builder
	for _, c := range glRuleCall.FindAllSubmatch(mainGo, -1) {
		fmt.Fprintf(&calls, "\trules.%s()\n", c[1])
	}
	if calls.Len() == 0 {
		return nil, errors.New("no rule functions found in the generator's main.go")
	}
	files["main.go"] = []byte("package main\n\nimport (\n\t\"encoding/json\"\n\t\"os\"\n\n\t\"samples/rules\"\n\t\"samples/utils\"\n)\n\nfunc main() {\n" +
		calls.String() + "\tif err := json.NewEncoder(os.Stdout).Encode(utils.Recorded); err != nil {\n\t\tos.Exit(1)\n\t}\n}\n")
	for name, b := range files {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(goBin, "run", "-mod=mod", ".")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out, nil
}

// glFamily is a rule's family for the report: its id up to the first dash.
func glFamily(rule string) string {
	f, _, _ := strings.Cut(rule, "-")
	return f
}

// TestGitleaksSamples runs gitleaks' own true and false positives through
// the engine: at least 99.5 % of the true positives must be masked, and at
// most 5 % of the false positives (text gitleaks leaves alone).
func TestGitleaksSamples(t *testing.T) {
	samples := gitleaksSamples(t)
	e := testEngine(t)
	type tally struct{ tp, tpMasked, fp, fpMasked int }
	fam := map[string]*tally{}
	var all tally
	var missed, falseMasks []string
	for _, s := range samples {
		if s.Paths {
			continue // rules bound to file paths: terminal output has none
		}
		f := fam[glFamily(s.Rule)]
		if f == nil {
			f = &tally{}
			fam[glFamily(s.Rule)] = f
		}
		for _, c := range s.TPs {
			out := e.Redact(c.Text)
			ok := true
			for _, sec := range c.Secrets {
				if strings.Contains(out, sec) {
					ok = false
				}
			}
			f.tp++
			all.tp++
			if ok {
				f.tpMasked++
				all.tpMasked++
			} else {
				missed = append(missed, fmt.Sprintf("%s: %q -> %q", s.Rule, c.Text, out))
			}
		}
		for _, c := range s.FPs {
			if c.Flagged {
				continue // gitleaks itself finds a secret here
			}
			out := e.Redact(c.Text)
			f.fp++
			all.fp++
			if out != c.Text {
				f.fpMasked++
				all.fpMasked++
				falseMasks = append(falseMasks, fmt.Sprintf("%s: %q -> %q", s.Rule, c.Text, out))
			}
		}
	}
	names := make([]string, 0, len(fam))
	for n := range fam {
		names = append(names, n)
	}
	sort.Strings(names)
	var report strings.Builder
	fmt.Fprintf(&report, "| family | true positives masked | false positives masked |\n|---|---|---|\n")
	for _, n := range names {
		f := fam[n]
		if f.tpMasked == f.tp && f.fpMasked == 0 {
			continue
		}
		fmt.Fprintf(&report, "| %s | %d / %d | %d / %d |\n", n, f.tpMasked, f.tp, f.fpMasked, f.fp)
	}
	fmt.Fprintf(&report, "| **all %d families** | **%d / %d (%.2f %%)** | **%d / %d (%.2f %%)** |\n", len(fam),
		all.tpMasked, all.tp, 100*float64(all.tpMasked)/float64(all.tp), all.fpMasked, all.fp, 100*float64(all.fpMasked)/float64(all.fp))
	t.Logf("gitleaks samples, families with a miss or a false mask:\n%s", report.String())
	slices.Sort(missed)
	slices.Sort(falseMasks)
	if testing.Verbose() {
		for _, m := range missed {
			t.Logf("missed %s", m)
		}
		for _, m := range falseMasks {
			t.Logf("false mask %s", m)
		}
	}
	if float64(all.tpMasked) < 0.995*float64(all.tp) {
		t.Errorf("%d of %d true positives masked, under 99.5 %%; e.g. %q", all.tpMasked, all.tp, missed[:min(5, len(missed))])
	}
	if float64(all.fpMasked) > 0.05*float64(all.fp) {
		t.Errorf("%d of %d false positives masked, over 5 %%; e.g. %q", all.fpMasked, all.fp, falseMasks[:min(5, len(falseMasks))])
	}
}
