package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testSpec(t *testing.T, l layout) Spec {
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

func cgroupName(t *testing.T) string {
	return fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

// launch runs spec through the launcher and returns its output, or the
// launcher's refusal.
func launch(t *testing.T, s Spec, attached bool, swap func()) (string, error) {
	t.Helper()
	if !attached {
		_, cg, err := s.Attach(cgroupName(t), "")
		if err != nil {
			return "", err
		}
		if cg != nil {
			t.Cleanup(func() { _ = cg.Kill(); _ = cg.Remove() })
		}
	}
	if swap != nil {
		swap()
	}
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	l, err := Prepare(cmd, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = l.Started(cmd)
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
	out, err := launch(t, testSpec(t, l), false, nil)
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
			if _, cg, err := s.Attach(cgroupName(t), ""); err != nil {
				t.Fatal(err)
			} else if cg != nil {
				t.Cleanup(func() { _ = cg.Kill(); _ = cg.Remove() })
			}
			out, err := launch(t, s, true, func() { c.swap(l) })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was started") {
				t.Fatalf("launch = %q, %v; want a refusal saying %q", out, err, c.want)
			}
		})
		t.Run(c.name+", before the seal", func(t *testing.T) {
			l := newLayout(t)
			s := testSpec(t, l)
			c.swap(l)
			out, err := launch(t, s, false, nil)
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
	_, err := launch(t, s, true, nil)
	if err == nil || !strings.Contains(err.Error(), "never checked") {
		t.Fatalf("an unsealed spec: %v", err)
	}
}
