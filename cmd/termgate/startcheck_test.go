package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

func embeddedEngine(t testing.TB) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), policySource(""))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestProfileLookAlikes: the profile a start gets, with the real parser
// and the default bundle: what the session runs decides, not any command
// of its line.
func TestProfileLookAlikes(t *testing.T) {
	d := engineDecider{e: embeddedEngine(t)}
	for _, c := range []struct {
		command string
		argv    []string
		want    string
	}{
		{command: "ssh host", want: "network"},
		{command: "env FOO=1 psql db", want: "network"},
		{command: "timeout 60 nice -n 5 ssh -p 2222 host", want: "network"},
		{command: "exec psql 'postgres://db/app'", want: "network"},
		{argv: []string{"git", "fetch"}, want: "network"},
		{argv: []string{"bash", "-c", "ssh host"}, want: "network"},
		{command: "git --version >/dev/null; exec bash", want: "default"},
		{command: "git --version && bash", want: "default"},
		{command: "ssh host; bash", want: "default"},
		{command: "ssh host | tee log", want: "default"},
		{command: "ssh host & bash", want: "default"},
		{command: "ssh $(echo host)", want: "default"},
		{command: "sudo ssh host", want: "default"},
		{command: "env ssh=1 bash", want: "default"},
		{argv: []string{"bash", "-c", "git pull; exec bash"}, want: "default"},
		{argv: []string{"bash"}, want: "default"},
		{argv: []string{"python3"}, want: "default"},
		{command: "", want: "default"},
	} {
		argv, err := startArgv(c.command, c.argv, "bash")
		if err != nil {
			t.Fatal(err)
		}
		in := startInput("", argv, checkedDir{Path: "/work/project"}, agentEnv{Names: []string{}})
		dec, err := d.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Profile != c.want {
			t.Errorf("start %q %q: profile %q (%s), want %q", c.command, c.argv, dec.Profile, dec.Rule, c.want)
		}
	}
}

// TestCheckAgentEnv: the floor refuses whatever the bundle says; the
// bundle's allowlist decides the rest, name and value shape; no refusal
// quotes a value.
func TestCheckAgentEnv(t *testing.T) {
	b := embeddedEngine(t).Bundle()
	ok := map[string]string{"TZ": "UTC", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color", "EDITOR": "vim", "COLUMNS": "120"}
	got, err := checkAgentEnv(b, ok)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Names, []string{"COLUMNS", "EDITOR", "LC_ALL", "TERM", "TZ"}) || got.Pairs[0] != "COLUMNS=120" {
		t.Fatalf("%+v", got)
	}
	secret := "s3cr3t-" + strconv.Itoa(os.Getpid())
	for name, want := range map[string]string{
		"BASH_FUNC_printf%%": "defines a shell function",
		"BASH_FUNC_ls":       "defines a shell function",
		"x%y":                "defines a shell function",
		"A-B":                "not a plain variable name",
		"1A":                 "not a plain variable name",
		"PS1":                "expands it at every prompt",
		"PS4":                "expands it at every prompt",
		"PROMPT_COMMAND":     "expands it at every prompt",
		"MAILPATH":           "checks and expands it",
		"BASH_ENV":           "runs what it names at start",
		"ENV":                "runs what it names at start",
		"ZDOTDIR":            "runs what it names at start",
		"HOME":               "the gateway sets it",
		"PATH":               "the gateway sets it",
		"SHELL":              "the gateway sets it",
		"LD_PRELOAD":         "dynamic linker",
		"LD_LIBRARY_PATH":    "dynamic linker",
		"PYTHONPATH":         "interpreter",
		"PYTHONSTARTUP":      "interpreter",
		"NODE_OPTIONS":       "interpreter",
		"PERL5OPT":           "interpreter",
		"GIT_SSH_COMMAND":    "git runs commands",
		"GIT_CONFIG_COUNT":   "git runs commands",
		"TERMGATE_POLICY":    "gateway's own setting",
		"LESSOPEN":           "programs run the command",
		"SSH_AUTH_SOCK":      "programs run the command",
		"FOO":                "not a variable an agent may set: the allowlist is data.termgate.agent_env",
	} {
		_, err := checkAgentEnv(b, map[string]string{name: secret})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("%s: %v, want a refusal naming it and saying %q", name, err, want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the refusal quotes the value: %v", name, err)
		}
	}
	for name, value := range map[string]string{"TERM": "$(id)", "EDITOR": "sh -c id", "TZ": "/etc/../x", "LC_ALL": "C;id", "COLUMNS": "1e9"} {
		if _, err := checkAgentEnv(b, map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), "does not have the shape") {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
	if _, err := checkAgentEnv(b, map[string]string{"TZ": "UTC\x00"}); err == nil {
		t.Error("a NUL byte in a value passed")
	}
	many := map[string]string{}
	for i := range maxAgentVars + 1 {
		many["LC_X"+strconv.Itoa(i)] = "C"
	}
	if _, err := checkAgentEnv(b, many); err == nil {
		t.Error("too many variables passed")
	}
	// A bundle without the list allows nothing.
	if _, err := checkAgentEnv(nil, map[string]string{"TZ": "UTC"}); err == nil {
		t.Error("no allowlist, and TZ passed")
	}
}

// TestCheckCwd: the one check of a start's and an exec's cwd.
func TestCheckCwd(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	gw := filepath.Join(root, "gw")
	project := filepath.Join(home, "src", "p")
	state := filepath.Join(home, ".local", "state", "termgate")
	for _, d := range []string{gw, project, state, filepath.Join(gw, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/", filepath.Join(project, "r"))
	os.Symlink(project, filepath.Join(gw, "p"))
	os.WriteFile(filepath.Join(project, "f"), nil, 0o644)
	rules, err := sessionRoots(nil, gw, home)
	if err != nil {
		t.Fatal(err)
	}
	rules.protected = []string{state}
	for _, c := range []struct{ cwd, want, refuse string }{
		{"", gw, ""},
		{".", gw, ""},
		{"sub", filepath.Join(gw, "sub"), ""},
		{"p", project, ""},
		{project, project, ""},
		{filepath.Join(project, "r"), "", "whole file system"},
		{"/proc/self/root", "", "under /proc"},
		{"/sys/fs", "", "under /sys"},
		{"/dev/shm", "", "under /dev"},
		{filepath.Join(project, "f"), "", "is not a directory"},
		{filepath.Join(project, "nope"), "", "does not exist"},
		{home, "", "home directory"},
		{filepath.Join(home, ".local"), "", "holds the gateway's own"},
		{state, "", "holds the gateway's own"},
		{"/etc", "", "outside the directories sessions may start in"},
		{"a\x1bb", "", "control characters"},
	} {
		got, err := checkCwd(c.cwd, gw, rules)
		switch {
		case c.refuse == "" && (err != nil || got.Path != c.want || got.ID.IsZero()):
			t.Errorf("checkCwd(%q) = %+v, %v; want %s", c.cwd, got, err, c.want)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse) || !strings.Contains(err.Error(), "nothing was started")):
			t.Errorf("checkCwd(%q) = %+v, %v; want a refusal saying %q", c.cwd, got, err, c.refuse)
		}
	}
	// The gateway's cwd as a root is left out when it is / (or holds the
	// home): then only directories below the home and the temporary
	// directory remain.
	rules, _ = sessionRoots(nil, "/", home)
	if _, err := checkCwd("", "/", rules); err == nil {
		t.Error("the gateway's / passed as a cwd")
	}
	if got, err := checkCwd(project, "/", rules); err != nil || got.Path != project {
		t.Errorf("a project below the home: %v", err)
	}
}

// TestEscapeText: what a human is shown is what is there.
func TestEscapeText(t *testing.T) {
	for in, want := range map[string]string{
		"rm -rf ~":                "rm -rf ~",
		"a\nb\tc\rd":              `a\nb\tc\rd`,
		"\x1b[2J\x07":             `\x1b[2J\x07`,
		"safe \u202egnp.exe":      `safe \u202egnp.exe`,
		"x\u2066y\u2069\u200bz":   `x\u2066y\u2069\u200bz`,
		"\xff\xfe":                `\xff\xfe`,
		"back\\slash":             `back\\slash`,
		"\u0085next\u2028line":    `\u0085next\u2028line`,
		"café 日本 😀":               "café 日本 😀",
		"del\x7f":                 `del\x7f`,
		"soft\u00adhyphen\ufeffx": `soft\u00adhyphen\ufeffx`,
	} {
		if got := escapeText(in); got != want {
			t.Errorf("escapeText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := quoteText(`say "hi"`); got != `"say \"hi\""` {
		t.Errorf("quoteText = %s", got)
	}
}

// FuzzEscapeText: the escaped text holds no control, bidi or invisible
// character, and reads back (as a Go string) to exactly the input.
func FuzzEscapeText(f *testing.F) {
	for _, s := range []string{"", "rm -rf ~", "a\u202eb", "\x1b]0;x\x07", "\xff", `\"`, "\u2028", "e\u0301", "\U000e0041"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := quoteText(s)
		back, err := strconv.Unquote(q)
		if err != nil || back != s {
			t.Fatalf("quoteText(%q) = %s reads back as %q, %v", s, q, back, err)
		}
		for _, r := range escapeText(s) {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || hiddenRune(r) || !utf8.ValidRune(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("escapeText(%q) holds %U", s, r)
			}
		}
	})
}

// TestQuestionShowsWhatRuns: the confirmation question shows program,
// argv, cwd and the environment the agent set, escaped and redacted; an
// approval binds the values.
func TestQuestionShowsWhatRuns(t *testing.T) {
	c, err := newHumanConfirmer(0)
	if err != nil {
		t.Fatal(err)
	}
	c.redact = func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED:test]") }
	in := GateInput{Action: "exec", Program: "bash", Text: "rm -rf \"$T\" \u202e#",
		Start: &GateRef{Argv: []string{"bash", "-c", "rm -rf \"$T\""}, Cwd: "/work/p\x1b[8m", Env: []string{"PASS", "T"},
			EnvValues: []string{"PASS=hunter2", "T=scratch\u2067"}}}
	q := c.question(in, Decision{Rule: "fs.rm_recursive_outside", Severity: "medium", Reason: "recursive delete"}).Message
	for _, want := range []string{`program: bash`, `argv: ["bash", "-c", "rm -rf \"$T\""]`, `cwd: /work/p\x1b[8m`,
		`T="scratch\u2067"`, `PASS="[REDACTED:test]"`, `rm -rf "$T" \u202e#`, "rule: fs.rm_recursive_outside"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question lacks %s:\n%s", want, q)
		}
	}
	if strings.ContainsAny(q, "\x1b\u202e\u2067") || strings.Contains(q, "hunter2") {
		t.Errorf("the question holds raw control characters or a secret:\n%q", q)
	}
	other := in
	other.Start = &GateRef{Argv: in.Start.Argv, Cwd: in.Start.Cwd, Env: in.Start.Env, EnvValues: []string{"PASS=hunter2", "T=/home/u"}}
	if inputHash(in) == inputHash(other) {
		t.Error("an approval with T=scratch would approve T=/home/u")
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "TERM=dumb", "B=2"}, "TERM=xterm", "C=3", "TERM=vt100")
	if want := []string{"A=1", "B=2", "C=3", "TERM=vt100"}; !slices.Equal(got, want) {
		t.Fatalf("mergeEnv = %v, want %v", got, want)
	}
}

func TestInteractiveShell(t *testing.T) {
	for argv, want := range map[string]bool{
		"bash": true, "/bin/bash -i": true, "zsh --login": true, "bash --norc": true,
		"bash -c ls": false, "sh -ec ls": false, "bash script.sh": false, "python3": false, "ssh host": false,
	} {
		if got := interactiveShell(strings.Fields(argv)); got != want {
			t.Errorf("interactiveShell(%s) = %v", argv, got)
		}
	}
}

// TestProfileNeverGivesAShellTheSSHDirectory: a bundle whose profile for
// bash reads ~/.ssh is refused for a general shell.
func TestProfileNeverGivesAShellTheSSHDirectory(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	id, _, err := sandbox.Identify(project)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{cfg: defaultConfig(), getenv: func(k string) string {
		return map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}[k]
	}}
	b := embeddedEngine(t).Bundle()
	if _, err := g.prepareLaunch(b, "network", checkedDir{Path: project, ID: id}, []string{"bash"}); err == nil || !strings.Contains(err.Error(), ".ssh") {
		t.Fatalf("a general shell with the network profile: %v", err)
	}
	if _, err := g.prepareLaunch(b, "network", checkedDir{Path: project, ID: id}, []string{"ssh", "host"}); err != nil {
		t.Fatalf("ssh with the network profile: %v", err)
	}
}

// FuzzCheckAgentEnv: whatever an agent sends as env, the check does not
// panic, never passes a name the floor forbids, and never quotes a value
// in its refusal.
func FuzzCheckAgentEnv(f *testing.F) {
	b := embeddedEngine(f).Bundle()
	for _, s := range [][2]string{{"TZ", "UTC"}, {"BASH_FUNC_x%%", "() { :; }"}, {"LC_ALL", "C"}, {"PS1", "$(id)"}, {"", ""}, {"TERM", "\x00"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		got, err := checkAgentEnv(b, map[string]string{name: value})
		if err != nil {
			msg := err.Error()
			if i := strings.Index(msg, "allows ("); i >= 0 {
				msg = msg[:i] // the shape's own regular expression follows
			}
			if len(value) > 3 && strings.Contains(msg, value) && !strings.Contains(name, value) {
				t.Fatalf("the refusal quotes the value %q: %v", value, err)
			}
			return
		}
		if envFloor(name) != "" || !sandbox.PlainName(name) || len(got.Pairs) != 1 || got.Pairs[0] != name+"="+value {
			t.Fatalf("%q=%q passed: %+v", name, value, got)
		}
	})
}

// FuzzCheckCwd: whatever cwd an agent sends, a directory that passes is
// real (absolute, clean, no link), not under /proc, /sys or /dev, and
// within the roots.
func FuzzCheckCwd(f *testing.F) {
	base := f.TempDir()
	for _, s := range []string{"", ".", "..", "/", "/proc/self/root", "sub/../..", "/tmp", "\x00", "a\nb", base} {
		f.Add(s)
	}
	rules, err := sessionRoots(nil, base, "/nonexistent-home")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cwd string) {
		got, err := checkCwd(cwd, base, rules)
		if err != nil {
			return
		}
		real, rerr := filepath.EvalSymlinks(got.Path)
		if rerr != nil || real != got.Path || filepath.Clean(got.Path) != got.Path || sandbox.UnderMagicRoot(got.Path) != "" || got.Path == "/" {
			t.Fatalf("checkCwd(%q) passed %q (real %q, %v)", cwd, got.Path, real, rerr)
		}
		in := false
		for _, r := range rules.roots {
			in = in || within(got.Path, r.dir) && (!r.strict || got.Path != r.dir)
		}
		if !in {
			t.Fatalf("checkCwd(%q) passed %q, outside the roots", cwd, got.Path)
		}
	})
}
