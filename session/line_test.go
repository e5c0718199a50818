package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLineState: plain typing is tracked, keys that edit the line out of
// sight make it unknown, and Enter or ctrl+c make it known and empty.
func TestLineState(t *testing.T) {
	for _, c := range []struct {
		typed   []string
		text    string
		unknown bool
	}{
		{[]string{"rm -rf ", "*"}, "rm -rf *", false},
		{[]string{"lsx\x7f"}, "ls", false},
		{[]string{"\x7f\x7f"}, "", false},
		{[]string{"ls", "\x1b[A"}, "", true},        // history recall
		{[]string{"ls", "\t"}, "", true},            // completion
		{[]string{"ls", "\x12x"}, "", true},         // reverse search
		{[]string{"\x1b[A", "\x03ls"}, "ls", false}, // ctrl+c discards the line
		{[]string{"ls -l", "\x15"}, "", true},       // ctrl+u: kills from the cursor, which may not be at the end
		{[]string{strings.Repeat("x", maxTracked+1)}, "", true},
	} {
		var l lineState
		for _, b := range c.typed {
			l.typed([]byte(b))
		}
		if l.text != c.text || l.unknown != c.unknown {
			t.Errorf("%q: line %q unknown %v, want %q %v", c.typed, l.text, l.unknown, c.text, c.unknown)
		}
		l.accepted()
		if l.text != "" || l.unknown {
			t.Errorf("%q: after Enter: %+v", c.typed, l)
		}
	}
}

// TestJudgeAtEnter: every reading of the line is judged; a line neither
// reading gives is refused, and so is an empty one not proven empty.
func TestJudgeAtEnter(t *testing.T) {
	deny := errors.New("denied")
	judge := func(seen *[]string) func(string) error {
		return func(line string) error {
			*seen = append(*seen, line)
			if strings.Contains(line, "rm") {
				return deny
			}
			return nil
		}
	}
	for _, c := range []struct {
		name    string
		shown   string
		shownOK bool
		typed   lineState
		want    error
		judged  []string
	}{
		{"screen and typing agree", "ls", true, lineState{text: "ls"}, nil, []string{"ls"}},
		{"the screen lies (a forged line)", "ls", true, lineState{text: "rm -rf *"}, deny, []string{"ls", "rm -rf *"}},
		{"the screen shows more", "rm -rf *", true, lineState{text: "ls"}, deny, []string{"rm -rf *"}},
		{"no prompt found: what was typed", "", false, lineState{text: "rm -rf *"}, deny, []string{"rm -rf *"}},
		{"history recall at a found prompt", "rm -rf *", true, lineState{unknown: true}, deny, []string{"rm -rf *"}},
		{"unreadable", "", false, lineState{unknown: true}, errUnreadable, nil},
		{"empty, proven", "", true, lineState{}, nil, nil},
		{"empty, nothing typed, no prompt found", "", false, lineState{}, nil, nil},
		{"empty on the screen, keys typed", "", true, lineState{unknown: true}, errNotProvenEmpty, nil},
		{"blank", "   ", true, lineState{text: "   "}, nil, nil},
	} {
		var seen []string
		err := judgeAtEnter(judge(&seen), c.shown, c.shownOK, c.typed)
		if !errors.Is(err, c.want) || strings.Join(seen, "|") != strings.Join(c.judged, "|") {
			t.Errorf("%s: err %v judged %q, want %v %q", c.name, err, seen, c.want, c.judged)
		}
	}
}

// TestMarksNeedTheKey: with a key set, a mark without it (a program
// printing ESC]133;B) is ignored, and the key is not kept among the
// mark's parameters.
func TestMarksNeedTheKey(t *testing.T) {
	s := NewScreen(5, 40, 10, nil)
	s.SetMarkKey("k3y")
	s.Write([]byte("\x1b]133;A;tg=k3y\a$ \x1b]133;B;tg=k3y\arm -rf *"))
	s.Write([]byte("\x1b]133;B\a\x1b]133;B;tg=wrong\a\x1b]133;B;tg=k3y2\a\x1b]133;B;xtg=k3y\a"))
	marks := s.Marks(0)
	if len(marks) != 2 || marks[1].Kind != MarkInputStart || marks[1].Pos.Col != 2 || marks[1].Extra != "" {
		t.Fatalf("marks %+v", marks)
	}
	s.Write([]byte("\r\n\x1b]133;A;k=s;tg=k3y\a> \x1b]133;D;7;tg=k3y\a"))
	marks = s.Marks(2)
	if len(marks) != 2 || marks[0].Extra != "k=s" || !marks[1].HasCode || marks[1].ExitCode != 7 {
		t.Fatalf("marks %+v", marks)
	}
	// Without a key (no shell integration), every mark counts, as before.
	plain := NewScreen(5, 40, 10, nil)
	plain.Write([]byte("\x1b]133;B\a"))
	if len(plain.Marks(0)) != 1 {
		t.Fatal("a screen without a key dropped a mark")
	}
}

// TestLogicalLine: the input is read from the first row it wraps from to
// the end of the last, blanks at the wrap kept.
func TestLogicalLine(t *testing.T) {
	s := NewScreen(5, 10, 10, nil)
	s.Write([]byte("old\r\n$ rm" + strings.Repeat(" ", 6) + "-rf *"))
	cur := s.CursorPos()
	from, to := s.LogicalLine(Pos{Line: cur.Line})
	text, _ := s.Text(from, to)
	if text != "$ rm      -rf *" {
		t.Fatalf("logical line %q (%v to %v)", text, from, to)
	}
	// The cursor moved back to the first row: the rows after it count.
	s.Write([]byte("\x1b[1A\x1b[3G"))
	from, to = s.LogicalLine(s.CursorPos())
	if text, _ = s.Text(from, to); text != "$ rm      -rf *" {
		t.Fatalf("from the first row: %q", text)
	}
}

// TestIdentifyByExecutable: a process is named by its executable, not by
// the argv[0] it set; names of variants and aliases map to their family.
func TestIdentifyByExecutable(t *testing.T) {
	cmd := exec.Command("bash", "-c", `exec -a innocent sleep 30`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if strings.HasPrefix(string(b), "innocent") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process did not exec: %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := procName(cmd.Process.Pid); got != "innocent" {
		t.Fatalf("procName = %q: the test does not show what it means to", got)
	}
	if got := identify(cmd.Process.Pid); got != "sleep" {
		t.Fatalf("identify = %q, want sleep", got)
	}
	for in, want := range map[string]string{"rbash": "bash", "python3.11": "python3", "python3": "python3", "nodejs": "node", "vim": "vim", "ruby3.1": "ruby"} {
		if got := programAlias(in); got != want {
			t.Errorf("programAlias(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	variant := filepath.Join(dir, "tool.basic")
	if err := os.WriteFile(variant, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tool.basic", filepath.Join(dir, "tool")); err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(dir, "other.tiny")
	if err := os.WriteFile(lone, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := exeName(variant); got != "tool" {
		t.Errorf("exeName(%s) = %q, want tool", variant, got)
	}
	if got := exeName(lone); got != "other.tiny" {
		t.Errorf("exeName(%s) = %q: no link names it otherwise", lone, got)
	}
}

// TestRelayIsFollowed: script runs bash on a terminal of its own; the
// program reading what is typed is that bash, not script, and so is the
// session's own program (the one that reads once a command ends).
func TestRelayIsFollowed(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script is not installed (scripts/dev deps installs it)")
	}
	m := testManager(t, Limits{})
	s := startBash(t, m)
	if _, err := s.Send(context.Background(), "exec script -qc 'bash --norc' /dev/null", true, WaitOpts{Timeout: 5 * time.Second, Quiet: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// The session's own process is script now; without following the
	// relay, the program would be script.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Status()
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(st.Pid) + "/exe")
		if filepath.Base(exe) == "script" && st.Program == "bash" {
			if !st.Judged || !st.ReadsLines || st.Own != "bash" {
				t.Fatalf("status %+v", st)
			}
			inner, _ := os.Readlink("/proc/" + strconv.Itoa(st.ProgramPid) + "/exe")
			if st.ProgramPid == st.Pid || filepath.Base(inner) != "bash" {
				t.Fatalf("program pid %d (%s) is not the bash behind script (session pid %d)", st.ProgramPid, inner, st.Pid)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("own executable %q, program %q: want bash behind script", exe, st.Program)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefusalAtEnterWaitsForTheRedraw: after a line refused at Enter is
// cancelled, what the program prints of the cancel (python's
// KeyboardInterrupt and its new prompt, here after a slow SIGINT handler)
// is the cancel's, not the next input's output: the next input returns
// its own output only. Returning once the terminal looked settled, the
// refusal let the next input start before python redrew.
func TestRefusalAtEnterWaitsForTheRedraw(t *testing.T) {
	m := testManager(t, Limits{})
	refuse := func(line string) error {
		if strings.Contains(line, "forbidden") {
			return errors.New("judged: forbidden")
		}
		return nil
	}
	for _, c := range []struct {
		argv        []string
		setup, line string
	}{
		{[]string{"python3", "-q"}, "import signal, time; signal.signal(signal.SIGINT, lambda *a: (time.sleep(1.5), signal.default_int_handler(*a)))", "2*21"},
		{[]string{"sqlite3"}, "", "select 2*21;"},
	} {
		t.Run(c.argv[0], func(t *testing.T) {
			s := startProgram(t, m, c.argv...)
			if c.setup != "" {
				send(t, s, c.setup)
			}
			for i := 0; i < 2; i++ {
				_, err := s.SendKeys(context.Background(), keysFor(t, "'forbidden'"), WaitOpts{Timeout: 20 * time.Second, Judge: refuse})
				if !errors.Is(err, ErrLineRefused) {
					t.Fatalf("not refused: %v", err)
				}
				if r := send(t, s, c.line); r.Output != "42" {
					t.Fatalf("round %d: output %q, want 42", i, r.Output)
				}
			}
		})
	}
}

// keysFor is text then Enter as keys.
func keysFor(t *testing.T, text string) []Key {
	t.Helper()
	var keys []Key
	for _, c := range strings.Split(text, "") {
		keys = append(keys, Key{Name: c, Repeat: 1, Literal: true})
	}
	enter, err := ParseKey("enter")
	if err != nil {
		t.Fatal(err)
	}
	return append(keys, enter)
}
