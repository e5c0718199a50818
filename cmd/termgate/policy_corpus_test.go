package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/policy"
)

// TestPolicyEvalJSONLOverTheCorpus: policy eval --jsonl reads the policy
// corpus and the code corpus (one input document per line, with its
// expectation beside it) in one process, decides every line and never
// stops; and the decisions are those the engine gives the same documents
// directly.
func TestPolicyEvalJSONLOverTheCorpus(t *testing.T) {
	paths, err := filepath.Glob("../../policy/testdata/corpus/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var all strings.Builder
	lines := 0
	for _, p := range append(paths, "../../policy/testdata/code.jsonl") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		lines += strings.Count(string(b), "\n")
	}
	got, code := evalLines(t, nil, all.String())
	if code != 0 || len(got) != lines {
		t.Fatalf("exit %d, %d decisions for %d documents", code, len(got), lines)
	}
	e := embeddedEngine(t)
	docs := strings.Split(strings.TrimSuffix(all.String(), "\n"), "\n")
	for i, g := range got {
		if strings.HasPrefix(g, "error") {
			t.Errorf("document %d: %s", i+1, g)
			continue
		}
		var in policy.Input
		if err := json.Unmarshal([]byte(docs[i]), &in); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		d, err := e.Decide(context.Background(), in)
		if want := d.Action + " " + d.Rule; err != nil || g != want {
			t.Errorf("document %d (%.80s): policy eval says %s, the engine %s (%v)", i+1, docs[i], g, want, err)
		}
	}
}

// TestPolicyInputCarriesTheGateway: the engine's decider gives every
// document the gateway's own paths as configured and the foreground
// program's directory, so a line that writes the configured audit log is
// refused wherever it is, and a relative path is judged where it points.
func TestPolicyInputCarriesTheGateway(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.AuditLog = filepath.Join(dir, "logs", "audit.jsonl")
	cfg.RecordDir = filepath.Join(dir, "rec")
	cfg.EgressHosts = filepath.Join(dir, "egress-hosts")
	cfg.VerificationKey = filepath.Join(dir, "keys", "bundle.pem")
	cfg.AuditSyslogSpool = filepath.Join(dir, "spool")
	d := engineDecider{e: embeddedEngine(t), gateway: policyGateway(cfg, func(string) string { return "" })}
	ctx := context.Background()
	for _, tc := range []struct {
		text, cwd string
		want      Verdict
	}{
		{"echo x > " + cfg.AuditLog, "", "deny"},
		{"truncate -s0 " + cfg.AuditLog + ".1", "", "deny"},
		{"cd " + filepath.Join(dir, "logs") + " && rm audit.jsonl", "", "deny"},
		{"rm -rf rec", dir, "deny"},
		{"rm -rf usr", "/", "deny"},
		{"rm -rf other", dir, "allow"},
		// the files that decide what the gateway trusts
		{"echo '1.2.3.4 github.com' >> " + cfg.EgressHosts, "", "deny"},
		{"cp evil.pem keys/bundle.pem", dir, "deny"},
		{"rm -f spool/0001", dir, "deny"},
	} {
		dec, err := d.Decide(ctx, GateInput{Action: ActionInput, Program: "bash", Text: tc.text, Cwd: tc.cwd})
		if err != nil || dec.Action != tc.want {
			t.Errorf("%q in %q: %+v %v, want %s", tc.text, tc.cwd, dec, err, tc.want)
		}
	}
	// This process's foreground group is its own or its terminal's: a
	// directory either way.
	if cwd := foregroundCwd(os.Getpid()); !filepath.IsAbs(cwd) {
		t.Errorf("foregroundCwd of this process: %q", cwd)
	}
	if foregroundCwd(-1) != "" || foregroundCwd(1<<30) != "" {
		t.Error("foregroundCwd of no process is not empty")
	}
}
