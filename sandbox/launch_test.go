package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func testSpec(t testing.TB, l layout) Spec {
	t.Helper()
	p := Profile{Name: "t", Network: "none",
		Read:    []string{"/usr", "/lib", "/lib64", "/bin", "/etc", l.root + "/ro"},
		Write:   []string{"{cwd}"},
		Devices: []string{"/dev/null"}}
	if err := os.MkdirAll(l.root+"/ro", 0o755); err != nil {
		t.Fatal(err)
	}
	id, _, err := Identify(l.project)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Resolve(Vars{Cwd: l.project, CwdID: id, Home: l.home}, l.protected())
	if err != nil {
		t.Fatal(err)
	}
	s.Argv, s.Dir, s.Env = []string{"/bin/sh", "-c", "pwd"}, l.project, []string{"PATH=/usr/bin:/bin"}
	return s
}

func cgroupName(t testing.TB) string {
	return fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// launch runs spec through Start and returns its output, or the
// refusal. swap, when set, runs after the spec was sealed and before the
// launcher starts.
func launch(t *testing.T, s Spec, swap func()) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	l, err := Start(cmd, s, Options{Name: cgroupName(t)}, func() error {
		if swap != nil {
			swap()
		}
		return cmd.Start()
	})
	if err != nil {
		return out.String(), err
	}
	werr := cmd.Wait()
	if eerr := l.End(); eerr != nil {
		t.Errorf("End: %v", eerr)
	}
	if werr != nil {
		err = fmt.Errorf("the program failed: %v: %s", werr, out.String())
	}
	return out.String(), err
}

// launchRaw runs spec through the launcher as it is, without Start's
// Attach: what the launcher itself does with a spec it is handed (or
// one the test attached itself, to look at its status and cgroup).
func launchRaw(t *testing.T, s Spec) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	ln, err := prepare(cmd, s)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ln.closeChildEnds(cmd)
	if err := ln.send(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	err = ln.started(cmd)
	werr := cmd.Wait()
	if err == nil && werr != nil {
		err = fmt.Errorf("the program failed: %v: %s", werr, out.String())
	}
	return out.String(), err
}

// TestLauncherRefusesWhatWasReplaced: between the gateway's check and the
// launcher's open, the working directory or a granted path is swapped
// for a link to / or another directory: the launch fails, and says why;
// nothing runs there.
func TestLauncherRefusesWhatWasReplaced(t *testing.T) {
	if Probe().LandlockABI < MinABI {
		t.Skip("this kernel cannot confine")
	}
	l := newLayout(t)
	out, err := launch(t, testSpec(t, l), nil)
	if err != nil || strings.TrimSpace(out) != l.project {
		t.Fatalf("an untouched spec: %q, %v", out, err)
	}
	moveAway := func(p string) {
		if err := os.Rename(p, p+fmt.Sprint(".old", time.Now().UnixNano())); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		swap func(l layout)
		want string
	}{
		{"cwd replaced by a link to /", func(l layout) { moveAway(l.project); os.Symlink("/", l.project) }, "symbolic link"},
		{"cwd replaced by /proc/self/root", func(l layout) { moveAway(l.project); os.Symlink("/proc/self/root", l.project) }, "symbolic link"},
		{"cwd replaced by another directory", func(l layout) { moveAway(l.project); os.Mkdir(l.project, 0o755) }, "replaced"},
		{"a parent of the cwd replaced by a link", func(l layout) {
			src := filepath.Dir(l.project)
			moveAway(src)
			os.MkdirAll(filepath.Join(l.root, "elsewhere", "project"), 0o755)
			os.Symlink(filepath.Join(l.root, "elsewhere"), src)
		}, "symbolic link"},
		{"a read grant replaced by a link to /", func(l layout) { moveAway(l.root + "/ro"); os.Symlink("/", l.root+"/ro") }, "symbolic link"},
		{"a read grant replaced by a link to /etc", func(l layout) { moveAway(l.root + "/ro"); os.Symlink("/etc", l.root+"/ro") }, "symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name+", after the seal", func(t *testing.T) {
			l := newLayout(t)
			s := testSpec(t, l)
			out, err := launch(t, s, func() { c.swap(l) })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was started") {
				t.Fatalf("launch = %q, %v; want a refusal saying %q", out, err, c.want)
			}
		})
		t.Run(c.name+", before the seal", func(t *testing.T) {
			l := newLayout(t)
			s := testSpec(t, l)
			c.swap(l)
			out, err := launch(t, s, nil)
			if err == nil || !strings.Contains(err.Error(), "nothing was started") {
				t.Fatalf("launch = %q, %v; want a refusal", out, err)
			}
		})
	}
}

// TestLauncherNeedsASealedSpec: a spec that did not pass Attach (no
// identities) is refused by the launcher itself.
func TestLauncherNeedsASealedSpec(t *testing.T) {
	l := newLayout(t)
	s := testSpec(t, l)
	s.DirID = FileID{}
	_, err := launchRaw(t, s)
	if err == nil || !strings.Contains(err.Error(), "never checked") {
		t.Fatalf("an unsealed spec: %v", err)
	}
}

// TestDataLimitComesAtTheExec: the data limit (RLIMIT_DATA, the
// profile's memory per process) is lowered at the exec, once the
// launcher's own runtime is done allocating (the exec gate's filter is
// built after the other limits): a limit far below what the launcher
// itself maps still starts the program, which runs under it, however much
// the launcher allocates for the exec itself.
func TestDataLimitComesAtTheExec(t *testing.T) {
	if Probe().LandlockABI < MinABI {
		t.Skip("this kernel cannot confine")
	}
	check := func(t *testing.T, out string) {
		if got := strings.TrimSpace(out); got != "1024" {
			t.Fatalf("the program's data limit is %q KiB, want 1024", got)
		}
	}
	spec := func(t *testing.T) Spec {
		s := testSpec(t, newLayout(t))
		s.Limits.Memory = 1 << 20
		s.Argv = []string{"/bin/sh", "-c", "ulimit -d"} // in KiB
		// An environment of 720 KiB: the launcher copies it for execve,
		// which takes memory its heap does not have yet.
		for i := range 12 {
			s.Env = append(s.Env, fmt.Sprintf("BIG%d=%s", i, strings.Repeat("x", 60<<10)))
		}
		return s
	}
	t.Run("plain", func(t *testing.T) {
		out, err := launch(t, spec(t), nil)
		if err != nil {
			t.Fatalf("a launch with a 1 MiB data limit: %v", err)
		}
		check(t, out)
	})
	t.Run("exec gate", func(t *testing.T) {
		needGate(t)
		out, werr, _, _ := gatedSpec(t, spec(t), &recorder{})
		if werr != nil {
			t.Fatalf("a gated launch with a 1 MiB data limit: %v: %s", werr, out)
		}
		check(t, out)
	})
}

// TestLaunchInItsCgroups: the program runs in every cgroup of its
// launch, one per hierarchy, now that the gateway (not the launcher)
// puts the launcher there, before it sends the spec.
func TestLaunchInItsCgroups(t *testing.T) {
	l := newLayout(t)
	s := testSpec(t, l)
	s.Argv = []string{"/bin/sh", "-c", "read x"}
	cmd := exec.Command("/bin/false")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	name := cgroupName(t)
	launch, err := Start(cmd, s, Options{Name: name}, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer launch.End()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	stdin.Close() // read ends at EOF (exit status 1)
	_ = cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if launch.cgroup == nil {
		t.Skip("no cgroup here")
	}
	in := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasSuffix(line, "/"+name) {
			in++
		}
	}
	if in == 0 || in != len(launch.cgroup.ProcsFiles()) {
		t.Fatalf("the program is in %d of its launch's %d cgroups (%s): %s", in, len(launch.cgroup.ProcsFiles()), name, b)
	}
}

// TestUnconfinedLaunchKeepsTheOpenFilesLimit: a launch that sets no
// limits (unconfined, its execs gated) gives its program the soft limit
// of open files it was started with, not the one the launcher's Go
// runtime raised for itself.
func TestUnconfinedLaunchKeepsTheOpenFilesLimit(t *testing.T) {
	needGate(t)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 1026 {
		t.Skipf("the hard limit of open files (%d) leaves no room below it", lim.Max)
	}
	low := syscall.Rlimit{Cur: 1024, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	out, werr, _ := gated(t, true, &recorder{}, "/bin/sh", "-c", "ulimit -Sn")
	if werr != nil {
		t.Fatalf("the launch: %v: %s", werr, out)
	}
	if got := strings.TrimSpace(out); got != "1024" {
		t.Fatalf("the program's soft limit of open files is %s, want the 1024 it was started with", got)
	}
}
