package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPolicyEvalJSONLNeverStops: policy eval --jsonl writes one line per
// document, and a bad line (not JSON, too long, a document the engine
// fails on) gets an error object on its own line while evaluation goes on.
func TestPolicyEvalJSONLNeverStops(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", maxDocument) + `"}`
	stdin := strings.Join([]string{
		`{"action":"input","program":"bash","text":"rm -rf /"}`,
		`{"action":`,
		``,
		`{"text":"> /etc/passwd"}`,
		long,
		`{"text":"x=$(< /etc/hostname)"}`,
		`[1, 2]`,
		`{"shell":{"commands":[{"name":"mount","args":null}]}}`,
		`{"text":"ls"}`, // the last line, without a newline
	}, "\n")
	got, code := evalLines(t, nil, stdin)
	want := []string{
		`deny fs.rm_protected`,
		`error line 2`,
		`deny file.sensitive_write`,
		`error line 5`,
		`allow allow.default`,
		`error line 7`,
		`allow allow.default`,
		`allow allow.default`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || code != 1 {
		t.Fatalf("exit %d, lines:\n%s\nwant exit 1, lines:\n%s", code, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A bundle that fails on one document: that line gets an error object
	// with the fail-closed decision, and the next line is decided.
	dir := t.TempDir()
	rego := `package termgate

decision := {"action": "allow", "rule": "ok", "reason": "", "severity": "low"} if input.text != "boom"

decision := {"action": "allow", "rule": "boom", "reason": "", "severity": "low"} if {
	input.text == "boom"
	to_number(input.text) > 0
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	got, code = evalLines(t, []string{"--policy-dir", dir}, "{\"text\":\"boom\"}\n{\"text\":\"fine\"}\n")
	if strings.Join(got, "|") != "error line 1 deny policy.error|allow ok" || code != 1 {
		t.Fatalf("exit %d, lines %q", code, got)
	}

	// All decided: exit 0.
	if got, code = evalLines(t, nil, "{\"text\":\"ls\"}\n\n{\"text\":\"2>/dev/null\"}\n"); code != 0 || len(got) != 2 {
		t.Fatalf("exit %d, lines %q", code, got)
	}
}

// evalLines runs policy eval --jsonl and summarises each output line:
// "action rule" for a decision, "error line N [action rule]" for an error.
func evalLines(t *testing.T, flags []string, stdin string) ([]string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := policyMain(append([]string{"eval", "--jsonl"}, flags...), strings.NewReader(stdin), &stdout, &stderr, func(string) string { return "" })
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		var v struct {
			Action, Rule, Error string
			Line                int
			Decision            *struct{ Action, Rule string }
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("output line %q: %v (stderr %s)", l, err, stderr.String())
		}
		switch {
		case v.Error != "" && v.Decision != nil:
			out = append(out, "error line "+strconv.Itoa(v.Line)+" "+v.Decision.Action+" "+v.Decision.Rule)
		case v.Error != "":
			out = append(out, "error line "+strconv.Itoa(v.Line))
		default:
			out = append(out, v.Action+" "+v.Rule)
		}
	}
	return out, code
}
