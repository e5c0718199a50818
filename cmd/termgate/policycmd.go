package main

import (
	"bufio"
	"bytes"
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
		if !evalJSONL(stdin, enc, stderr, decide, *action, *program) {
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

// maxDocument is the longest input document policy eval --jsonl reads.
const maxDocument = 16 << 20

// evalJSONL decides one input document per line of stdin and writes one
// line per document to stdout: the decision, or an error object
// ({"line": n, "error": "…"}, with the fail-closed decision when the
// engine failed) for a line that is not a document, is too long, or made
// the engine fail. No line stops the evaluation; blank lines are skipped.
// It reports whether every line was decided.
func evalJSONL(stdin io.Reader, enc *json.Encoder, stderr io.Writer, decide func(policy.Input) (any, error), action, program string) bool {
	type lineError struct {
		Line     int    `json:"line"`
		Error    string `json:"error"`
		Decision any    `json:"decision,omitempty"`
	}
	ok := true
	fail := func(n int, msg string, d any) {
		ok = false
		enc.Encode(lineError{Line: n, Error: msg, Decision: d})
	}
	r := bufio.NewReaderSize(stdin, 64<<10)
	for n := 1; ; n++ {
		raw, tooLong, err := readDocument(r, maxDocument)
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "termgate: reading stdin: %v\n", err)
			return false
		}
		line := bytes.TrimSpace(raw)
		switch {
		case tooLong:
			fail(n, fmt.Sprintf("line %d: longer than %d bytes", n, maxDocument), nil)
		case len(line) == 0:
		default:
			var in policy.Input
			if uerr := json.Unmarshal(line, &in); uerr != nil {
				fail(n, fmt.Sprintf("line %d: %v", n, uerr), nil)
				break
			}
			if in.Action == "" {
				in.Action = action
			}
			if in.Program == "" {
				in.Program = program
			}
			d, derr := decide(in)
			if derr != nil {
				// The whole error (a recovered panic carries its stack)
				// goes to stderr; the line's object gets its first line.
				fmt.Fprintf(stderr, "termgate: line %d: %v\n", n, derr)
				msg, _, _ := strings.Cut(derr.Error(), "\n")
				fail(n, fmt.Sprintf("line %d: %s", n, msg), d)
				break
			}
			enc.Encode(d)
		}
		if err != nil { // io.EOF, after the last line
			return ok
		}
	}
}

// readDocument reads one line, without its newline, of at most max bytes. A
// longer line is read to its end and dropped (tooLong). err is io.EOF
// after the last line.
func readDocument(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}
