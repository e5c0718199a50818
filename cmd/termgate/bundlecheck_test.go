package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/policies"
	"github.com/termgate/termgate/policy"
)

// copyBundle writes the default bundle into a directory, its data.json
// changed by edit, and returns the directory.
func copyBundle(t *testing.T, dir string, edit func(termgate map[string]any)) string {
	t.Helper()
	ents, err := policies.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".rego") && e.Name() != "data.json" || strings.HasSuffix(e.Name(), "_test.rego") {
			continue
		}
		b, err := policies.FS.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "data.json" {
			var d map[string]any
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			edit(d["termgate"].(map[string]any))
			if b, err = json.Marshal(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReloadValidatesTheWholeBundle: a bundle whose sandbox profiles,
// redaction rules or secrets the gateway cannot use is refused at start
// and at a reload, which keeps the bundle in force; the policy alone
// compiling is not enough.
func TestReloadValidatesTheWholeBundle(t *testing.T) {
	ctx := context.Background()
	getenv := func(name string) string {
		if name == "TG_TEST_BUNDLE_SECRET" {
			return "a-value-for-the-test"
		}
		return ""
	}
	bad := map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"no default profile": {func(d map[string]any) { delete(d["profiles"].(map[string]any), "default") }, `no "default" profile`},
		"a profile that does not parse": {func(d map[string]any) {
			d["profiles"].(map[string]any)["odd"] = map[string]any{"network": "sideways"}
		}, "profiles"},
		"a redaction rule that does not compile": {func(d map[string]any) {
			d["redaction"] = map[string]any{"rules": []any{map[string]any{"id": "broken", "regex": "(unclosed"}}}
		}, "redaction.rules"},
		"a secret that does not resolve": {func(d map[string]any) {
			d["secrets"] = map[string]any{"db": "env:TG_TEST_UNSET_VARIABLE"}
		}, "TG_TEST_UNSET_VARIABLE"},
		"an environment deny list of numbers": {func(d map[string]any) { d["session_env_deny"] = []any{1, 2} }, "session_env_deny"},
	}
	for name, c := range bad {
		t.Run("start: "+name, func(t *testing.T) {
			dir := copyBundle(t, t.TempDir(), c.edit)
			_, err := policy.New(ctx, policy.Source{Dir: dir, Validate: validateBundle(getenv)})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, want an error about %s", err, c.want)
			}
		})
	}
	dir := copyBundle(t, t.TempDir(), func(d map[string]any) {
		d["secrets"] = map[string]any{"db": "env:TG_TEST_BUNDLE_SECRET"}
	})
	e, err := policy.New(ctx, policy.Source{Dir: dir, Validate: validateBundle(getenv)})
	if err != nil {
		t.Fatalf("the default bundle with a secret that resolves: %v", err)
	}
	good := e.Bundle().Hash
	for name, c := range bad {
		copyBundle(t, dir, c.edit)
		if _, err := e.Reload(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reload with %s: %v", name, err)
		}
		if h := e.Bundle().Hash; h != good {
			t.Errorf("reload with %s: the bundle in force changed (%s, was %s)", name, h, good)
		}
		copyBundle(t, dir, func(d map[string]any) { d["secrets"] = map[string]any{"db": "env:TG_TEST_BUNDLE_SECRET"} })
	}
	// A good change is taken whole.
	copyBundle(t, dir, func(d map[string]any) {
		d["secrets"] = map[string]any{"db": "env:TG_TEST_BUNDLE_SECRET"}
		d["session_env_deny"] = []any{"TG_TEST_DENIED"}
	})
	if _, err := e.Reload(ctx); err != nil || e.Bundle().Hash == good {
		t.Fatalf("a good reload: %v (hash %s)", err, e.Bundle().Hash)
	}
}
