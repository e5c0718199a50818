package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/redact"
)

// Secrets the gateway holds are named NAME=env:VAR or NAME=file:PATH, on
// the command line (--secret, repeatable; TERMGATE_SECRET takes a
// comma-separated list) or in the bundle (data.termgate.secrets, an object
// of NAME: "env:VAR" | "file:PATH"). session_send {secret_ref: NAME} types
// one into a password prompt; its value never reaches the agent, a result,
// the policy or a log, and it is registered with the redactor.

// secretList is the repeatable --secret flag.
type secretList []string

func (s *secretList) String() string { return strings.Join(*s, ",") }

func (s *secretList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// loadSecrets resolves secret specs to values. An error names the secret
// and where it was to come from, never a value.
func loadSecrets(specs []string, getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	for _, spec := range specs {
		name, src, ok := strings.Cut(spec, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("--secret %q: want NAME=env:VAR or NAME=file:PATH", spec)
		}
		kind, where, _ := strings.Cut(src, ":")
		var v string
		switch kind {
		case "env":
			v = getenv(where)
			if v == "" {
				return nil, fmt.Errorf("secret %s: environment variable %s is empty or unset", name, where)
			}
		case "file":
			b, err := os.ReadFile(where)
			if err != nil {
				return nil, fmt.Errorf("secret %s: %w", name, err)
			}
			v = strings.TrimRight(string(b), "\r\n")
		default:
			return nil, fmt.Errorf("secret %s: source %q is not env:VAR or file:PATH", name, src)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("secret %s is defined twice", name)
		}
		out[name] = v
	}
	return out, nil
}

// bundleSecrets lists the secret specs in the bundle's data.
func bundleSecrets(b *policy.Bundle) ([]string, error) {
	v, ok := b.Data("termgate", "secrets")
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("data.termgate.secrets must be an object of NAME: \"env:VAR\" or \"file:PATH\"")
	}
	var specs []string
	for name, src := range m {
		s, ok := src.(string)
		if !ok {
			return nil, fmt.Errorf("data.termgate.secrets.%s must be a string", name)
		}
		specs = append(specs, name+"="+s)
	}
	sort.Strings(specs)
	return specs, nil
}

// bundleRules reads the operator's redaction rules from the bundle
// (data.termgate.redaction.rules: [{id, regex, secret_group, keywords,
// entropy}]).
func bundleRules(b *policy.Bundle) ([]redact.Rule, error) {
	v, ok := b.Data("termgate", "redaction", "rules")
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var specs []redact.Spec
	if err := json.Unmarshal(raw, &specs); err != nil {
		return nil, fmt.Errorf("data.termgate.redaction.rules: %w", err)
	}
	rules := make([]redact.Rule, 0, len(specs))
	for _, s := range specs {
		r, err := s.Compile()
		if err != nil {
			return nil, fmt.Errorf("data.termgate.redaction.rules: %w", err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// newRedactor builds the redaction engine: the default rules, the
// bundle's rules, and the secrets the gateway holds (every piece of 8
// bytes or more of one is masked).
func newRedactor(b *policy.Bundle, secrets map[string]string) (*redact.Engine, error) {
	return newRedactorRules(b, secrets, nil)
}

// newRedactorRules is newRedactor with the default rules already built
// (nil: build them).
func newRedactorRules(b *policy.Bundle, secrets map[string]string, defaults []redact.Rule) (*redact.Engine, error) {
	extra, err := bundleRules(b)
	if err != nil {
		return nil, err
	}
	e, err := redact.New(redact.Options{Rules: defaults, Extra: extra})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(secrets))
	for name := range secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := e.AddSecret(secrets[name]); err != nil {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
	}
	return e, nil
}

// redactMain is `termgate redact`: stdin to stdout through the same
// engine and rules as the gateway, as a stream.
func redactMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("termgate redact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("policy-dir", getenv("TERMGATE_POLICY_DIR"), "policy bundle with extra redaction rules (default: the embedded bundle)")
	var specs secretList
	fs.Var(&specs, "secret", "also mask this secret's exact value: NAME=env:VAR or NAME=file:PATH (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "termgate redact: reads stdin only; unexpected %q\n", fs.Args())
		return 2
	}
	// The default rules compile while the bundle loads: on two cores the
	// start takes the longer of the two, not their sum.
	type compiled struct {
		rules []redact.Rule
		err   error
	}
	rules := make(chan compiled, 1)
	go func() {
		r, err := redact.DefaultRules()
		rules <- compiled{r, err}
	}()
	engine, err := policy.New(context.Background(), policySource(*dir))
	defaults := <-rules // received before any return: the goroutine is done
	if err == nil {
		err = defaults.err
	}
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	secrets, err := loadSecrets(specs, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	e, err := newRedactorRules(engine.Bundle(), secrets, defaults.rules)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	var werr error
	// One Taint for the run: a secret found once is masked wherever it
	// appears again.
	s := e.NewStreamWith(func(p []byte) {
		if werr == nil {
			_, werr = stdout.Write(p)
		}
	}, redact.StreamOptions{Taint: redact.NewTaint(redact.TaintLimits{})})
	// Large reads: each write runs the keyword scan and the rules once,
	// and a read of a file or a pipe costs a system call.
	_, rerr := io.CopyBuffer(struct{ io.Writer }{s}, struct{ io.Reader }{stdin}, make([]byte, 256<<10))
	s.Close()
	if rerr != nil || werr != nil {
		fmt.Fprintf(stderr, "termgate redact: %v\n", errors.Join(rerr, werr))
		return 1
	}
	return 0
}
