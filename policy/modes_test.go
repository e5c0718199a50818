package policy

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// modeLines set or name a mode in each way the rules read one, with the
// edges of each: chmod's arguments, -m with and without a value, joined
// (-m4755, -m=4755, -Dm4755), a cluster ending in m, --mode and its
// abbreviations, alone and with =, tar's -m (--touch, not a mode),
// another program's -m, a computed name, arguments supplied as the line
// runs (a parameter, a substitution, xargs, parallel), several setters,
// and a mode that is not ASCII.
var modeLines = []string{
	"chmod 4755 x", "gchmod u+s,g+s x y", "install -m 4755 a b", "install -m", "install -m4755 a b",
	"install -m=4755 a b", "install -Dm4755 a b", "install -Dm 4755 a b", "mkdir --mode 1777 d",
	"mkdir --mode=2755 d", "mkdir --mo=4755 d", "mkdir --m 4755 d", "mkdir --mod= d", "mkdir --modes=4755 d",
	"tar -xm 4755 -f x.tar", "tar --mode=4755 -cf x.tar .", "tar -cmf x.tar .", "gtar -m 4755", "git commit -m 4755",
	"$i -m 4755 sh /tmp/sh", "/usr/bin/inst* -m 4755 a b", "set -- -m 4755 sh /tmp/sh; install \"$@\"",
	"install $(echo -m 4755) a b", "echo -m 4755 a b | xargs install", "ls | parallel mknod -m 4755 {} p",
	"f(){ install \"$@\"; }; f -m 4755 sh /tmp/sh", "mkfifo -m 0600 p; git commit -m 4755", "mknod -mé p c 1 3",
	"install -m 755 tool bin/tool && chmod 644 conf && mkdir -p -m 700 .cache", "install -- -m 4755",
}

func modesQuery(t testing.TB, e *Engine) rego.PreparedEvalQuery {
	return bundleQuery(t, e, "data.termgate.line_modes")
}

// sameModes reports how many modes in sets, and fails t when the derived
// modes and the rules' own set differ.
func sameModes(t testing.TB, e *Engine, q rego.PreparedEvalQuery, in Input) int {
	t.Helper()
	return sameDerived(t, e, q, in, "modes", func(sh *Shell) { sh.Modes = nil })
}

// TestModesAsRulesDo checks the modes the engine derives against the
// rules' line_mode, on every corpus input and the lines above.
func TestModesAsRulesDo(t *testing.T) {
	e := defaultEngine(t)
	q := modesQuery(t, e)
	found := 0
	for _, in := range withLines(benchInputs(t), modeLines) {
		if sameModes(t, e, q, in) > 0 {
			found++
		}
	}
	if found < 60 {
		t.Errorf("only %d inputs set a mode: the comparison proves little", found)
	}
}

// FuzzModes compares the derived modes with the rules' own on any line.
func FuzzModes(f *testing.F) {
	e := defaultEngine(f)
	q := modesQuery(f, e)
	fuzzLines(f, modeLines, func(t *testing.T, in Input) { sameModes(t, e, q, in) })
}
