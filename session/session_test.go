package session

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func testManager(t *testing.T, l Limits) *Manager {
	t.Helper()
	m := NewManager(l, nil)
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return m
}

func testEnv(t testing.TB) []string {
	return append(os.Environ(), "HOME="+t.TempDir(), "TERM=xterm-256color")
}

func startBash(t *testing.T, m *Manager) *Session {
	t.Helper()
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 10 * time.Second})
	if err != nil || r.Completion != CompletionPrompt {
		t.Fatalf("WaitStart = %+v, %v", r, err)
	}
	return s
}

func TestShellIntegrationExitCodes(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	ctx := context.Background()
	for _, c := range []struct {
		cmd, out string
		code     int
	}{{"echo one", "one", 0}, {"(exit 42)", "", 42}, {"printf 'x\\ny\\n'; false", "x\ny", 1}} {
		r, err := s.Send(ctx, c.cmd, true, WaitOpts{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if r.Completion != CompletionCommandFinished || r.ExitCode == nil || *r.ExitCode != c.code || r.Output != c.out {
			t.Fatalf("%s: %+v (exit %v)", c.cmd, r, r.ExitCode)
		}
	}
	if st := s.Status(); !st.Integration || st.Program != "bash" || st.Busy {
		t.Fatalf("status: %+v", st)
	}
}

func TestUserRCIsSourcedNotEdited(t *testing.T) {
	home := t.TempDir()
	rc := "export FROM_USER_RC=yes\n"
	if err := os.WriteFile(home+"/.bashrc", []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	m := testManager(t, Limits{})
	env := append(os.Environ(), "HOME="+home)
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: env, Dir: home, Rows: 24, Cols: 80, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.WaitStart(ctx, WaitOpts{Timeout: 10 * time.Second})
	r, _ := s.Send(ctx, "echo $FROM_USER_RC; history | wc -l", true, WaitOpts{Timeout: 5 * time.Second})
	if !strings.HasPrefix(r.Output, "yes\n") {
		t.Fatalf("user rc not sourced: %q", r.Output)
	}
	b, _ := os.ReadFile(home + "/.bashrc")
	if string(b) != rc {
		t.Fatalf("user rc changed: %q", b)
	}
	if _, err := os.Stat(home + "/.bash_history"); err == nil {
		t.Fatal("the session wrote the user's history file")
	}
}

func TestCloseEscalatesToSIGKILL(t *testing.T) {
	m := testManager(t, Limits{CloseGrace: 100 * time.Millisecond})
	s := startBash(t, m)
	ctx := context.Background()
	mk := "7" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	// A job that ignores EOF, SIGHUP and SIGTERM, in its own process group.
	s.Send(ctx, "(trap '' HUP TERM; exec sleep "+mk+") &", true, WaitOpts{Timeout: 5 * time.Second})
	s.Send(ctx, "trap '' HUP TERM; set -o ignoreeof", true, WaitOpts{Timeout: 5 * time.Second})
	// The background subshell execs sleep when it is scheduled: wait for it.
	pids := pgrepArg(mk)
	for deadline := time.Now().Add(10 * time.Second); len(pids) != 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		pids = pgrepArg(mk)
	}
	if len(pids) != 1 {
		t.Fatalf("marker processes: %v", pids)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Close(ctx, 100*time.Millisecond) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if left := pgrepArg(mk); len(left) != 0 {
		t.Fatalf("survivors: %v", left)
	}
	st := s.Status()
	if st.Alive || st.Signal != "killed" {
		t.Fatalf("status after close: alive %v signal %q", st.Alive, st.Signal)
	}
	if _, err := s.Send(context.Background(), "x", false, WaitOpts{NoWait: true}); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func pgrepArg(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if st, ok := readStat(pid); ok && st.state != 'Z' && strings.Contains(string(b), arg) {
			out = append(out, pid)
		}
	}
	return out
}

func TestForegroundProgramAndBusy(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	r, _ := s.Send(context.Background(), "sleep 5", true, WaitOpts{Timeout: 200 * time.Millisecond})
	if r.Complete {
		t.Fatalf("sleep 5 complete after 200ms: %+v", r)
	}
	st := s.Status()
	if st.Program != "sleep" || !st.Busy {
		t.Fatalf("program %q busy %v, want sleep, busy", st.Program, st.Busy)
	}
	k, _ := ParseKey("ctrl+c")
	r, _ = s.SendKeys(context.Background(), []Key{k}, WaitOpts{Timeout: 5 * time.Second})
	if r.ExitCode == nil || *r.ExitCode != 130 || s.Status().Busy {
		t.Fatalf("after ctrl+c: %+v", r)
	}
}

func TestEchoOffIsReported(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	r, _ := s.Send(context.Background(), "read -s -p 'Password: ' pw; echo; echo got ${#pw}", true, WaitOpts{Timeout: 5 * time.Second})
	if r.Completion != CompletionQuiet || !strings.HasSuffix(r.Output, "Password:") {
		t.Fatalf("password prompt: %+v", r)
	}
	if !s.Status().EchoOff {
		t.Fatal("echo off not reported at a password prompt")
	}
	r, _ = s.Send(context.Background(), "hunter2-fake", true, WaitOpts{Timeout: 5 * time.Second})
	if strings.Contains(r.Output, "hunter2") || !strings.Contains(r.Output, "got 12") {
		t.Fatalf("after the secret: %q", r.Output)
	}
	if s.Status().EchoOff {
		t.Fatal("echo still reported off after the prompt")
	}
}

func TestPipeModeSession(t *testing.T) {
	m := testManager(t, Limits{})
	s, err := m.Start(Spec{Argv: []string{"cat"}, Env: testEnv(t), Rows: 24, Cols: 80, Mode: ModePipe})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Send(context.Background(), "one\ntwo", true, WaitOpts{Timeout: 5 * time.Second, Quiet: 100 * time.Millisecond})
	if err != nil || r.Output != "one\ntwo" {
		t.Fatalf("cat in pipe mode: %+v %v", r, err)
	}
	if err := m.Close(context.Background(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("cat should exit 0 on EOF: %+v", st)
	}
}

func TestManagerLimits(t *testing.T) {
	m := testManager(t, Limits{MaxSessions: 2})
	env := testEnv(t)
	var ss []*Session
	for range 2 {
		s, err := m.Start(Spec{Argv: []string{"cat"}, Env: env, Rows: 24, Cols: 80, Mode: ModePTY})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	if _, err := m.Start(Spec{Argv: []string{"cat"}, Env: env, Rows: 24, Cols: 80, Mode: ModePTY}); err == nil {
		t.Fatal("a third session started past MaxSessions=2")
	}
	m.Close(context.Background(), ss[0].ID())
	if _, err := m.Start(Spec{Argv: []string{"cat"}, Env: env, Rows: 24, Cols: 80, Mode: ModePTY}); err != nil {
		t.Fatalf("start after a close: %v", err)
	}
	if _, err := m.Start(Spec{Argv: []string{"definitely-not-a-program"}, Env: env, Rows: 24, Cols: 80, Mode: ModePTY}); err == nil || !strings.Contains(err.Error(), "command not found") {
		t.Fatalf("missing program: %v", err)
	}
}

func TestSignalTreeFindsDescendants(t *testing.T) {
	st, ok := readStat(os.Getpid())
	if !ok || st.pid != os.Getpid() || st.ppid != os.Getppid() {
		t.Fatalf("readStat(self) = %+v", st)
	}
	if _, ok := parseStat([]byte("12 (a) b) c) S 1 12 12 0")); !ok {
		t.Fatal("a name with parentheses broke parseStat")
	}
	if n := signalTree(1<<30, syscall.Signal(0)); n != 0 {
		t.Fatalf("nonexistent session has %d processes", n)
	}
}

func TestStripEcho(t *testing.T) {
	for _, c := range []struct {
		text  string
		input []string
		want  string
	}{
		{"1+1\n2", []string{"1+1"}, "2"},
		{"def f():\n...     return 1\n... \n", []string{"def f():", "    return 1", ""}, ""},
		{"select 1;\n1", []string{"select 1;"}, "1"},
		{"other\n2", []string{"1+1"}, "other\n2"},
	} {
		if got := stripEcho(c.text, c.input); got != c.want {
			t.Errorf("stripEcho(%q, %q) = %q, want %q", c.text, c.input, got, c.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"enter", "\r"}, {"ctrl+c", "\x03"}, {"CTRL+D", "\x04"}, {"esc", "\x1b"}, {"tab", "\t"},
		{"shift+tab", "\x1b[Z"}, {"alt+x", "\x1bx"}, {"f1", "\x1bOP"}, {"f12", "\x1b[24~"},
		{"pgdn", "\x1b[6~"}, {"down*3", "\x1b[B\x1b[B\x1b[B"}, {"ctrl+left", "\x1b[1;5D"}, {"backspace", "\x7f"},
	} {
		k, err := ParseKey(c.in)
		if err != nil {
			t.Errorf("ParseKey(%q): %v", c.in, err)
			continue
		}
		if got := string(k.Bytes(KeyModes{})); got != c.want {
			t.Errorf("%s = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"hyperspace", "ctrl+", "down*0", "down*x", "up*100000", "meta+q"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestKnownPrompts(t *testing.T) {
	for _, c := range []struct {
		program, line string
		match         bool
	}{
		{"python3", ">>> ", true}, {"python3.11", "... ", true}, {"python3", "result ", false},
		{"node", "> ", true}, {"psql", "postgres=# ", true}, {"psql", "mydb-> ", true}, {"psql", "app(# ", true},
		{"mysql", "mysql> ", true}, {"mysql", "    -> ", true}, {"mariadb", "MariaDB [test]> ", true},
		{"sqlite3", "sqlite> ", true}, {"sqlite3", "   ...> ", true}, {"redis-cli", "127.0.0.1:6379> ", true},
		{"redis-cli", "127.0.0.1:6379[2]> ", true}, {"gdb", "(gdb) ", true}, {"irb", "irb(main):001:0> ", true},
		{"irb", "irb(main):002> ", true}, {"mongosh", "test> ", true}, {"vim", ">>> ", false},
	} {
		fam := familyOf(c.program)
		got := fam != nil && fam.prompt.MatchString(c.line)
		if got != c.match {
			t.Errorf("%s %q: match %v, want %v", c.program, c.line, got, c.match)
		}
	}
}
