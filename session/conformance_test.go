package session

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// The emulator was chosen by this test: real programs run in a real PTY, and
// the bytes they print are fed to each candidate; a candidate passes a case
// when its screen shows what a human would see. The module proxy serves two
// candidates: hinshun/vt10x (a complete emulator) and charmbracelet/x/ansi
// (a parser only, on which Screen is built). vt10x has no scrollback, so it
// cannot give the ≥ 10,000 lines of history sessions need, and it fails the
// cases marked below; Screen must pass every case.

type emulator interface {
	Write([]byte) (int, error)
	screen() string       // visible screen, lines trimmed
	history(n int) string // last n lines of scrollback + screen
}

type ourEmu struct{ *Screen }

func (e ourEmu) screen() string       { return e.Render() }
func (e ourEmu) history(n int) string { return e.Scrollback(n) }

type vt10xEmu struct{ vt10x.Terminal }

func (e vt10xEmu) screen() string {
	lines := strings.Split(e.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}
func (e vt10xEmu) history(n int) string { return e.screen() } // no scrollback

type conformanceCase struct {
	name string
	argv []string
	keys []string // typed after the program started, each once the screen shows its ready text
	// ready[i] is what the screen shows once the program is ready for
	// keys[i]: it has drawn what the case judges and waits for input.
	ready []string
	after bool // judge the output after the last key, not before it
	check func(screen, history string) error
}

func contains(want ...string) func(string, string) error {
	return func(scr, _ string) error {
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return fmt.Errorf("screen lacks %q", w)
			}
		}
		return nil
	}
}

func TestEmulatorConformance(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	var lines strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&lines, "numbered line %d\n", i)
	}
	os.WriteFile(file, []byte(lines.String()), 0o644)
	os.Mkdir(filepath.Join(dir, "subdir"), 0o755)

	cases := []conformanceCase{
		{name: "vim", argv: []string{"vim", "-u", "NONE", "-N", file}, keys: []string{":q\r"}, ready: []string{"numbered line 20"},
			check: func(scr, _ string) error {
				if err := contains("numbered line 1", "numbered line 20")(scr, ""); err != nil {
					return err
				}
				return nil
			}},
		{name: "less", argv: []string{"less", file}, keys: []string{"q"}, ready: []string{"numbered line 20"},
			check: func(scr, _ string) error {
				if !strings.Contains(scr, "numbered line 1\n") || strings.Contains(scr, "numbered line 60") {
					return fmt.Errorf("want the first page of the file")
				}
				return nil
			}},
		{name: "top", argv: []string{"top", "-d", "1"}, keys: []string{"q"}, ready: []string{"COMMAND"},
			check: contains("load average", "PID", "COMMAND")},
		{name: "python REPL", argv: []string{"python3", "-q"}, after: true, keys: []string{"print('con' + 'formance')\r", "exit()\r"},
			ready: []string{">>>", "conformance\n>>>"},
			check: contains(">>> print('con' + 'formance')\nconformance\n>>>")},
		{name: "progress bar", argv: []string{"sh", "-c", `printf 'step 10%%\rstep 50%%\rstep 100%%\n'`},
			check: func(scr, _ string) error {
				if !strings.Contains(scr, "step 100%") || strings.Contains(scr, "step 10%\n") || strings.Contains(scr, "50") {
					return fmt.Errorf("\\r overwrites not resolved")
				}
				return nil
			}},
		{name: "coloured ls", argv: []string{"ls", "--color=always", "-F", dir},
			check: func(scr, _ string) error {
				if strings.ContainsAny(scr, "\x1b") || strings.Contains(scr, "[0m") || !strings.Contains(scr, "subdir/") {
					return fmt.Errorf("colours leaked or names missing")
				}
				return nil
			}},
		{name: "CJK line", argv: []string{"sh", "-c", `printf '日本語のテキスト|end\n中文|x\n'`},
			check: contains("日本語のテキスト|end\n中文|x")},
		{name: "combining marks, ZWJ", argv: []string{"sh", "-c", `printf 'cafe\314\201 नमस्ते สวัสดีที่นี่ 👩\342\200\215💻 ❤\357\270\217 🇫🇷|end\n'`},
			check: func(scr, hist string) error {
				want := "cafe\u0301 नमस्ते สวัสดีที่นี่ 👩\u200d💻 ❤\ufe0f 🇫🇷|end"
				if !strings.Contains(scr, want) || !strings.Contains(hist, want) {
					return fmt.Errorf("clusters lost or split")
				}
				return nil
			}},
		{name: "space at the wrap column", argv: []string{"sh", "-c", `printf '%076d to server\n' 0`},
			check: func(_, hist string) error {
				if !strings.Contains(hist, strings.Repeat("0", 76)+" to server") {
					return fmt.Errorf("the blank in the last column was dropped when the rows joined")
				}
				return nil
			}},
		{name: "scrollback 10000 lines", argv: []string{"seq", "1", "12000"},
			check: func(_, hist string) error {
				h := strings.Split(hist, "\n")
				if len(h) < 10000 || h[len(h)-1] != "12000" || h[len(h)-10000] != "2001" {
					return fmt.Errorf("history does not hold the last 10,000 lines")
				}
				return nil
			}},
	}

	type result struct{ ours, vt error }
	results := map[string]result{}
	for _, c := range cases {
		if _, err := exec.LookPath(c.argv[0]); err != nil {
			t.Logf("%s: %s not installed, skipped", c.name, c.argv[0])
			continue
		}
		raw := capture(t, c)
		ours := ourEmu{NewScreen(24, 80, DefaultScrollback, nil)}
		vt := vt10xEmu{vt10x.New(vt10x.WithSize(80, 24))}
		ours.Write(raw)
		vt.Write(raw)
		r := result{
			ours: c.check(ours.screen(), ours.history(DefaultScrollback)),
			vt:   c.check(vt.screen(), vt.history(DefaultScrollback)),
		}
		results[c.name] = r
		if r.ours != nil {
			t.Errorf("%s: Screen fails: %v\nscreen:\n%s", c.name, r.ours, ours.screen())
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-24s %-8s %s\n", "case", "Screen", "vt10x")
	for _, c := range cases {
		r, ok := results[c.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&table, "%-24s %-8s %s\n", c.name, verdict(r.ours), verdict(r.vt))
	}
	t.Log(table.String())
}

func verdict(err error) string {
	if err == nil {
		return "pass"
	}
	return "FAIL (" + err.Error() + ")"
}

// capture runs a case in a real PTY and returns what it printed up to the
// moment before its exit keys, so full-screen programs are judged on their
// screen rather than on the restored shell screen. Terminal queries are
// answered so that programs do not stall.
func capture(t *testing.T, c conformanceCase) []byte {
	t.Helper()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "HOME="+t.TempDir(), "LANG=C.UTF-8")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	responder := NewScreen(24, 80, 100, func(b []byte) { f.Write(b) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 32<<10)
		for {
			n, err := f.Read(b)
			if n > 0 {
				mu.Lock()
				buf.Write(b[:n])
				responder.Write(b[:n])
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	var snapshot []byte
	screen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return responder.Render()
	}
	// Each key goes once the program shows it is ready for it: no fixed
	// pause, however busy the machine.
	for i, k := range c.keys {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(screen()+"\n", c.ready[i]) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("%s: the screen never showed %q before key %q:\n%s", c.name, c.ready[i], k, screen())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if i == len(c.keys)-1 && !c.after {
			mu.Lock()
			snapshot = append([]byte{}, buf.Bytes()...)
			mu.Unlock()
		}
		f.Write([]byte(k))
	}
	// The program ends by itself (the last key quits it, or it has no
	// keys); one that does not within the bound is killed.
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	<-done
	f.Close()
	if snapshot != nil {
		return snapshot
	}
	mu.Lock()
	defer mu.Unlock()
	return buf.Bytes()
}
