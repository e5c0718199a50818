package policy

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/util/channel"
)

// testTimeout bounds each Rego test. OPA's default, 5 s, is shorter than
// some of the default bundle's tests take on a loaded two-core machine
// (test_every_write_source_is_judged: 3 s alone, 5-8 s at a load of 10,
// on main as on this tree): a test that fails for want of a core says
// nothing about the policy.
const testTimeout = time.Minute

// TestResult is the outcome of one Rego test.
type TestResult struct {
	Name  string // package.test_name
	Pass  bool
	Error string
}

// RunTests runs a bundle's Rego tests (test_* rules, usually in
// *_test.rego) with OPA's test runner, as `opa test` does, each test
// bounded by testTimeout.
func RunTests(ctx context.Context, src Source) ([]TestResult, error) {
	dir := src.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "termgate-policy-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := copyFS(tmp, src.FS); err != nil {
			return nil, fmt.Errorf("unpacking the embedded bundle: %w", err)
		}
		dir = tmp
	}
	modules, store, err := tester.Load([]string{dir}, nil)
	if err != nil {
		return nil, fmt.Errorf("loading the policy tests: %w", err)
	}
	ch, err := tester.NewRunner().SetStore(store).SetTimeout(testTimeout).Run(ctx, modules)
	if err != nil {
		return nil, fmt.Errorf("running the policy tests: %w", err)
	}
	results := channel.Collect(ch)
	out := make([]TestResult, 0, len(results))
	for _, r := range results {
		tr := TestResult{Name: r.Package + "." + r.Name, Pass: r.Pass()}
		if r.Error != nil {
			tr.Error = r.Error.Error()
		} else if r.Fail {
			tr.Error = "failed"
			if r.FailedAt != nil {
				tr.Error = fmt.Sprintf("failed at %s: %s", r.FailedAt.Location, r.FailedAt)
			}
		}
		out = append(out, tr)
	}
	return out, nil
}

func copyFS(dst string, fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, p)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
