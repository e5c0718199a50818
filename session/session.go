package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/sandbox"
)

// Mode is how a session's program is connected.
type Mode string

const (
	ModePTY  Mode = "pty"  // a real pseudo-terminal: echo, job control, full-screen programs
	ModePipe Mode = "pipe" // stdin and a merged stdout/stderr pipe
)

// Completion says how a wait ended.
type Completion string

const (
	CompletionCommandFinished Completion = "command_finished" // shell integration mark, exit code known
	CompletionPrompt          Completion = "prompt"           // a known or learned prompt came back
	CompletionPattern         Completion = "pattern"          // wait_for matched
	CompletionExited          Completion = "exited"           // the program exited
	CompletionQuiet           Completion = "quiet"            // no output for the quiet period
	CompletionTimeout         Completion = "timeout"          // none of the above in time
)

// Spec describes a session to start. Argv[0] must be resolved to a path.
type Spec struct {
	Name       string
	Argv       []string
	Dir        string
	Env        []string
	Rows, Cols int
	Mode       Mode
	Scrollback int // lines; DefaultScrollback when 0
	// Redactor, when set, masks secrets in the program's output before
	// the screen sees it, so the screen, scrollback and every result made
	// from them are redacted at the source.
	Redactor *redact.Engine
	// NewTap, when set, is called once with the session's id before the
	// program runs; the tap then sees the session's output as the screen
	// does (redacted), every input written (raw: the tap redacts it, and
	// is told whether the terminal's echo was off), and every resize.
	NewTap func(id string) Tap
	// Sandbox, when set, confines the session: its program is started
	// through the sandbox launcher. Argv, Env and Dir are filled in here;
	// the session's private directory is added to what it may write, and
	// is its TMPDIR.
	Sandbox *sandbox.Spec
	// OutputLogMax bounds the session's output log, its whole history on
	// disk (see Session.ReadLog): DefaultOutputLogMax when 0, none when
	// negative.
	OutputLogMax int64
}

// Tap watches a session's traffic (a recording).
type Tap interface {
	Output(b []byte)
	Input(b []byte, echoOff bool)
	Resize(rows, cols int)
}

// WaitOpts says when a send or read is complete.
type WaitOpts struct {
	WaitFor *regexp.Regexp // complete when this matches the new output (after the echo)
	Timeout time.Duration  // give up and return what arrived
	Quiet   time.Duration  // last-resort quiet period
	NoWait  bool           // evaluate once and return what is there

	// Judge, when set, is asked about the line the terminal shows at each
	// Enter (after history recall, tab completion, key-by-key typing,
	// backspaces), before the Enter is sent. An error clears the typed
	// line and stops: the Enter is never sent.
	Judge func(line string) error
	// Approved are lines already judged as they were sent; a line shown
	// at Enter that is one of them, typed as plain text at an empty
	// prompt, is not judged again.
	Approved []string
}

// ErrLineRefused wraps a Judge's refusal.
var ErrLineRefused = errors.New("the line at Enter was refused")

// Result is the text a human would read after an input, and how the wait
// ended. Output is not yet redacted or capped: the caller does both.
type Result struct {
	Output     string
	Complete   bool
	Completion Completion
	ExitCode   *int   // the command's exit code (shell integration) or the program's on exit
	Prompt     string // the prompt the program is showing, if known
	Screen     bool   // Output is the rendered screen of a full-screen program
	LostLines  int64  // lines that scrolled past the scrollback before they could be read
	OutputRows        // where Output sits in the session's history
	Continued  bool   // the shell is waiting for the rest of an unfinished command
}

// Status is a snapshot of a session.
type Status struct {
	ID, Name    string
	Argv        []string
	Dir         string
	Mode        Mode
	Pid         int
	Program     string // the terminal's foreground program
	Busy        bool   // the foreground program is not the session's own process
	Alive       bool
	ExitCode    *int
	Signal      string
	Rows, Cols  int
	AltScreen   bool
	AppCursor   bool
	EchoOff     bool
	Integration bool // shell integration marks are in use
	Title       string
	Started     time.Time
	LastInput   time.Time
	BytesIn     int64
	BytesOut    int64
	Prompt      string
}

// ErrExited is returned by writes to a session whose program has exited.
var ErrExited = errors.New("session has exited")

// ErrClosed is returned by operations on a closed session.
var ErrClosed = errors.New("session is closed")

// Session is one program in a PTY (or pipes) with its screen.
type Session struct {
	id   string
	spec Spec

	cmd     *exec.Cmd
	pty     *os.File // PTY master, or nil in pipe mode
	stdin   *os.File // pipe mode
	out     *os.File // what the reader reads
	privDir string   // generated rc files, history; removed on close
	outlog  *outputLog

	integration bool

	writeMu sync.Mutex // serialises writes to the terminal

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	screen     *Screen
	bytesIn    int64
	bytesOut   int64
	lastOutput time.Time // when output last reached the screen
	lastRead   time.Time // when the program last wrote (before any redaction hold)
	stream     *redact.Stream
	tap        Tap
	cgroup     *sandbox.Cgroup
	sandbox    sandbox.Status
	lastInput  time.Time
	started    time.Time
	running    time.Time // when the program itself began (after the launcher's exec)
	readPos    Pos       // where the next "new" read starts
	pending    *pending
	learned    string // prompt learned at start
	exited     bool
	exitCode   int
	signal     string
	closed     bool
	readerDone chan struct{}
	waitDone   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// pending is the command whose completion a send is (or was) waiting for.
type pending struct {
	markSeq int64    // marks newer than this belong to the command
	start   Pos      // cursor when the input was sent
	input   []string // the lines sent, for echo removal
	at      time.Time
	startup bool // waiting for a new session's first prompt
	idle    bool // a read waiting for output when no command was running
}

func start(id string, spec Spec) (*Session, error) {
	s := &Session{
		id:         id,
		spec:       spec,
		changed:    make(chan struct{}),
		started:    time.Now(),
		readerDone: make(chan struct{}),
		waitDone:   make(chan struct{}),
	}
	dir, err := os.MkdirTemp("", "termgate-session-")
	if err != nil {
		return nil, fmt.Errorf("creating session directory: %w", err)
	}
	s.privDir = dir
	argv, env := spec.Argv, spec.Env
	// REPLs keep their history in the session's private directory, as the
	// shells do: not in the user's files (which a confined session cannot
	// write anyway, and some REPLs print a warning when they cannot).
	for name, file := range map[string]string{
		"NODE_REPL_HISTORY": "node_history", "PYTHON_HISTORY": "python_history",
		"PSQL_HISTORY": "psql_history", "SQLITE_HISTORY": "sqlite_history",
	} {
		if lookupEnv(env, name) == "" {
			env = setEnv(env, name, filepath.Join(dir, file))
		}
	}
	if spec.Mode == ModePTY {
		var ok bool
		argv, env, ok, err = shellIntegration(argv, env, dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.integration = ok
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Args[0] = filepath.Base(spec.Argv[0])
	cmd.Path = argv[0]
	cmd.Dir = spec.Dir
	cmd.Env = env
	var launch *sandbox.Launch
	if spec.Sandbox != nil {
		if launch, err = s.prepareSandbox(cmd, *spec.Sandbox, argv, env); err != nil {
			s.cleanupFailed(nil) // the cgroup Attach made, too
			return nil, err
		}
	}
	// Pdeathsig: if the server dies without closing its sessions, the
	// session leader gets SIGKILL rather than living on.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	s.screen = NewScreen(spec.Rows, spec.Cols, spec.Scrollback, s.reply)
	if err := s.openOutputLog(); err != nil {
		s.cleanupFailed(nil)
		return nil, err
	}
	switch spec.Mode {
	case ModePTY:
		attr.Setctty = true
		cmd.SysProcAttr = attr
		f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: uint16(spec.Rows), Cols: uint16(spec.Cols)}, attr)
		if err != nil {
			s.cleanupFailed(nil)
			return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
		}
		s.pty, s.out = f, f
		if launch != nil {
			if err := launch.Started(cmd); err != nil {
				f.Close()
				s.cleanupFailed(cmd)
				return nil, fmt.Errorf("session not confined, so not started: %w", err)
			}
		}
	case ModePipe:
		cmd.SysProcAttr = attr
		inR, inW, err := os.Pipe()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("creating pipe: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("creating pipe: %w", err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
		err = cmd.Start()
		inR.Close()
		outW.Close()
		if err == nil && launch != nil {
			if err = launch.Started(cmd); err != nil {
				inW.Close()
				outR.Close()
				s.cleanupFailed(cmd)
				return nil, fmt.Errorf("session not confined, so not started: %w", err)
			}
		}
		if err != nil {
			inW.Close()
			outR.Close()
			s.cleanupFailed(nil)
			return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
		}
		s.stdin, s.out = inW, outR
	default:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("unknown mode %q", spec.Mode)
	}
	s.cmd = cmd
	// The start's quiet period counts from the program's own start: a
	// launcher slowed by a busy host must not pass for a silent program.
	s.running = time.Now()
	if spec.NewTap != nil {
		s.tap = spec.NewTap(id)
	}
	if spec.Redactor != nil {
		s.stream = spec.Redactor.NewStream(redact.DefaultIdle, s.show)
	}
	go s.readLoop()
	go s.waitLoop()
	return s, nil
}

// prepareSandbox makes cmd start through the sandbox launcher.
func (s *Session) prepareSandbox(cmd *exec.Cmd, sb sandbox.Spec, argv, env []string) (*sandbox.Launch, error) {
	tmp := filepath.Join(s.privDir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("creating the session's tmp: %w", err)
	}
	sb.Argv, sb.Dir, sb.Env = argv, s.spec.Dir, env
	if !sb.Unconfined {
		sb.Write = append(sb.Write, s.privDir) // history and rc files too
	}
	st, cg, err := sb.Attach(s.id, tmp)
	if err != nil {
		return nil, fmt.Errorf("session not started: %w", err)
	}
	s.sandbox, s.cgroup = st, cg
	return sandbox.Prepare(cmd, sb)
}

// cleanupFailed undoes a start that did not happen.
func (s *Session) cleanupFailed(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if s.cgroup != nil {
		_ = s.cgroup.Remove()
	}
	s.closeOutputLog()
	os.RemoveAll(s.privDir)
}

// Sandbox says how the session is confined.
func (s *Session) Sandbox() sandbox.Status { return s.sandbox }

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Name returns the session's name.
func (s *Session) Name() string { return s.spec.Name }

// Pid returns the session leader's process id.
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// reply answers a terminal query. It runs on the reader goroutine with s.mu
// held, so it must not block: the write happens on its own goroutine.
func (s *Session) reply(b []byte) {
	if s.pty == nil {
		return
	}
	go func() {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		_, _ = s.pty.Write(b)
	}()
}

// show puts output on the screen; with a redactor it runs on the
// redactor's schedule (at once, or after it held a trailing token).
func (s *Session) show(b []byte) {
	if s.tap != nil {
		s.tap.Output(b)
	}
	s.mu.Lock()
	s.screen.Write(b)
	s.lastOutput = time.Now()
	s.notifyLocked()
	s.mu.Unlock()
	s.flushOutputLog()
}

func (s *Session) readLoop() {
	defer close(s.readerDone)
	buf := make([]byte, 16<<10)
	pipe := s.spec.Mode == ModePipe
	stream := s.stream
	if stream != nil {
		defer stream.Close()
	}
	for {
		n, err := s.out.Read(buf)
		if n > 0 {
			b := buf[:n]
			if pipe {
				b = toCRLF(b)
			}
			s.mu.Lock()
			s.bytesOut += int64(n)
			s.lastRead = time.Now()
			s.mu.Unlock()
			if stream != nil {
				stream.Write(b)
			} else {
				s.show(b)
			}
		}
		if err != nil {
			return // EOF, or EIO once every holder of the PTY's other end is gone
		}
	}
}

// toCRLF makes pipe output render as a terminal with onlcr would show it.
func toCRLF(b []byte) []byte {
	if !strings.Contains(string(b), "\n") {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, c := range b {
		if c == '\n' {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

func (s *Session) waitLoop() {
	defer close(s.waitDone)
	err := s.cmd.Wait()
	code, sig := 0, ""
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal().String()
			code = 128 + int(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	}
	// The leader is gone: whatever it left running in its session goes too,
	// so that a program's exit never leaves orphans behind.
	pid := s.cmd.Process.Pid
	reapTree(pid, 200*time.Millisecond)
	if s.cgroup != nil {
		// What left the process session (setsid) is still in the cgroup.
		s.cgroup.Kill()
		_ = s.cgroup.Remove()
	}
	// Let the reader drain what the program printed last.
	select {
	case <-s.readerDone:
	case <-time.After(250 * time.Millisecond):
	}
	s.mu.Lock()
	s.exited = true
	s.exitCode, s.signal = code, sig
	s.notifyLocked()
	s.mu.Unlock()
}

// reapTree sends SIGHUP, SIGTERM and SIGKILL, grace apart, to what is left
// of a session's process tree, stopping as soon as nothing is left.
func reapTree(sid int, grace time.Duration) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGKILL} {
		if signalTree(sid, sig) == 0 {
			return
		}
		if waitGone(sid, grace) {
			return
		}
	}
}

func waitGone(sid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(sessionTree(sid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Write sends raw bytes to the program. Callers put every input through the
// gateway's gate first; this is the only place bytes reach the terminal.
func (s *Session) Write(p []byte) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.exited {
		s.mu.Unlock()
		return ErrExited
	}
	s.lastInput = time.Now()
	s.bytesIn += int64(len(p))
	s.mu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	w := s.pty
	if w == nil {
		w = s.stdin
	}
	if s.tap != nil {
		s.tap.Input(p, s.pty != nil && echoOff(s.pty.Fd()))
	}
	if _, err := w.Write(p); err != nil {
		return fmt.Errorf("writing to session: %w", err)
	}
	return nil
}

// Send types text (followed by Enter when enter is set) and waits for it to
// complete. Newlines in text are typed as Enter in a PTY.
func (s *Session) Send(ctx context.Context, text string, enter bool, o WaitOpts) (Result, error) {
	var b []byte
	if s.spec.Mode == ModePTY {
		b = []byte(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\r"), "\n", "\r"))
		if enter {
			b = append(b, '\r')
		}
	} else {
		b = []byte(text)
		if enter {
			b = append(b, '\n')
		}
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	s.mu.Lock()
	s.pending = &pending{markSeq: s.screen.MarkSeq(), start: s.screen.CursorPos(), input: lines, at: time.Now()}
	s.readPos = s.pending.start
	s.mu.Unlock()
	if err := s.writeGated(ctx, b, o); err != nil {
		return Result{}, err
	}
	return s.wait(ctx, o, true)
}

// SendKeys presses keys and waits for the terminal to settle.
func (s *Session) SendKeys(ctx context.Context, keys []Key, o WaitOpts) (Result, error) {
	s.mu.Lock()
	m := KeyModes{AppCursor: s.screen.AppCursor(), AppKeypad: s.screen.AppKeypad()}
	s.pending = &pending{markSeq: s.screen.MarkSeq(), start: s.screen.CursorPos(), at: time.Now()}
	s.readPos = s.pending.start
	s.mu.Unlock()
	var b []byte
	for _, k := range keys {
		b = append(b, k.Bytes(m)...)
	}
	if err := s.writeGated(ctx, b, o); err != nil {
		return Result{}, err
	}
	return s.wait(ctx, o, true)
}

// writeGated writes input, stopping at each Enter to ask o.Judge about the
// line the terminal shows, in a PTY. Plain text typed at an empty prompt
// that is one of o.Approved needs no second look: it cannot show anything
// but itself.
func (s *Session) writeGated(ctx context.Context, b []byte, o WaitOpts) error {
	if o.Judge == nil || s.spec.Mode != ModePTY {
		return s.Write(b)
	}
	for len(b) > 0 {
		i := bytes.IndexAny(b, acceptKeys)
		if i < 0 {
			return s.Write(b)
		}
		body, key := b[:i], b[i]
		b = b[i+1:]
		s.mu.Lock()
		before, known := s.pendingLineLocked()
		s.mu.Unlock()
		fast := isPlain(body) && (known && before == "" || !known) && containsLine(o.Approved, string(body))
		typedAt := time.Now()
		if len(body) > 0 {
			if err := s.Write(body); err != nil {
				return err
			}
		}
		if !fast {
			if !s.settle(ctx, typedAt, len(body) > 0) {
				_ = s.Write([]byte{0x05, 0x15})
				return fmt.Errorf("%w: the terminal did not settle, so the line at Enter could not be read; the typed line was cleared and nothing ran", ErrLineRefused)
			}
			s.mu.Lock()
			line, ok := s.pendingLineLocked()
			s.mu.Unlock()
			if ok && strings.TrimSpace(line) != "" {
				if err := o.Judge(line); err != nil {
					// Clear what was typed: end of line, then kill to its start.
					_ = s.Write([]byte{0x05, 0x15})
					return fmt.Errorf("%w: %w", ErrLineRefused, err)
				}
			}
		}
		if err := s.Write([]byte{key}); err != nil {
			return err
		}
		if len(b) > 0 {
			// Type the next line as a human would: once the program has
			// taken the Enter and waits for input again. Typed sooner, it
			// reaches a line editor between two reads, while the terminal
			// is still in cooked mode, and the kernel echoes it a second
			// time. A program still busy after two seconds gets it as
			// type-ahead, as before.
			_ = s.settle(ctx, time.Now(), false)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// acceptKeys are the bytes that make a line editor run the line: Enter
// (CR), ctrl+j (LF) and bash's ctrl+o (operate-and-get-next).
const acceptKeys = "\r\n\x0f"

func isPlain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func containsLine(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// settle waits until the program has taken in typed keys and shown their
// effect: every byte read from the terminal's input queue, its foreground
// process blocked again, and output quiet for a few milliseconds. It
// reports false when that could not be confirmed within two seconds: the
// line on the screen may then be stale, and must not be judged as final.
func (s *Session) settle(ctx context.Context, start time.Time, typed bool) bool {
	deadline := start.Add(2 * time.Second)
	const quiet = 5 * time.Millisecond
	for {
		s.mu.Lock()
		last, ch := s.lastRead, s.changed
		s.mu.Unlock()
		now := time.Now()
		if (last.After(start) || !typed) && now.Sub(last) >= quiet && now.Sub(start) >= quiet {
			if s.readingInput() {
				if s.stream != nil {
					// What the redactor holds back (the end of the
					// typed line) goes to the screen now.
					s.stream.Flush()
				}
				return true
			}
		}
		if now.After(deadline) {
			return false
		}
		select {
		case <-ch:
		case <-time.After(quiet):
		case <-ctx.Done():
			return false
		}
	}
}

// readingInput reports whether the terminal's foreground process is
// blocked with every typed byte taken in: it waits for more input.
func (s *Session) readingInput() bool {
	pending, err := inputPending(s.pty.Fd())
	pgid, _ := foreground(s.pty.Fd())
	return err == nil && pending == 0 && asleep(pgid)
}

// pendingLineLocked returns the line the program is reading and would run
// at Enter, when that can be known: the text after a shell's prompt (from
// its shell-integration input mark), or after a known REPL prompt.
func (s *Session) pendingLineLocked() (string, bool) {
	if s.screen.AltScreen() || s.exited || s.closed {
		return "", false
	}
	program := s.programLocked()
	cur := s.screen.CursorPos()
	end := Pos{Line: cur.Line, Col: 1 << 30}
	if s.integration && isShell(program) {
		marks := s.screen.Marks(0)
		if len(marks) > 0 && marks[len(marks)-1].Kind == MarkInputStart {
			text, _ := s.screen.Text(marks[len(marks)-1].Pos, end)
			return strings.TrimRight(text, " "), true
		}
		// No input mark: the session's own shell is running a command,
		// which may be another shell (bash inside bash) that has no marks.
	}
	row, _ := s.screen.Text(Pos{Line: cur.Line}, end)
	if isShell(program) {
		// A shell without marks: the line after the first prompt sign.
		if m := genericShellPrompt.FindStringIndex(row); m != nil {
			return strings.TrimRight(row[m[1]:], " "), true
		}
		return "", false
	}
	fam := familyOf(program)
	if fam == nil {
		return "", false
	}
	for n := len(row); n > 0; n-- {
		if n < len(row) && !utf8.RuneStart(row[n]) {
			continue
		}
		if fam.prompt.MatchString(row[:n]) {
			return strings.TrimRight(row[n:], " "), true
		}
	}
	return "", false
}

// Read returns the output since the last read (or send) without sending
// anything. Complete is false while a command sent earlier is still running.
// Unless o.NoWait, it waits for that command to complete, or, when nothing
// is running, for new output to arrive and settle (or for o.WaitFor).
func (s *Session) Read(ctx context.Context, o WaitOpts) (Result, error) {
	s.mu.Lock()
	if s.pending == nil {
		if o.NoWait {
			from, to := s.readPos, s.screen.CursorPos()
			text, lost := s.screen.Text(from, to)
			s.readPos = s.screen.CursorPos()
			r := Result{Output: strings.TrimRight(text, "\n"), Complete: true, LostLines: lost}
			r.OutputRows = s.outputRowsLocked(from, to, lost, "", r.Output)
			if s.exited {
				code := s.exitCode
				r.Completion, r.ExitCode = CompletionExited, &code
			}
			s.mu.Unlock()
			return r, nil
		}
		s.pending = &pending{markSeq: s.screen.MarkSeq(), start: s.readPos, at: time.Now(), idle: true}
	}
	s.mu.Unlock()
	return s.wait(ctx, o, false)
}

// WaitStart waits for a new session's first prompt and returns its banner.
func (s *Session) WaitStart(ctx context.Context, o WaitOpts) (Result, error) {
	s.mu.Lock()
	s.pending = &pending{start: Pos{}, at: s.running, startup: true}
	s.mu.Unlock()
	r, err := s.wait(ctx, o, true)
	if err == nil && r.Completion == CompletionQuiet && r.Prompt == "" {
		// Learn the prompt: the text before the cursor once the program
		// has gone quiet at start is what it prints when it wants input.
		s.mu.Lock()
		if p := s.screen.LineText(); strings.TrimSpace(p) != "" && len(p) <= 64 && !s.screen.AltScreen() {
			s.learned = p
			r.Prompt = strings.TrimRight(p, " ")
			if i := strings.LastIndex(r.Output, "\n"); i >= 0 && strings.TrimSpace(r.Output[i+1:]) == strings.TrimSpace(p) {
				r.Output = r.Output[:i]
			} else if strings.TrimSpace(r.Output) == strings.TrimSpace(p) {
				r.Output = ""
			}
		}
		s.mu.Unlock()
	}
	return r, err
}

// state is one evaluation of whether the pending input is complete.
type state struct {
	done       bool
	completion Completion
	exitCode   *int
	from, to   Pos
	prompt     string
	continued  bool
}

// wait blocks until the pending input completes, the timeout passes or ctx
// ends, then renders the result. fresh says the wait follows an input (so
// the start position holds its echo).
func (s *Session) wait(ctx context.Context, o WaitOpts, fresh bool) (Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Quiet <= 0 {
		o.Quiet = 300 * time.Millisecond
	}
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	var quietTimer *time.Timer
	defer func() {
		if quietTimer != nil {
			quietTimer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		st, quietIn := s.evaluate(o)
		if st.done {
			r := s.renderLocked(st, fresh)
			s.mu.Unlock()
			return r, nil
		}
		ch := s.changed
		s.mu.Unlock()

		var quietC <-chan time.Time
		if quietIn > 0 {
			if quietTimer == nil {
				quietTimer = time.NewTimer(quietIn)
			} else {
				quietTimer.Reset(quietIn)
			}
			quietC = quietTimer.C
		}
		if o.NoWait {
			s.mu.Lock()
			r := s.renderLocked(state{completion: CompletionTimeout, from: s.pending.start, to: s.screen.CursorPos()}, fresh)
			s.mu.Unlock()
			return r, nil
		}
		select {
		case <-ch:
		case <-quietC:
		case <-deadline.C:
			s.mu.Lock()
			st, _ := s.evaluate(o)
			if !st.done {
				st = state{completion: CompletionTimeout, from: s.pending.start, to: s.screen.CursorPos()}
			}
			r := s.renderLocked(st, fresh)
			s.mu.Unlock()
			return r, nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
}

// evaluate decides, with s.mu held, whether the pending input is complete,
// in the documented order: shell-integration mark, known or learned prompt,
// wait_for pattern, process exit, quiet period. When not complete it returns
// how long until the quiet period would run out (0: quiet does not apply).
func (s *Session) evaluate(o WaitOpts) (state, time.Duration) {
	p := s.pending
	now := time.Now()
	cursor := s.screen.CursorPos()
	st := state{from: p.start, to: cursor}

	if o.WaitFor != nil {
		text, _ := s.screen.Text(p.start, cursor)
		if s.spec.Mode == ModePTY {
			text = stripEcho(text, p.input)
		}
		if o.WaitFor.MatchString(text) {
			st.done, st.completion = true, CompletionPattern
			return st, 0
		}
		if s.exited {
			st.done, st.completion = true, CompletionExited
			code := s.exitCode
			st.exitCode = &code
			return st, 0
		}
		return st, 0
	}

	// 1. Shell integration.
	var cMark, dMark *Mark
	bAfterD, bAfterSecondary, anyB := false, false, false
	for _, m := range s.screen.Marks(p.markSeq) {
		switch m.Kind {
		case MarkOutputStart:
			if cMark == nil && dMark == nil {
				cMark = &m
			}
		case MarkCommandEnded:
			if dMark == nil {
				dMark = &m
			}
		case MarkPromptStart:
			if dMark == nil && strings.Contains(m.Extra, "k=s") {
				st.continued = true // the shell wants the rest of the command
			}
		case MarkInputStart:
			anyB = true
			if dMark != nil {
				bAfterD = true
			} else if st.continued {
				bAfterSecondary = true
			}
		}
	}
	switch {
	case p.startup && anyB:
		st.done, st.completion = true, CompletionPrompt
		st.to = Pos{Line: cursor.Line}
		st.prompt = s.screen.LineText()
		return st, 0
	case dMark != nil && !p.startup:
		quietFor := now.Sub(s.lastOutput)
		if !bAfterD {
			if s.screen.PromptMarks() {
				return st, 0 // the prompt (and its B mark) is still on its way
			}
			if quietFor < 30*time.Millisecond {
				// A prompt framework that rewrites PS1 drops the B mark:
				// the D mark alone ends the command once output stops.
				return st, 30*time.Millisecond - quietFor
			}
		}
		st.done, st.completion = true, CompletionCommandFinished
		if dMark.HasCode {
			code := dMark.ExitCode
			st.exitCode = &code
		}
		switch {
		case cMark != nil:
			st.from = cMark.Pos
		case dMark.Pos.Line > p.start.Line:
			st.from = Pos{Line: p.start.Line + 1}
		default:
			st.from = dMark.Pos
		}
		st.to = dMark.Pos
		st.prompt = s.screen.LineText()
		st.continued = false
		return st, 0
	case bAfterSecondary:
		st.done, st.completion = true, CompletionPrompt
		st.to = Pos{Line: cursor.Line}
		st.prompt = s.screen.LineText()
		return st, 0
	}

	// 2. Known prompt of the foreground program, or the learned prompt.
	program := s.programLocked()
	gotOutput := s.bytesOut > 0 && s.lastOutput.After(p.at)
	if gotOutput && !s.screen.AltScreen() && (cursor.Line > p.start.Line || p.startup) {
		line := s.screen.LineText()
		fam := s.familyLocked(program, p.startup)
		// Each line typed moves the cursor down at least once: a prompt
		// before the last line's echo is a continuation prompt mid-input.
		echoed := p.startup || cursor.Line >= p.start.Line+int64(len(p.input))
		if !echoed {
			fam = nil
		}
		if fam != nil && fam.prompt.MatchString(line) || echoed && s.learned != "" && line == s.learned && !(s.integration && isShell(program)) {
			st.done, st.completion = true, CompletionPrompt
			st.to = Pos{Line: cursor.Line}
			st.prompt = line
			return st, 0
		}
		if p.startup && fam == nil && !s.integration && !s.exited && s.spec.Mode == ModePTY && isShell(program) && wholeShellPrompt(line) {
			// A shell without termgate's integration (bash --norc, sh): a
			// line that is all prompt, with the shell blocked reading its
			// terminal, is its prompt, learned for the commands to come.
			if s.readingInput() {
				s.learned = line
				st.done, st.completion = true, CompletionPrompt
				st.to = Pos{Line: cursor.Line}
				st.prompt = line
				return st, 0
			}
			return st, 2 * time.Millisecond // look again once it has gone to read
		}
	}

	// 3. Exit.
	if s.exited {
		st.done, st.completion = true, CompletionExited
		code := s.exitCode
		st.exitCode = &code
		return st, 0
	}

	// 4. Quiet period, only where nothing better can tell. A shell that
	// reports its commands' ends, or a REPL whose prompt we know, is still
	// working until it says so, unless the screen shows a question that
	// waits for an answer (read -p, input("name? "), a remote prompt over
	// ssh) or a full-screen program (vim, top, less).
	line := strings.TrimSpace(s.screen.LineText())
	waiting := line != "" && (cursor.Line > p.start.Line || p.startup || cursor.Col > p.start.Col)
	known := s.familyLocked(program, p.startup) != nil
	reportsEnd := s.integration || s.learned != "" || known && s.spec.Mode == ModePTY
	if reportsEnd && !waiting && !s.screen.AltScreen() {
		return st, 0
	}
	last := p.at
	if s.lastOutput.After(last) {
		last = s.lastOutput
	}
	need := o.Quiet
	if p.startup && s.bytesOut == 0 && need < startupSilence {
		// A program that has printed nothing yet is most likely still
		// loading, not waiting for input.
		need = startupSilence
	}
	if quiet := now.Sub(last); quiet >= need {
		st.done, st.completion = true, CompletionQuiet
		return st, 0
	} else {
		return st, need - quiet
	}
}

// familyLocked returns the prompt family of the foreground program. At
// start, a launcher (pyenv's shim is a bash script) may still be in the
// foreground: then the program asked for names the prompt.
func (s *Session) familyLocked(program string, startup bool) *promptFamily {
	if fam := familyOf(program); fam != nil || !startup {
		return fam
	}
	return familyOf(filepath.Base(s.spec.Argv[0]))
}

// startupSilence is how long a new session's program may print nothing at
// all before its start is called quiet.
const startupSilence = time.Second

// programLocked returns the terminal's foreground program name.
func (s *Session) programLocked() string {
	if s.pty == nil || s.exited {
		return filepath.Base(s.spec.Argv[0])
	}
	_, name := foreground(s.pty.Fd())
	if name == "" {
		return filepath.Base(s.spec.Argv[0])
	}
	return name
}

// renderLocked turns a completed (or timed-out) wait into a Result.
func (s *Session) renderLocked(st state, fresh bool) Result {
	r := Result{
		Complete:   st.completion != CompletionTimeout,
		Completion: st.completion,
		ExitCode:   st.exitCode,
		Prompt:     strings.TrimRight(st.prompt, " "),
		Continued:  st.continued,
	}
	if s.pending != nil && s.pending.idle {
		// Nothing was running: the read is complete whatever ended it.
		r.Complete = true
	}
	if s.screen.AltScreen() {
		// A full-screen program: what a human reads is the screen.
		r.Output = s.screen.Render()
		r.Screen = true
		s.readPos = s.screen.CursorPos()
		s.finishLocked(r)
		return r
	}
	text, lost := s.screen.Text(st.from, st.to)
	whole := text
	r.LostLines = lost
	if fresh && s.spec.Mode == ModePTY && st.completion != CompletionCommandFinished {
		text = stripEcho(text, s.pending.input)
	} else if st.completion == CompletionCommandFinished {
		text = strings.TrimPrefix(text, "\n")
	}
	skipped := whole[:len(whole)-len(text)]
	if st.completion != CompletionCommandFinished && st.completion != CompletionPrompt {
		// Drop a trailing prompt the program is showing.
		if line := s.screen.LineText(); line != "" {
			fam := familyOf(s.programLocked())
			if fam != nil && fam.prompt.MatchString(line) || line == s.learned {
				if i := strings.LastIndex(text, "\n"); i >= 0 && text[i+1:] == strings.TrimRight(line, " ") {
					text = text[:i]
				} else if text == strings.TrimRight(line, " ") {
					text = ""
				}
				r.Prompt = strings.TrimRight(line, " ")
			}
		}
	}
	r.Output = strings.TrimRight(text, "\n")
	r.OutputRows = s.outputRowsLocked(st.from, st.to, lost, skipped, r.Output)
	if st.completion == CompletionCommandFinished || st.completion == CompletionPrompt {
		s.readPos = s.screen.CursorPos()
	} else {
		s.readPos = st.to
	}
	s.finishLocked(r)
	return r
}

func (s *Session) finishLocked(r Result) {
	if r.Complete {
		s.pending = nil
	} else if s.pending != nil {
		// A later read continues from here, still waiting for the same
		// command's end.
		s.pending.start = s.readPos
		s.pending.input = nil
	}
}

// stripEcho removes the terminal's echo of the input lines from the start
// of text: the first line is the echo of the first input line (the prompt
// is before the start position), later ones may carry a continuation prompt.
func stripEcho(text string, input []string) string {
	if len(input) == 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	// Each leading line must be the echo of an input line, in order. An
	// input line whose echo is not there (the cursor was already past it)
	// is skipped, and so is a blank line before more echo; an empty input
	// line is only ever matched in its own turn.
	match := func(line string, from int, last bool) int {
		for k := from; k < len(input); k++ {
			if strings.TrimSpace(input[k]) == "" && k != from {
				continue
			}
			if echoOf(line, input[k], last) {
				return k
			}
		}
		return -1
	}
	i, j := 0, 0
	for i < len(lines) && j < len(input) {
		last := i == len(lines)-1
		if k := match(lines[i], j, last); k >= 0 {
			i, j = i+1, k+1
			continue
		}
		if strings.TrimSpace(lines[i]) == "" && !last && match(lines[i+1], j, i+1 == len(lines)-1) >= 0 {
			i++
			continue
		}
		break
	}
	return strings.Join(lines[i:], "\n")
}

// echoOf reports whether a screen line is the echo of an input line (after
// the prompt or a continuation prompt). The last line may hold only the
// start of it: the echo is still arriving (the redactor holds the end of a
// line back for a moment).
func echoOf(line, input string, last bool) bool {
	want := strings.TrimSpace(input)
	got := strings.TrimRight(line, " ")
	switch {
	case want == "":
		g := strings.TrimSpace(got)
		return len(g) <= 12 && !strings.ContainsAny(g, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	case strings.HasSuffix(got, want):
		return true
	case last:
		// The start of the echo, after a prompt: some tail of the line
		// begins the input.
		for p := 0; p < len(got); p++ {
			if p > 0 && got[p-1] != ' ' || got[p] == ' ' {
				continue
			}
			if tail := got[p:]; len(tail) >= min(3, len(want)) && strings.HasPrefix(want, tail) {
				return true
			}
		}
		return strings.TrimSpace(got) == ""
	}
	return false
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(rows, cols int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.pty != nil {
		if err := pty.Setsize(s.pty, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
			return fmt.Errorf("resizing terminal: %w", err)
		}
	}
	s.screen.Resize(rows, cols)
	s.spec.Rows, s.spec.Cols = rows, cols
	if s.tap != nil {
		s.tap.Resize(rows, cols)
	}
	return nil
}

// Screen returns the rendered visible screen and the cursor.
func (s *Session) Screen() (text string, row, col int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, col = s.screen.Cursor()
	return s.screen.Render(), row, col
}

// Scrollback returns the last n lines of history and screen.
func (s *Session) Scrollback(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.screen.Scrollback(n)
}

// Status returns a snapshot of the session.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		ID: s.id, Name: s.spec.Name, Argv: s.spec.Argv, Dir: s.spec.Dir, Mode: s.spec.Mode,
		Pid: s.cmd.Process.Pid, Alive: !s.exited && !s.closed,
		Rows: s.spec.Rows, Cols: s.spec.Cols,
		AltScreen: s.screen.AltScreen(), AppCursor: s.screen.AppCursor(),
		Integration: s.integration, Title: s.screen.Title(),
		Started: s.started, LastInput: s.lastInput, BytesIn: s.bytesIn, BytesOut: s.bytesOut,
		Prompt: s.learned,
	}
	if s.exited {
		code := s.exitCode
		st.ExitCode = &code
		st.Signal = s.signal
		st.Program = filepath.Base(s.spec.Argv[0])
		return st
	}
	if s.pty != nil && !s.closed {
		pgid, name := foreground(s.pty.Fd())
		st.Program = name
		st.Busy = pgid != 0 && pgid != st.Pid
		st.EchoOff = echoOff(s.pty.Fd())
	}
	if st.Program == "" {
		st.Program = filepath.Base(s.spec.Argv[0])
	}
	return st
}

// Idle returns how long since the session's last input (or start).
func (s *Session) Idle() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.started
	if s.lastInput.After(last) {
		last = s.lastInput
	}
	return time.Since(last)
}

// Close ends the session: EOF first (ctrl+d in a PTY, closing stdin for a
// pipe), then SIGHUP, SIGTERM and SIGKILL to every process of the session's
// tree, grace apart, stopping as soon as none is left. It is idempotent and
// safe to call concurrently; every call returns the first call's result.
func (s *Session) Close(ctx context.Context, grace time.Duration) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx, grace) })
	return s.closeErr
}

func (s *Session) close(ctx context.Context, grace time.Duration) error {
	if grace <= 0 {
		grace = time.Second
	}
	pid := s.cmd.Process.Pid
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if !exited {
		s.writeMu.Lock()
		if s.pty != nil {
			_, _ = s.pty.Write([]byte{4})
		} else {
			_ = s.stdin.Close()
		}
		s.writeMu.Unlock()
		select {
		case <-s.waitDone:
		case <-time.After(grace):
		case <-ctx.Done():
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGKILL} {
		n := signalTree(pid, sig)
		if n == 0 {
			break
		}
		if ctx.Err() != nil {
			continue // no time for grace: go straight on to SIGKILL
		}
		if waitGone(pid, grace) {
			break
		}
	}
	// The leader has been killed if nothing else; collect it.
	select {
	case <-s.waitDone:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("session %s: process %d did not exit after SIGKILL", s.id, pid)
	}
	s.mu.Lock()
	s.closed = true
	s.notifyLocked()
	s.mu.Unlock()
	s.writeMu.Lock()
	if s.pty != nil {
		s.pty.Close()
	} else {
		s.stdin.Close()
		s.out.Close()
	}
	s.writeMu.Unlock()
	<-s.readerDone
	s.closeOutputLog()
	return os.RemoveAll(s.privDir)
}

// Closed reports whether Close has finished.
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Done is closed when the session's program has exited.
func (s *Session) Done() <-chan struct{} { return s.waitDone }

var _ io.Writer = (*Screen)(nil)
