package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// TestSortStartLog: a refusal that names only paths the session may not
// write (or none) is the sandbox's; one on a path it may write, and any
// other error, is the user's to see. Warnings are deduplicated and
// bounded; escape sequences are gone.
func TestSortStartLog(t *testing.T) {
	log := strings.Join([]string{
		"pyenv: cannot rehash: /home/u/.pyenv/shims isn't writable",
		"mktemp: failed to create file via template '/home/u/.rc.XXXX': Permission denied",
		"bash: /home/u/.rc-state: Read-only file system",
		"bash: ~/.cache/x: Operation not permitted",
		"bash: /w/project/out: Permission denied",
		"bash: foo: command not found",
		"\x1b[31mbash: line 3: syntax error\x1b[0m",
		"pyenv: cannot rehash: /home/u/.pyenv/shims isn't writable",
		"touch: cannot touch: Permission denied",
		"",
	}, "\n")
	shown, warnings := sortStartLog(log, []string{"/w/project", "/tmp/priv"}, "/home/u")
	wantShown := []string{"bash: /w/project/out: Permission denied", "bash: foo: command not found", "bash: line 3: syntax error"}
	if !slices.Equal(shown, wantShown) {
		t.Errorf("shown = %q, want %q", shown, wantShown)
	}
	if len(warnings) != 5 || !strings.Contains(warnings[0], "isn't writable") || !strings.Contains(warnings[3], "~/.cache/x") {
		t.Errorf("warnings = %q", warnings)
	}
	var many strings.Builder
	for i := range maxStartupWarnings + 7 {
		many.WriteString("/home/u/f" + strings.Repeat("x", i) + ": Permission denied\n")
	}
	_, warnings = sortStartLog(many.String(), nil, "/home/u")
	if len(warnings) != maxStartupWarnings+1 || warnings[maxStartupWarnings] != "… and 7 more" {
		t.Errorf("bounded warnings: %d, last %q", len(warnings), warnings[len(warnings)-1])
	}
}

// FuzzSortStartLog: whatever a user's rc prints to standard error, the
// sort neither panics nor returns a line with a control character or
// longer than its bound, and no warning is lost without being counted.
func FuzzSortStartLog(f *testing.F) {
	f.Add("pyenv: cannot rehash: ~/.pyenv/shims isn't writable\nx: command not found\n", "/w")
	f.Add("\x1b]0;title\x07/etc/x: EACCES\r\n'/home/u/a b': Permission denied", "/home/u/a")
	f.Add(strings.Repeat("é", 400)+" Permission denied /x", "")
	f.Fuzz(func(t *testing.T, log, writable string) {
		shown, warnings := sortStartLog(log, []string{writable}, "/home/u")
		for _, l := range append(shown, warnings...) {
			if utf8.RuneCountInString(l) > maxStartupLine+1 {
				t.Fatalf("line of %d runes", utf8.RuneCountInString(l))
			}
			for _, r := range l {
				if r < 0x20 && r != '\t' || r == 0x7f {
					t.Fatalf("control character %q in %q", r, l)
				}
			}
		}
		if len(warnings) > maxStartupWarnings+1 {
			t.Fatalf("%d warnings", len(warnings))
		}
	})
}

// TestReadStartLogOpensOnlyWhatTheSessionMade: the session may write in
// the directory of its start log, so a link there (to a file the session
// may not read) is not followed, and a FIFO does not block the gateway.
func TestReadStartLogOpensOnlyWhatTheSessionMade(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "gateway-only")
	if err := os.WriteFile(secret, []byte("gateway secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if b, err := readStartLog(link); err == nil {
		t.Fatalf("a link was followed: %q", b)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readStartLog(fifo); err == nil {
		t.Fatal("a FIFO was read")
	}
	plain := filepath.Join(dir, "startup.log")
	if err := os.WriteFile(plain, []byte(strings.Repeat("x", maxStartLog+10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readStartLog(plain); err != nil || len(b) != maxStartLog {
		t.Fatalf("a plain log: %d bytes, %v", len(b), err)
	}
}
