package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets this test binary act as the launcher, as termgate does.
func TestMain(m *testing.M) {
	if IsLauncher() {
		Main()
	}
	if IsConnectHelper() {
		ConnectMain()
	}
	os.Exit(m.Run())
}

// layout is a throwaway machine in miniature: a home with the gateway's
// state in it, a project, a policy directory, and links that lead out.
type layout struct {
	root, home, state, key, project, policy string
}

func newLayout(t testing.TB) layout {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := layout{
		root:    root,
		home:    filepath.Join(root, "home"),
		state:   filepath.Join(root, "home", ".local", "state", "termgate"),
		project: filepath.Join(root, "home", "src", "project"),
		policy:  filepath.Join(root, "policy"),
	}
	l.key = filepath.Join(l.state, "audit.key")
	for _, d := range []string{l.state, l.project, l.policy, filepath.Join(l.state, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.key, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"r":       "/",
		"up":      filepath.Join(l.home, ".local"),
		"st":      l.state,
		"stsub":   filepath.Join(l.state, "sub"),
		"pol":     l.policy,
		"selfies": "/proc/self/root",
		"ok":      filepath.Join(l.project, "sub"),
		"etc":     "/etc",
	}
	if err := os.Mkdir(filepath.Join(l.project, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(l.project, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The home, reached through a link: the protected list may be spelled
	// through one too.
	if err := os.Symlink(l.home, filepath.Join(root, "homelink")); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l layout) protected() []string {
	// As the gateway lists them: the state directory (audit log and key),
	// the policy directory, a log file not created yet, and the key
	// spelled through a link.
	return []string{l.state, l.policy, filepath.Join(l.root, "logs", "termgate.log"),
		filepath.Join(l.root, "homelink", ".local", "state", "termgate", "audit.key")}
}

func writeProfile(write ...string) Profile {
	return Profile{Name: "t", Network: "none", Read: []string{"/usr", "/etc"}, Write: write}
}

// TestProfileResolvesToAForbiddenPath: whatever the spelling (a link, a
// magic link of /proc, ".."), a profile that grants /, the gateway's own
// files, a directory that holds them or one inside them is refused, and
// the error says why.
func TestProfileResolvesToAForbiddenPath(t *testing.T) {
	l := newLayout(t)
	cases := []struct {
		name   string
		p      Profile
		cwd    string
		refuse string // "" when the profile must resolve
	}{
		{"cwd /proc/self/root", writeProfile("{cwd}"), "/proc/self/root", "whole file system"},
		{"cwd a link to /", writeProfile("{cwd}"), filepath.Join(l.project, "r"), "whole file system"},
		{"cwd a link to /proc/self/root", writeProfile("{cwd}"), filepath.Join(l.project, "selfies"), "whole file system"},
		{"cwd .. up to /", writeProfile("{cwd}"), l.project + "/../../../../../../../..", "whole file system"},
		{"cwd through a link then ..", writeProfile("{cwd}"), filepath.Join(l.project, "r", "tmp", ".."), "whole file system"},
		{"cwd /", writeProfile("{cwd}"), "/", "whole file system"},
		{"cwd the home that holds the state", writeProfile("{cwd}"), l.home, "holds the gateway's own " + l.state},
		{"cwd a link to a parent of the state", writeProfile("{cwd}"), filepath.Join(l.project, "up"), "holds the gateway's own"},
		{"cwd the state itself, by a link", writeProfile("{cwd}"), filepath.Join(l.project, "st"), "holds the gateway's own " + l.state},
		{"cwd inside the state, by a link", writeProfile("{cwd}"), filepath.Join(l.project, "stsub"), "inside the gateway's own " + l.state},
		{"cwd the policy dir, by a link", writeProfile("{cwd}"), filepath.Join(l.project, "pol"), "holds the gateway's own " + l.policy},
		{"cwd the parent of a log file not yet made", writeProfile("{cwd}"), l.root, "holds the gateway's own"},
		{"read the home", Profile{Name: "t", Network: "none", Read: []string{"{home}"}}, l.project, "holds the gateway's own"},
		{"read / by /proc/self/cwd/..", Profile{Name: "t", Network: "none", Read: []string{"/proc/self/root/."}}, l.project, "whole file system"},
		{"device /", Profile{Name: "t", Network: "none", Devices: []string{"/proc/thread-self/root"}}, l.project, "whole file system"},
		{"write under /proc", writeProfile("/proc/self/task"), l.project, "kernel's own"},
		{"write /sys", writeProfile("/sys/fs"), l.project, "kernel's own"},
		{"a path below the cwd that a session made a link to /etc", writeProfile("{cwd}", "{cwd}/etc"), l.project, "outside " + l.project},
		{"the project", writeProfile("{cwd}"), l.project, ""},
		{"the project by a link inside it", writeProfile("{cwd}"), filepath.Join(l.project, "ok"), ""},
		{"read /etc by /proc/self/root", Profile{Name: "t", Network: "none", Read: []string{"/proc/self/root/etc"}, Write: []string{"{cwd}"}}, l.project, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.p.Resolve(Vars{Cwd: c.cwd, Home: l.home}, l.protected())
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("Resolve(%s) = %v, want it to resolve", c.cwd, err)
				}
				for _, w := range s.Write {
					if w == "/" || strings.Contains(w, "/proc/") || w != filepath.Clean(w) {
						t.Fatalf("grant %q is not a real path", w)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve(%s) = read %v write %v devices %v, want it refused (%s)", c.cwd, s.Read, s.Write, s.Devices, c.refuse)
			}
			if !strings.Contains(err.Error(), c.refuse) {
				t.Fatalf("Resolve(%s) error = %q, want it to say %q", c.cwd, err, c.refuse)
			}
		})
	}
}

// TestCwdMustBeWhatWasChecked: a {cwd} whose identity is not the one the
// gateway checked (swapped between the check and Resolve) is refused.
func TestCwdMustBeWhatWasChecked(t *testing.T) {
	l := newLayout(t)
	other, _, err := Identify(l.home)
	if err != nil {
		t.Fatal(err)
	}
	_, err = writeProfile("{cwd}").Resolve(Vars{Cwd: l.project, CwdID: other}, l.protected())
	if err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("Resolve with another identity: %v", err)
	}
}

// TestPathDirsThatReachTheGatewayAreDropped: a {path} directory is a
// convenience: one that resolves to / or the home is left out, not fatal.
func TestPathDirsThatReachTheGatewayAreDropped(t *testing.T) {
	l := newLayout(t)
	bin := filepath.Join(l.home, ".pyenv", "shims")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Profile{Name: "t", Network: "none", Read: []string{"{path}"}, Write: []string{"{cwd}"}}
	path := strings.Join([]string{filepath.Join(l.project, "r", "usr", "bin"), filepath.Join(l.project, "up"), bin, "/proc/self/root"}, ":")
	s, err := p.Resolve(Vars{Cwd: l.project, Home: l.home, Path: path}, l.protected())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin", filepath.Join(l.home, ".pyenv")}
	slices.Sort(want)
	if !slices.Equal(s.Read, want) {
		t.Fatalf("read = %v, want %v", s.Read, want)
	}
}

// TestBindMountsAreCaughtByIdentity: a bind mount of / (or of the state)
// inside the project is found, both as the grant itself and mounted below
// a grant. It runs in a mount namespace of its own.
func TestBindMountsAreCaughtByIdentity(t *testing.T) {
	if os.Getenv("TERMGATE_TEST_MOUNTNS") == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a mount namespace")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestBindMountsAreCaughtByIdentity$", "-test.v")
		cmd.Env = append(os.Environ(), "TERMGATE_TEST_MOUNTNS=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in a mount namespace: %v\n%s", err, out)
		}
		return
	}
	l := newLayout(t)
	bind := func(src, dst string) {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(dst, syscall.MNT_DETACH) })
	}
	bind("/", filepath.Join(l.project, "rootbind"))
	other := filepath.Join(l.root, "other")
	bind(l.state, filepath.Join(other, "statebind"))
	for _, c := range []struct{ cwd, refuse string }{
		{filepath.Join(l.project, "rootbind"), "root of the file system under another name"},
		{filepath.Join(l.project, "rootbind", "tmp"), "holds"},
		{l.project, "mounted below it"},
		{filepath.Join(other, "statebind"), "under another name"},
		{other, "mounted below it"},
	} {
		_, err := writeProfile("{cwd}").Resolve(Vars{Cwd: c.cwd, Home: l.home}, l.protected())
		if err == nil || !strings.Contains(err.Error(), c.refuse) {
			t.Errorf("cwd %s: %v, want it refused: %s", c.cwd, err, c.refuse)
		}
	}
}

// TestEnviron: a session gets the variables its profile allows, never a
// credential, an exported function or a name that is not plain.
func TestEnviron(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "LANG=C.UTF-8", "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=x",
		"BASH_FUNC_ls%%=() { :; }", "DB_PASSWORD=x", "MY_API_KEY=x", "SSH_AUTH_SOCK=/tmp/a", "RANDOM_THING=1", "weird-name=1",
	}
	got := Profile{}.Environ(env, DefaultEnvDeny())
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "LANG=C.UTF-8"}
	if !slices.Equal(got, want) {
		t.Fatalf("default allowlist: %v, want %v", got, want)
	}
	// A profile that allows everything still drops what deny names, and
	// what is not a plain name.
	got = Profile{Env: []string{"*"}}.Environ(env, DefaultEnvDeny())
	for _, kv := range got {
		name, _, _ := strings.Cut(kv, "=")
		if MatchEnv(name, DefaultEnvDeny()) || !PlainName(name) || strings.HasPrefix(name, "BASH_FUNC_") {
			t.Fatalf("%s passed", kv)
		}
	}
	if !slices.Contains(got, "SSH_AUTH_SOCK=/tmp/a") || !slices.Contains(got, "RANDOM_THING=1") {
		t.Fatalf("allow * lost variables: %v", got)
	}
	for _, n := range []string{"A", "_x", "a1_B"} {
		if !PlainName(n) {
			t.Errorf("PlainName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "1A", "BASH_FUNC_x%%", "A-B", "A=B", "É"} {
		if PlainName(n) {
			t.Errorf("PlainName(%q) = true", n)
		}
	}
}
