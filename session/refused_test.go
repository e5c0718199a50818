package session

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFileRefusals: a permission error on a path no grant covers is the
// sandbox's; on a path granted read-only, a refused write; on a path the
// session may write, the file system's own (left out).
func TestFileRefusals(t *testing.T) {
	s := &Session{grants: &grants{read: []string{"/usr", "/home/u/notes.txt"}, write: []string{"/w/project", "/dev/null"}, home: "/home/u"}}
	out := strings.Join([]string{
		"cat: /home/u/.ssh/id_ed25519: Permission denied",
		"touch: cannot touch '/usr/lib/x': Permission denied",
		"bash: /w/project/locked: Permission denied",
		"cp: cannot create regular file '~/.aws/x': Permission denied",
		"cat: /home/u/.ssh/id_ed25519: Permission denied",
		"ls: cannot access '/nonexistent': No such file or directory",
		"echo /home/u/elsewhere fine",
	}, "\n")
	got := s.FileRefusals(out)
	want := []FileRefusal{{"/home/u/.ssh/id_ed25519", "file"}, {"/usr/lib/x", "write"}, {"/home/u/.aws/x", "file"}}
	if !slices.Equal(got, want) {
		t.Fatalf("FileRefusals = %v, want %v", got, want)
	}
	if (&Session{}).FileRefusals(out) != nil {
		t.Fatal("an unconfined session reported refusals")
	}
	var many strings.Builder
	for i := range 20 {
		many.WriteString("x: /f" + strings.Repeat("x", i) + ": Permission denied\n")
	}
	if n := len(s.FileRefusals(many.String())); n != maxFileRefusals {
		t.Fatalf("%d refusals, want %d", n, maxFileRefusals)
	}
}

// FuzzFileRefusals: whatever a program prints, reading it neither panics
// nor yields more than the bound, and every path is absolute, clean and
// outside what the session may write.
func FuzzFileRefusals(f *testing.F) {
	f.Add("cat: /home/u/.ssh/id: Permission denied\n")
	f.Add("x: '~/../../etc': Operation not permitted")
	f.Add("EACCES /w/project/../../x\x00 /usr/./lib")
	s := &Session{grants: &grants{read: []string{"/usr"}, write: []string{"/w/project"}, home: "/home/u"}}
	f.Fuzz(func(t *testing.T, out string) {
		got := s.FileRefusals(out)
		if len(got) > maxFileRefusals {
			t.Fatalf("%d refusals", len(got))
		}
		for _, r := range got {
			if !strings.HasPrefix(r.Path, "/") || r.Path != filepath.Clean(r.Path) || covered(r.Path, s.grants.write) {
				t.Fatalf("refusal %+v", r)
			}
		}
	})
}
