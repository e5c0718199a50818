package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Regression tests for one call's result holding exactly that call's
// output, and for calls that overlap.

func startProgram(t *testing.T, m *Manager, argv ...string) *Session {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Skipf("%s is not installed", argv[0])
	}
	s, err := m.Start(Spec{Argv: argv, Env: testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 20 * time.Second})
	if err != nil || !r.Complete {
		t.Fatalf("WaitStart(%v) = %+v, %v", argv, r, err)
	}
	return s
}

func send(t *testing.T, s *Session, text string) Result {
	t.Helper()
	r, err := s.Send(context.Background(), text, true, WaitOpts{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Send(%q): %v", text, err)
	}
	return r
}

func wantResult(t *testing.T, r Result, out string, c Completion) {
	t.Helper()
	if r.Output != out || r.Completion != c {
		t.Fatalf("result %+v: want output %q, completion %s", r, out, c)
	}
}

// TestMultiLineSendCoversEveryLine: a send of several lines returns what
// every line printed, without echoes or continuation prompts, once the
// program is back at its prompt after the last line; the next call's
// result is its own.
func TestMultiLineSendCoversEveryLine(t *testing.T) {
	shells := []string{"bash", "zsh"}
	for _, sh := range shells {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			m := testManager(t, Limits{})
			s := startProgram(t, m, sh)
			for _, c := range []struct{ in, out string }{
				{"echo one\necho two\necho three", "one\ntwo\nthree"},
				{"cat <<EOF\nalpha\nbeta\nEOF", "alpha\nbeta"},
				{"for i in 1 2 3\ndo echo n$i\ndone", "n1\nn2\nn3"},
				{"f() {\n  echo in-f\n}\nf", "in-f"},
				{"echo a\n\necho b", "a\nb"},
				{"x=1\ny=2\necho $((x+y))", "3"},
			} {
				r := send(t, s, c.in)
				wantResult(t, r, c.out, CompletionCommandFinished)
				if r.ExitCode == nil || *r.ExitCode != 0 {
					t.Fatalf("%q: exit code %v", c.in, r.ExitCode)
				}
			}
			r := send(t, s, "true\nfalse")
			if r.ExitCode == nil || *r.ExitCode != 1 {
				t.Fatalf("the last line's exit code: %+v", r)
			}
			// An unfinished command: the result is the continuation prompt.
			r = send(t, s, "echo start\nfor i in 1 2")
			if r.Output != "start" || !r.Continued || !r.Complete {
				t.Fatalf("unfinished: %+v", r)
			}
			wantResult(t, send(t, s, "do echo m$i; done"), "m1\nm2", CompletionCommandFinished)
			wantResult(t, send(t, s, "echo after"), "after", CompletionCommandFinished)
		})
	}
}

func TestMultiLineSendREPLs(t *testing.T) {
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		m := testManager(t, Limits{})
		s := startProgram(t, m, "python3", "-q")
		wantResult(t, send(t, s, "print(1)\nprint(2)\nprint(3)"), "1\n2\n3", CompletionPrompt)
		wantResult(t, send(t, s, "def twice(x):\n    return 2*x\n"), "", CompletionPrompt)
		wantResult(t, send(t, s, "for i in range(3):\n    print('row', i)\n"), "row 0\nrow 1\nrow 2", CompletionPrompt)
		wantResult(t, send(t, s, "x = twice(20)\nx + 2"), "42", CompletionPrompt)
		wantResult(t, send(t, s, "'after'"), "'after'", CompletionPrompt)
	})
	t.Run("sqlite3", func(t *testing.T) {
		t.Parallel()
		m := testManager(t, Limits{})
		s := startProgram(t, m, "sqlite3")
		wantResult(t, send(t, s, "create table t(x);\ninsert into t values (40),(2);\nselect sum(x) from t;"), "42", CompletionPrompt)
		wantResult(t, send(t, s, "select 1;\nselect 2;"), "1\n2", CompletionPrompt)
		wantResult(t, send(t, s, "select\n count(*)\n from t;"), "2", CompletionPrompt)
	})
}

// TestOneCallAtATime: a second call on a busy session waits for the first
// within its own timeout, or fails saying which call is in flight, having
// typed nothing; reads of the screen need no turn.
func TestOneCallAtATime(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	ctx := context.Background()
	flag := filepath.Join(t.TempDir(), "go")
	first := make(chan Result, 1)
	go func() {
		r, err := s.Send(ctx, "while [ ! -e "+flag+" ]; do sleep 0.01; done; echo first-done", true, WaitOpts{Timeout: 30 * time.Second})
		if err != nil {
			t.Errorf("first send: %v", err)
		}
		first <- r
	}()
	waitScreen(t, s, "first-done")
	// The first call holds the turn until the flag exists.
	_, err := s.Send(ctx, "echo intruder", true, WaitOpts{Timeout: 50 * time.Millisecond})
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) || busy.Holder != opSend || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("second send: %v", err)
	}
	if _, err := s.SendKeys(ctx, []Key{{Name: "x", Repeat: 1, Literal: true}}, WaitOpts{Timeout: 10 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		t.Fatalf("keys on a busy session: %v", err)
	}
	if _, err := s.Read(ctx, WaitOpts{NoWait: true}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "nothing was read") {
		t.Fatalf("read on a busy session: %v", err)
	}
	if scr, _, _ := s.Screen(); strings.Contains(scr, "intruder") || !strings.Contains(scr, "first-done") {
		t.Fatalf("screen while busy:\n%s", scr)
	}
	// A call with time to wait runs once the first returns.
	second := make(chan Result, 1)
	go func() {
		r, err := s.Send(ctx, "echo second", true, WaitOpts{Timeout: 30 * time.Second})
		if err != nil {
			t.Errorf("waiting send: %v", err)
		}
		second <- r
	}()
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantResult(t, <-first, "first-done", CompletionCommandFinished)
	wantResult(t, <-second, "second", CompletionCommandFinished)
	if sb := s.Scrollback(50); strings.Contains(sb, "intruder") {
		t.Fatalf("a refused call typed:\n%s", sb)
	}
}

// TestSendWhileStartWaits: a send made while session_start still waits for
// the first prompt waits for it.
func TestSendWhileStartWaits(t *testing.T) {
	m := testManager(t, Limits{})
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	started := make(chan error, 1)
	go func() {
		_, err := s.WaitStart(ctx, WaitOpts{Timeout: 20 * time.Second})
		started <- err
	}()
	r, err := s.Send(ctx, "echo hello", true, WaitOpts{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, r, "hello", CompletionCommandFinished)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}

func waitScreen(t *testing.T, s *Session, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		scr, _, _ := s.Screen()
		if strings.Contains(scr, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q:\n%s", want, scr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawNotReading starts a program that puts the terminal in raw mode and
// never reads it.
func rawNotReading(t *testing.T, m *Manager) *Session {
	t.Helper()
	s := startBash(t, m)
	if _, err := s.Send(context.Background(), "stty raw -echo; echo not-reading; sleep 1000", true, WaitOpts{WaitFor: regexpMust(`not-reading`), Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWriteToAProgramThatDoesNotRead: a write the program does not take in
// ends at the call's deadline with an error; closing the session while a
// write is blocked does not wait for it.
func TestWriteToAProgramThatDoesNotRead(t *testing.T) {
	m := testManager(t, Limits{CloseGrace: 50 * time.Millisecond})
	s := rawNotReading(t, m)
	big := strings.Repeat("x", 1<<20)
	_, err := s.Send(context.Background(), big, false, WaitOpts{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrNotReading) {
		t.Fatalf("a write nobody reads: %v", err)
	}
	// A cancelled call's write ends too.
	ctx, cancel := context.WithCancel(context.Background())
	blocked := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, big, false, WaitOpts{Timeout: time.Hour})
		blocked <- err
	}()
	waitFor(t, "the write to block", func() bool {
		select {
		case <-s.wsem:
			s.wsem <- struct{}{}
			return false
		default:
			return true // the write holds the semaphore
		}
	})
	cancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	// Close while a write with an hour to go is blocked.
	go func() {
		_, err := s.Send(context.Background(), big, false, WaitOpts{Timeout: time.Hour})
		blocked <- err
	}()
	waitFor(t, "the write to block", func() bool {
		select {
		case <-s.wsem:
			s.wsem <- struct{}{}
			return false
		default:
			return true
		}
	})
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background(), s.ID()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for a blocked writer")
	}
	// The write ends with the session: closed, or exited first when the
	// close's kill is seen before its mark (either way it returned).
	if err := <-blocked; !errors.Is(err, ErrClosed) && !errors.Is(err, ErrExited) {
		t.Fatalf("the blocked write after close: %v", err)
	}
}

// TestTerminalRepliesDoNotPileUp: a program that floods terminal queries
// and never reads the answers costs one writer, not a goroutine per reply.
func TestTerminalRepliesDoNotPileUp(t *testing.T) {
	m := testManager(t, Limits{CloseGrace: 50 * time.Millisecond})
	s := startBash(t, m)
	before := runtime.NumGoroutine()
	r, err := s.Send(context.Background(), `stty raw -echo; for i in $(seq 3000); do printf '\033[6n\033[c'; done; echo queried; sleep 1000`, true,
		WaitOpts{WaitFor: regexpMust(`queried`), Timeout: 30 * time.Second})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("flood: %+v %v", r, err)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Fatalf("%d goroutines after 6000 queries, %d before", n, before)
	}
	if err := m.Close(context.Background(), s.ID()); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func regexpMust(expr string) *regexp.Regexp { return regexp.MustCompile(expr) }

// TestTypingWhileACommandRuns: input typed while an earlier command still
// runs (its call timed out) gets its own output; the earlier command's is
// kept for the next read, and the result says so.
func TestTypingWhileACommandRuns(t *testing.T) {
	t.Run("bash", func(t *testing.T) {
		m := testManager(t, Limits{})
		s := startBash(t, m)
		flag := filepath.Join(t.TempDir(), "go")
		r, err := s.Send(context.Background(), "echo old-start; while [ ! -e "+flag+" ]; do sleep 0.01; done; echo old-end; (exit 3)", true, WaitOpts{WaitFor: regexpMust("old-start"), Timeout: 20 * time.Second})
		if err != nil || r.Complete && r.Completion != CompletionPattern {
			t.Fatalf("first: %+v %v", r, err)
		}
		got := make(chan Result, 1)
		go func() { got <- send(t, s, "echo new") }()
		waitScreen(t, s, "echo new") // typed ahead: the terminal echoed it
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r = <-got
		if !strings.HasSuffix(r.Output, "\nnew") || strings.Contains(r.Output, "old-end") || r.Earlier != 1 || !strings.Contains(r.Output, "session_read returns them") {
			t.Fatalf("typed ahead: %+v", r)
		}
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("exit code is the earlier command's: %+v", r)
		}
		rd, err := s.Read(context.Background(), WaitOpts{NoWait: true})
		if err != nil || rd.Output != "old-end" {
			t.Fatalf("read after: %+v %v", rd, err)
		}
		wantResult(t, send(t, s, "echo next"), "next", CompletionCommandFinished)
	})
	t.Run("python", func(t *testing.T) {
		m := testManager(t, Limits{})
		s := startProgram(t, m, "python3", "-q")
		flag := filepath.Join(t.TempDir(), "go")
		send(t, s, "import os, time")
		send(t, s, "def slow(f):\n    print('old-start')\n    while not os.path.exists(f): time.sleep(0.01)\n    print('old-end')\n")
		r, err := s.Send(context.Background(), "slow('"+flag+"')", true, WaitOpts{WaitFor: regexpMust("old-start"), Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("first: %+v %v", r, err)
		}
		got := make(chan Result, 1)
		go func() { got <- send(t, s, "print('new')") }()
		waitScreen(t, s, "print('new')")
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r = <-got
		if !strings.HasSuffix(r.Output, "\nnew") || strings.Contains(r.Output, "old-end") || r.Earlier == 0 {
			t.Fatalf("typed ahead: %+v", r)
		}
	})
}

// TestTypingAheadOfAProgramReadingAPipe: a line typed while the running
// command blocks reading a pipe (not the terminal) is read by the shell
// once that command ends, so it is issued a ticket and runs: it is not
// refused as a line nobody judged. The program reads no keys: the status
// says input typed now is typed ahead. (A program blocked in a read of
// any descriptor once counted as reading the terminal; bash's own child,
// waiting on a pipe for its job to be set up before it runs a command,
// made a typed-ahead line flake the same way.)
func TestTypingAheadOfAProgramReadingAPipe(t *testing.T) {
	if _, err := exec.LookPath("head"); err != nil {
		t.Skip("head is not installed")
	}
	m := testManager(t, Limits{})
	log := &unjudgedLog{ch: make(chan struct{}, 1)}
	s := startBashWith(t, m, t.TempDir(), log.handle)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// <> opens the fifo without waiting for a writer: head blocks in its
	// read of the fifo, its standard input, until the test writes.
	r, err := s.Send(context.Background(), "echo old-start; head -c1 <>"+fifo+" >/dev/null; echo old-end", true, WaitOpts{WaitFor: regexpMust("old-start"), Timeout: 20 * time.Second})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("first: %+v %v", r, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := s.Status()
		if st.Program == "head" && blockedIn(st.ProgramPid, unix.SYS_READ) {
			if !st.Ahead {
				t.Fatalf("a program reading a pipe is not typed ahead of: %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("head never blocked reading the fifo: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := make(chan Result, 1)
	go func() { got <- send(t, s, "echo new") }()
	waitScreen(t, s, "echo new") // typed ahead: the terminal echoed it
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Write([]byte("x"))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	r = <-got
	if !strings.HasSuffix(r.Output, "\nnew") || r.Earlier != 1 || r.Completion != CompletionCommandFinished || len(log.all()) > 0 {
		text, _, _ := s.Screen()
		t.Fatalf("typed ahead: %+v; refused: %q; screen:\n%s", r, log.all(), text)
	}
	if rd, err := s.Read(context.Background(), WaitOpts{NoWait: true}); err != nil || rd.Output != "old-end" {
		t.Fatalf("read after: %+v %v", rd, err)
	}
}

// blockedIn reports whether process pid is blocked in system call nr.
func blockedIn(pid, nr int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	f := strings.Fields(string(b))
	return err == nil && len(f) > 0 && f[0] == strconv.Itoa(nr)
}

// TestPromptChangesKeepCompletion: a prompt the user changes (PS1, a
// sourced rc file that sets PS1 and PROMPT_COMMAND) keeps the shell's
// integration; a shell whose hooks were removed completes on its prompt,
// learned again.
func TestPromptChangesKeepCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			m := testManager(t, Limits{})
			home := t.TempDir()
			os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PS1='rc> '\nPROMPT_COMMAND='true'\n"), 0o600)
			os.WriteFile(filepath.Join(home, ".zshrc"), []byte("PS1='rc> '\nprecmd() { true }\n"), 0o600)
			if _, err := exec.LookPath(sh); err != nil {
				t.Skip(sh + " is not installed")
			}
			s, err := m.Start(Spec{Argv: []string{sh}, Env: append(os.Environ(), "HOME="+home, "TERM=xterm-256color", "ZDOTDIR="), Dir: home, Rows: 24, Cols: 80, Mode: ModePTY})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 20 * time.Second}); err != nil || r.Completion != CompletionPrompt {
				t.Fatalf("start: %+v %v", r, err)
			}
			long := WaitOpts{Timeout: 20 * time.Second}
			for _, change := range []string{"PS1='$ '", "source ~/.bashrc", "PS1='%% '", "PS1=\"$PS1 extra> \""} {
				if sh == "zsh" && change == "source ~/.bashrc" {
					change = "source ~/.zshrc"
				}
				if r, err := s.Send(context.Background(), change, true, long); err != nil || r.Completion != CompletionCommandFinished {
					t.Fatalf("%s: %+v %v", change, r, err)
				}
				r, err := s.Send(context.Background(), "echo after; false", true, long)
				if err != nil || r.Output != "after" || r.Completion != CompletionCommandFinished || r.ExitCode == nil || *r.ExitCode != 1 {
					t.Fatalf("after %s: %+v %v", change, r, err)
				}
			}
			// The integration's hooks removed altogether: the prompt it
			// shows is learned.
			unhook := "PROMPT_COMMAND=(); unset PROMPT_COMMAND; PS0=; PS1='plain$ '"
			if sh == "zsh" {
				unhook = "precmd_functions=(); preexec_functions=(); PS1='plain$ '"
			}
			s.Send(context.Background(), unhook, true, long)
			for i := range 3 {
				r, err := s.Send(context.Background(), "echo bare", true, long)
				if err != nil || r.Output != "bare" || r.Completion != CompletionPrompt || r.Prompt != "plain$" {
					t.Fatalf("without hooks, call %d: %+v %v", i, r, err)
				}
			}
		})
	}
}

// TestKeysThatStayAtThePromptComplete: esc, arrows and tab at a shell
// prompt complete once the shell reads again, not at the timeout.
func TestKeysThatStayAtThePromptComplete(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	for _, k := range []string{"esc", "left", "ctrl+a", "tab"} {
		key, err := ParseKey(k)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.SendKeys(context.Background(), []Key{key}, WaitOpts{Timeout: time.Minute})
		if err != nil || !r.Complete || r.Completion == CompletionTimeout {
			t.Fatalf("%s: %+v %v", k, r, err)
		}
	}
	wantResult(t, send(t, s, "echo fine"), "fine", CompletionCommandFinished)
}

// TestLeavingAFullScreenProgram: after the alternate screen ends, a result
// holds the main screen's new text, not lines from before the program ran.
func TestLeavingAFullScreenProgram(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		b.WriteString("stale line " + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(file, []byte(b.String()), 0o600)
	send(t, s, "cat "+file) // lines a wrong result would show
	keys := func(names ...string) Result {
		t.Helper()
		var ks []Key
		for _, n := range names {
			k, err := ParseKey(n)
			if err != nil {
				k = Key{Name: n, Repeat: 1, Literal: true}
			}
			ks = append(ks, k)
		}
		r, err := s.SendKeys(context.Background(), ks, WaitOpts{Timeout: 20 * time.Second, Judge: func(line string) error {
			if strings.Contains(line, "forbidden") {
				return errors.New("judged")
			}
			return nil
		}})
		if err != nil {
			t.Fatalf("keys %v: %v", names, err)
		}
		return r
	}
	if _, err := exec.LookPath("vim"); err == nil {
		r := send(t, s, "vim -u NONE -N "+file)
		if !r.Screen {
			t.Fatalf("vim: %+v", r)
		}
		wantResult(t, keys(":", "q", "!", "enter"), "", CompletionCommandFinished)
	}
	r := send(t, s, "less "+file+"; echo after-less")
	if !r.Screen || !strings.Contains(r.Output, "stale line 1") {
		t.Fatalf("less: %+v", r)
	}
	wantResult(t, keys("q"), "after-less", CompletionCommandFinished)

	// Enter into a full-screen program that reads a pipe is a key like the
	// others: not refused, and nothing is typed into the program to clear
	// a line it does not have.
	r = send(t, s, "cat "+file+" | less")
	if !r.Screen {
		t.Fatalf("cat | less: %+v", r)
	}
	r = keys("enter", "enter")
	if !r.Screen || !strings.Contains(r.Output, "stale line 3") {
		t.Fatalf("enter in less: %+v", r)
	}
	wantResult(t, keys("q"), "", CompletionCommandFinished)
	if _, err := exec.LookPath("fzf"); err == nil {
		r = send(t, s, "seq 20 | fzf; echo after-fzf")
		if !r.Screen {
			t.Fatalf("fzf: %+v", r)
		}
		waitScreen(t, s, "20/20")
		wantResult(t, keys("enter"), "1\nafter-fzf", CompletionCommandFinished)
	}
	// The line editor is still judged.
	if _, err := s.SendKeys(context.Background(), []Key{{Name: "forbidden", Repeat: 1, Literal: true}, {Name: "enter", Repeat: 1}}, WaitOpts{Timeout: 20 * time.Second, Judge: func(line string) error {
		return errors.New("judged: " + line)
	}}); !errors.Is(err, ErrLineRefused) || !strings.Contains(err.Error(), "judged: forbidden") {
		t.Fatalf("the shell's line was not judged: %v", err)
	}
}

// TestWaitForScansIncrementally: a wait_for that never matches scans each
// stretch of output a bounded number of times, not all of it again at
// every chunk; a match is still found across chunks, within the window,
// and never in the echo.
func TestWaitForScansIncrementally(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	// 3,000 lines, printed one at a time, against a pattern that never
	// matches.
	cmd := `python3 -c 'import time` + "\n" + `for i in range(3000): print("line-%d" % i, flush=True); time.sleep(0.0005)' ; echo end-of-lines`
	r, err := s.Send(context.Background(), cmd, true, WaitOpts{WaitFor: regexpMust(`never-printed|end-of-lines`), Timeout: 2 * time.Minute})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("%+v %v", r, err)
	}
	s.mu.Lock()
	cost := s.scanCost
	s.mu.Unlock()
	out := int64(len(r.Output))
	t.Logf("wait_for scanned %d bytes for %d bytes of output", cost, out)
	// Each line is scanned with at most the window before it: a full
	// rescan at every line would cost about 1,500 times the output.
	if cost > 2*waitForOverlap*out {
		t.Fatalf("scanned %d bytes for %d bytes of output", cost, out)
	}
	if _, err := s.Read(context.Background(), WaitOpts{Timeout: 60 * time.Second}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Send(context.Background(), "printf 'one\\ntwo\\n'; sleep 0.1; echo three", true, WaitOpts{WaitFor: regexpMust(`two\nthree`), Timeout: 20 * time.Second})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("a match across chunks: %+v %v", r, err)
	}
	r, err = s.Send(context.Background(), "sleep 0.2; echo x", true, WaitOpts{WaitFor: regexpMust(`sleep 0\.2`), Timeout: 1500 * time.Millisecond})
	if err != nil || r.Completion == CompletionPattern {
		t.Fatalf("wait_for matched the echo: %+v %v", r, err)
	}
	r, err = s.Send(context.Background(), "echo first; echo second", true, WaitOpts{WaitFor: regexpMust(`^first`), Timeout: 20 * time.Second})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("an anchored pattern: %+v %v", r, err)
	}
}

func TestAnchoredAtStart(t *testing.T) {
	for expr, want := range map[string]bool{`^x`: true, `\Ax`: true, `(^x)y`: true, `(?m)^x`: false, `x^`: false, `x`: false, `^x|y`: false} {
		if got := anchoredAtStart(regexp.MustCompile(expr)); got != want {
			t.Errorf("anchoredAtStart(%q) = %v", expr, got)
		}
	}
}

// panicTap panics when the output holds a marker.
type panicTap struct{ marker string }

func (p panicTap) Output(b []byte) {
	if strings.Contains(string(b), p.marker) {
		panic("tap failed on purpose")
	}
}
func (panicTap) Input([]byte, bool) {}
func (panicTap) Resize(int, int)    {}

// TestGoroutinePanicIsContained: a panic in a session's goroutine (here
// its output path) is reported with its stack, the session reads as
// broken and exited, no lock is left held, and other sessions go on.
func TestGoroutinePanicIsContained(t *testing.T) {
	m := testManager(t, Limits{CloseGrace: 50 * time.Millisecond})
	reports := make(chan string, 4)
	m.OnPanic(func(id, goroutine string, v any, stack []byte) {
		reports <- goroutine + ": " + fmt.Sprint(v) + "\n" + string(stack)
	})
	other := startBash(t, m)
	mk := "boom" + strconv.Itoa(os.Getpid())
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY,
		NewTap: func(string) Tap { return panicTap{marker: mk} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Send(context.Background(), "echo "+mk, true, WaitOpts{Timeout: 20 * time.Second})
	if err == nil && r.Completion != CompletionExited {
		t.Fatalf("send into a failing output path: %+v", r)
	}
	select {
	case rep := <-reports:
		if !strings.Contains(rep, "tap failed on purpose") || !strings.Contains(rep, "panicTap.Output") {
			t.Fatalf("report: %s", rep)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the panic was not reported")
	}
	<-s.Done()
	st := s.Status() // takes the lock: none is left held
	if st.Alive {
		t.Fatalf("a broken session reads as alive: %+v", st)
	}
	if _, err := s.Send(context.Background(), "echo again", true, WaitOpts{Timeout: time.Second}); !errors.Is(err, ErrBroken) {
		t.Fatalf("input to a broken session: %v", err)
	}
	wantResult(t, send(t, other, "echo still-fine"), "still-fine", CompletionCommandFinished)
	if err := m.Close(context.Background(), s.ID()); err != nil {
		t.Fatal(err)
	}
}

// TestManagerForgetsDroppedSessions: the caller hears of each session the
// manager drops, so that what it keeps per session can go too.
func TestManagerForgetsDroppedSessions(t *testing.T) {
	m := testManager(t, Limits{MaxExited: 1, CloseGrace: 50 * time.Millisecond})
	var mu sync.Mutex
	var forgotten []string
	m.OnForget(func(id string) {
		mu.Lock()
		defer mu.Unlock()
		forgotten = append(forgotten, id)
	})
	var ids []string
	for range 3 {
		s, err := m.Start(Spec{Argv: []string{"cat"}, Env: testEnv(t), Rows: 24, Cols: 80, Mode: ModePTY})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
		if err := m.Close(context.Background(), s.ID()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(forgotten, ",") != ids[0]+","+ids[1] {
		t.Fatalf("forgotten %v of %v", forgotten, ids)
	}
	if _, err := m.Get(ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a dropped session is still found: %v", err)
	}
}

// TestSilentStartWaitsForAReader: a program that prints nothing and does
// not read its terminal (a version manager's shim resolving the
// interpreter, here a sleep longer than startupSilence) is still loading:
// the start waits for the prompt of what it runs, instead of calling the
// silence a quiet start and letting the first line land in the loader.
func TestSilentStartWaitsForAReader(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	m := testManager(t, Limits{})
	s := startProgram(t, m, "sh", "-c", "sleep 2; exec python3 -q")
	r, err := s.Read(context.Background(), WaitOpts{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Program != "python3" {
		t.Fatalf("the start returned while %q ran: %+v", st.Program, r)
	}
	wantResult(t, send(t, s, "6*7"), "42", CompletionPrompt)
}

// TestPromptAfterQuietStart: a start that ended on a quiet screen before
// a slow program printed its prompt leaves that prompt unreturned; the
// next input is typed on it, and its result does not call the prompt
// earlier output.
func TestPromptAfterQuietStart(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	m := testManager(t, Limits{})
	dir := t.TempDir()
	s, err := m.Start(Spec{Argv: []string{"sh", "-c", "echo starting; while [ ! -e go ]; do sleep 0.01; done; exec python3 -q"},
		Env: testEnv(t), Dir: dir, Rows: 24, Cols: 80, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 20 * time.Second, Quiet: 50 * time.Millisecond})
	if err != nil || r.Completion != CompletionQuiet {
		t.Fatalf("WaitStart = %+v, %v; want it to end quiet, before the prompt", r, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		line := s.screen.LineText()
		s.mu.Unlock()
		if strings.HasPrefix(line, ">>>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no prompt: %q", line)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r = send(t, s, "1+1")
	if r.Output != "2" || r.Earlier != 0 {
		t.Fatalf("1+1: output %q, earlier %d; want 2, 0", r.Output, r.Earlier)
	}
}
