package policy

import (
	"context"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// writeLines write by each way the rules find a written file, with the
// edges of each: a redirection with and without a resolved path, tee, a
// copy with one operand and with two in a directory named by cd, sed -i
// with and without -e, --in-place, dd's of= (and one that is not ASCII),
// several writers in one line.
var writeLines = []string{
	"echo x > f", "cd /etc && echo x >> passwd", "echo x &> /dev/sda", "cat <> f", "echo x >| ~/.bashrc",
	"ls | tee a b", "tee", "cp a", "cp a b", "cd /usr && mv x bin", "install -m 755 x /usr/local/bin/x",
	"sed -i s/a/b/ f g", "sed -i -e s/a/b/ f", "sed --in-place s/a/b/ f", "sed s/a/b/ f", "perl -i -pe s/a/b/ f",
	"dd if=/dev/zero of=/dev/sda bs=1M", "dd of=é/x", "dd of=", `dd of=$'\xffé'`, "touch a b; truncate -s0 c; echo > d",
	"rsync -a src/ dst/", "unzip -d ~/.ssh keys.zip", "wget -O /etc/x https://e/x", "echo x 2>&1 > log",
	"cd /etc/sudoers.d; tee x", "cd /etc; touch cron.d/x", "cd /etc; sed -i s/a/b/ passwd", "cd /etc; sed -i -e s/a/b/ passwd",
	"cd /etc; sed -i", "cd /; tee", "cd ~/../..; truncate -s0 etc/x",
}

func writeTargetsQuery(t testing.TB, e *Engine) rego.PreparedEvalQuery {
	return bundleQuery(t, e, "data.termgate.write_targets")
}

// sameWriteTargets reports how many files in writes, and fails t when
// the derived list and the rules' own set differ.
func sameWriteTargets(t testing.TB, e *Engine, q rego.PreparedEvalQuery, in Input) int {
	t.Helper()
	return sameDerived(t, e, q, in, "write targets", func(sh *Shell) { sh.WriteTargets = nil })
}

// sameDerived evaluates q on the document the engine builds for in, and
// on the same document with strip applied to its shell (a derived fact
// taken away, so that the rules compute it themselves); it fails t when
// the two answers differ, and returns the length of the derived one.
func sameDerived(t testing.TB, e *Engine, q rego.PreparedEvalQuery, in Input, what string, strip func(*Shell)) int {
	t.Helper()
	built := e.Build(in)
	if built.Shell == nil {
		return 0
	}
	eval := func(in Input) any {
		rs, err := q.Eval(context.Background(), rego.EvalParsedInput(in.value()))
		if err != nil || len(rs) == 0 {
			t.Fatalf("%q: %v %v", in.Text, rs, err)
		}
		return rs[0].Expressions[0].Value
	}
	derived := eval(built)
	sh := *built.Shell
	strip(&sh)
	bare := built
	bare.Shell = &sh
	computed := eval(bare)
	if !reflect.DeepEqual(derived, computed) {
		t.Errorf("%q (cwd %q): %s derived %v, computed by the rules %v", in.Text, in.Cwd, what, derived, computed)
	}
	s, _ := derived.([]any)
	return len(s)
}

// TestWriteTargetsAsRulesDo checks the write targets the engine derives
// against the rules' write_target, on every corpus input and the lines
// above.
func TestWriteTargetsAsRulesDo(t *testing.T) {
	e := defaultEngine(t)
	q := writeTargetsQuery(t, e)
	found := 0
	for _, in := range withLines(benchInputs(t), writeLines) {
		if sameWriteTargets(t, e, q, in) > 0 {
			found++
		}
	}
	if found < 100 {
		t.Errorf("only %d inputs write a file: the comparison proves little", found)
	}
}

// FuzzWriteTargets compares the derived write targets with the rules'
// own on any line.
func FuzzWriteTargets(f *testing.F) {
	e := defaultEngine(f)
	q := writeTargetsQuery(f, e)
	fuzzLines(f, writeLines, func(t *testing.T, in Input) { sameWriteTargets(t, e, q, in) })
}
