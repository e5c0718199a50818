package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/termgate/termgate/policy"
)

// policyMain runs `termgate policy eval|test`.
func policyMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: termgate policy eval|test [flags]\n")
		return 2
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("termgate policy "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("policy-dir", getenv("TERMGATE_POLICY_DIR"), "policy bundle: a directory or an OPA .tar.gz bundle (default: the embedded bundle)")
	program := fs.String("program", "bash", "eval: the foreground program the text is typed into")
	action := fs.String("action", "input", "eval: start, input, keys or exec")
	jsonl := fs.Bool("jsonl", false, "eval: read one input document per line from stdin, write one decision per line")
	verbose := fs.Bool("v", false, "test: list every test")
	explain := fs.Bool("explain", false, "eval: print the input document the engine built, the rules that matched (data.termgate.finding) and the bundle, not the decision alone")
	verifyKey := fs.String("verification-key", getenv("TERMGATE_VERIFICATION_KEY"), "the bundle must be signed with this key (PEM public key or HMAC secret file)")
	verifyID := fs.String("verification-key-id", "default", "the verification key's id")
	verifyAlg := fs.String("verification-alg", "RS256", "the signing algorithm")
	verifyScope := fs.String("verification-scope", "", "the scope the signature must carry")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctx := context.Background()
	src := policySource(*dir)
	if *verifyKey != "" {
		v, err := policy.Verification(*verifyKey, *verifyID, *verifyAlg, *verifyScope)
		if err != nil {
			fmt.Fprintf(stderr, "termgate: %v\n", err)
			return 2
		}
		src.Verify = v
	}
	switch sub {
	case "eval":
		e, err := policy.New(ctx, src)
		if err != nil {
			fmt.Fprintf(stderr, "termgate: %v\n", err)
			return 1
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		decide := func(in policy.Input) (any, error) {
			if *explain {
				return e.Explain(ctx, in)
			}
			return e.Decide(ctx, in)
		}
		if *explain {
			enc.SetIndent("", "  ")
		}
		if !*jsonl {
			in := policy.Input{Action: *action, Program: *program, Text: strings.Join(fs.Args(), " ")}
			d, err := decide(in)
			enc.Encode(d)
			if err != nil {
				fmt.Fprintf(stderr, "termgate: %v\n", err)
				return 1
			}
			return 0
		}
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		failed := false
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var in policy.Input
			if err := json.Unmarshal([]byte(line), &in); err != nil {
				enc.Encode(map[string]string{"error": fmt.Sprintf("line %d: %v", n, err)})
				failed = true
				continue
			}
			if in.Action == "" {
				in.Action = *action
			}
			if in.Program == "" {
				in.Program = *program
			}
			d, err := decide(in)
			if err != nil {
				failed = true
			}
			enc.Encode(d)
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(stderr, "termgate: reading stdin: %v\n", err)
			return 1
		}
		if failed {
			return 1
		}
		return 0
	case "test":
		results, err := policy.RunTests(ctx, src)
		if err != nil {
			fmt.Fprintf(stderr, "termgate: %v\n", err)
			return 1
		}
		pass, fail := 0, 0
		for _, r := range results {
			if r.Pass {
				pass++
				if *verbose {
					fmt.Fprintf(stdout, "PASS %s\n", r.Name)
				}
				continue
			}
			fail++
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.Name, r.Error)
		}
		fmt.Fprintf(stdout, "policy tests: %d passed, %d failed\n", pass, fail)
		if fail > 0 || pass == 0 {
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "termgate: unknown policy command %q (eval or test)\n", sub)
		return 2
	}
}
