package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// loadCodeCorpus reads the code corpus, testdata/code.jsonl: code typed
// into REPLs, one-liners handed to interpreters, SQL typed into database
// clients and interactive programs' shell escapes, each a line: the input
// document (action, program, text), the decision the default bundle must
// reach (expect, and the rule when one is named) and the group it belongs
// to. Benign look-alikes must stay allowed. TestCorpus judges it;
// BenchmarkDecide measures decisions over it with the shell corpus, and
// BenchmarkDecideCorpus (and the gateway's BenchmarkGatewayDecideCorpus)
// with testdata/corpus.
func loadCodeCorpus(tb testing.TB) []struct{ program, text, action, rule string } {
	tb.Helper()
	f, err := os.Open("testdata/code.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []struct{ program, text, action, rule string }
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var c struct {
			Action  string `json:"action"`
			Program string `json:"program"`
			Text    string `json:"text"`
			Expect  string `json:"expect"`
			Rule    string `json:"rule"`
			Group   string `json:"group"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatalf("testdata/code.jsonl:%d: %v", n, err)
		}
		if c.Action != "input" || c.Program == "" || c.Group == "" {
			tb.Fatalf("testdata/code.jsonl:%d: action %q, program %q, group %q", n, c.Action, c.Program, c.Group)
		}
		switch c.Expect {
		case "deny", "confirm", "allow":
		default:
			tb.Fatalf("testdata/code.jsonl:%d: expect %q", n, c.Expect)
		}
		out = append(out, struct{ program, text, action, rule string }{c.Program, c.Text, c.Expect, c.Rule})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatal("testdata/code.jsonl: no cases")
	}
	return out
}
