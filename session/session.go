package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

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
	// Taint, with a Redactor, is the session's set of found and held
	// secrets, shared by every view of it (see Session.Redact); nil: the
	// session makes its own. The session lets go of it when it closes.
	Taint *redact.Taint
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
	// OnPanic, when set, is told about a panic recovered in one of the
	// session's goroutines (with its stack); when nil, the Manager's
	// handler is used, or the default slog logger.
	OnPanic PanicFunc
	// ExecGate, when set, holds every exec of the session's processes
	// until its judge answers (with or without Sandbox).
	ExecGate *ExecGate
	// OnUnjudged, when set, is told about each line the session's shell
	// refused because the gateway typed and judged no such line (see
	// tickets.go).
	OnUnjudged UnjudgedHandler

	// withoutTickets starts bash without the ticket check: for the
	// benchmark that measures what the check costs.
	withoutTickets bool
}

// ExecGate is how a session's (or an Exec's) execs are judged.
type ExecGate struct {
	// Judge returns the judge of one session, by its id (an Exec's id
	// starts with "exec-").
	Judge      func(id string) sandbox.ExecJudge
	Mode       string // for the status: enforce, audit
	BestEffort bool   // run without the gate where the kernel cannot hold execs (and say so)
	Programs   *sandbox.ProgramIndex
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
	// Earlier counts lines of output that belong to an earlier command (one
	// still running when this input was typed): they are not in Output,
	// which says so in a note, and the next session_read returns them.
	Earlier int
}

// Status is a snapshot of a session.
type Status struct {
	ID, Name string
	Argv     []string
	Dir      string
	Mode     Mode
	Pid      int
	Program  string // the terminal's foreground program
	// ProgramPid is the process identified as Program: the foreground
	// process, or the one behind the relays it runs (identify); 0 when
	// unknown. Its current directory is where a typed line's relative
	// paths lead.
	ProgramPid int
	Busy       bool // the foreground program is not the session's own process
	Alive      bool
	ExitCode   *int
	Signal     string
	Rows, Cols int
	AltScreen  bool
	AppCursor  bool
	EchoOff    bool
	// ReadsLines: the foreground program reads a line at a time (the
	// terminal is in canonical mode, or it is a line editor termgate
	// knows); Judged: it is a line editor termgate knows (a shell, or a
	// REPL family), whose line is judged at each Enter.
	ReadsLines, Judged bool
	// Ahead: an earlier command still runs and the foreground program is
	// not waiting for input, so what is typed now is read by whatever
	// reads next: that program, or the session's own once it ends (Own).
	Ahead bool
	// Own is the session's own program, identified as Program is.
	Own         string
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
	pty     *os.File    // PTY master, or nil in pipe mode
	stdin   *os.File    // pipe mode
	out     *os.File    // what the reader reads
	privDir string      // generated rc files, history; removed on close
	startup *startupLog // what the user's rc files wrote to stderr (startlog.go); nil in pipe mode
	grants  *grants     // what a confined session's sandbox grants (refused.go); set before it starts
	// sysRefused: the calls its seccomp filter refused, without the exec
	// gate (sysrefused.go); set before it starts.
	sysRefused *sysRefused
	outlog     *outputLog

	// The shell's ticket check (tickets.go).
	gateDir   string   // the gateway's files the session reads only (tickets, inputrc); removed on close
	tickets   *tickets // the shell's tickets, or nil
	lastTyped byte     // the last byte written to the terminal (guarded by mu)

	integration bool
	markKey     string   // the key every shell-integration mark carries
	rcFiles     []string // generated rc files, removed once the shell read them

	// turn is held by the one call (send, keys, new read, start) in
	// flight; see acquire.
	turn chan struct{}
	// wsem is held by the one write in flight; see write.
	wsem chan struct{}
	// closing is closed when Close begins: waiting and blocked writes
	// fail at once.
	closing     chan struct{}
	closingOnce sync.Once
	// replyKick wakes replyLoop, which writes the queued terminal
	// replies; replyDone is closed when it returns.
	replyKick chan struct{}
	replyDone chan struct{}

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	screen     *Screen
	bytesIn    int64
	bytesOut   int64
	lastOutput time.Time // when output last reached the screen
	lastRead   time.Time // when the program last wrote (before any redaction hold)
	unshown    bool      // the reader holds output the screen has not seen yet
	stream     *redact.Stream
	taint      *redact.Taint // with a redactor: the session's found and held secrets (repair.go)
	tap        Tap
	launched   *sandbox.Launch // how the program was started confined, or nil
	sandbox    sandbox.Status
	lastInput  time.Time
	started    time.Time
	running    time.Time // when the program itself began (after the launcher's exec)
	readPos    Pos       // where the next "new" read starts
	backlog    []string  // earlier output an input's result left out, for the next read
	pending    *pending
	line       lineState // what was typed into the line editor since its last Enter
	turnOp     string    // the call holding the turn
	turnAt     time.Time // since when
	replies    []byte    // terminal replies waiting for replyLoop
	broken     error     // set when one of the session's goroutines failed
	scanCost   int64     // bytes the last wait_for scanned, all scans together
	frozen     *frozen   // what a closed session keeps of its screen (frozen.go)
	learned    string    // prompt learned at start
	ready      bool      // the wait for the first prompt is over
	exited     bool
	exitCode   int
	signal     string
	closed     bool
	readerDone chan struct{}
	waitDone   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

func start(id string, spec Spec) (*Session, error) {
	s := &Session{
		id:         id,
		spec:       spec,
		changed:    make(chan struct{}),
		started:    time.Now(),
		readerDone: make(chan struct{}),
		waitDone:   make(chan struct{}),
		turn:       make(chan struct{}, 1),
		wsem:       make(chan struct{}, 1),
		closing:    make(chan struct{}),
		replyKick:  make(chan struct{}, 1),
		replyDone:  make(chan struct{}),
	}
	dir, err := os.MkdirTemp("", sandbox.TempPattern("session"))
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
		s.startup = newStartupLog(dir, spec.Sandbox, lookupEnv(env, "HOME"))
		key := make([]byte, 16)
		if _, err := rand.Read(key); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("shell integration key: %w", err)
		}
		s.markKey = hex.EncodeToString(key)
		if s.gateDir, err = newGateDir(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if filepath.Base(argv[0]) == "bash" && !spec.withoutTickets {
			if s.tickets, err = newTickets(s.gateDir); err != nil {
				os.RemoveAll(dir)
				os.RemoveAll(s.gateDir)
				return nil, err
			}
		}
		argv, env, s.rcFiles, ok, err = shellIntegration(argv, env, dir, s.gateDir, s.markKey, s.startup.path, s.tickets != nil)
		if err != nil {
			os.RemoveAll(dir)
			os.RemoveAll(s.gateDir)
			return nil, err
		}
		s.integration = ok
		if !ok {
			s.tickets = nil
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Args[0] = filepath.Base(spec.Argv[0])
	cmd.Path = argv[0]
	cmd.Dir = spec.Dir
	cmd.Env = env
	// Pdeathsig: if the server dies without closing its sessions, the
	// session leader gets SIGKILL rather than living on.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	s.screen = NewScreen(spec.Rows, spec.Cols, spec.Scrollback, s.reply)
	if s.integration {
		s.screen.SetMarkKey(s.markKey)
	}
	if err := s.openOutputLog(); err != nil {
		s.cleanupFailed(nil)
		return nil, err
	}
	var begin func() error // starts cmd: directly, or as the launcher
	var undo func()        // closes what begin opened, when the start fails
	switch spec.Mode {
	case ModePTY:
		attr.Setctty = true
		cmd.SysProcAttr = attr
		begin = func() error {
			f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: uint16(spec.Rows), Cols: uint16(spec.Cols)}, attr)
			if err != nil {
				return err
			}
			if f, err = pollable(f); err != nil {
				return err
			}
			s.pty, s.out = f, f
			return nil
		}
		undo = func() {
			if s.pty != nil {
				s.pty.Close()
			}
		}
	case ModePipe:
		cmd.SysProcAttr = attr
		inR, inW, err := os.Pipe()
		if err != nil {
			s.cleanupFailed(nil)
			return nil, fmt.Errorf("creating pipe: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			s.cleanupFailed(nil)
			return nil, fmt.Errorf("creating pipe: %w", err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
		s.stdin, s.out = inW, outR
		begin = func() error {
			err := cmd.Start()
			inR.Close()
			outW.Close()
			return err
		}
		undo = func() {
			inR.Close()
			outW.Close()
			inW.Close()
			outR.Close()
		}
	default:
		s.cleanupFailed(nil)
		return nil, fmt.Errorf("unknown mode %q", spec.Mode)
	}
	if err := s.launch(cmd, argv, env, begin); err != nil {
		undo()
		s.cleanupFailed(cmd)
		return nil, err
	}
	s.cmd = cmd
	// The start's quiet period counts from the program's own start: a
	// launcher slowed by a busy host must not pass for a silent program.
	s.running = time.Now()
	if spec.NewTap != nil {
		s.tap = spec.NewTap(id)
	}
	if spec.Redactor != nil {
		s.taint = spec.Taint
		if s.taint == nil {
			s.taint = redact.NewTaint(redact.TaintLimits{})
		}
		s.screen.trackPrints()
		s.stream = spec.Redactor.NewStreamWith(s.show, redact.StreamOptions{Taint: s.taint, Repair: s.repair})
	}
	go s.readLoop()
	go s.waitLoop()
	if s.pty != nil {
		go s.replyLoop()
	} else {
		close(s.replyDone)
	}
	return s, nil
}

// launch starts cmd with begin: through the sandbox launcher when the
// session is confined or its execs are gated (sandbox.Start: one launch
// API for sessions, exec and `termgate sandbox run`), directly otherwise.
func (s *Session) launch(cmd *exec.Cmd, argv, env []string, begin func() error) error {
	spec := s.spec
	var sb sandbox.Spec
	switch {
	case spec.Sandbox != nil:
		sb = *spec.Sandbox
	case spec.ExecGate != nil:
		sb = sandbox.Spec{Unconfined: true, UID: -1, GID: -1} // unconfined, but its execs judged
	default:
		if err := begin(); err != nil {
			return fmt.Errorf("starting %s: %w", spec.Argv[0], err)
		}
		return nil
	}
	tmp := filepath.Join(s.privDir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("creating the session's tmp: %w", err)
	}
	sb.Argv, sb.Dir, sb.Env = argv, spec.Dir, env
	if !sb.Unconfined {
		sb.Write = append(sb.Write, s.privDir) // history and rc files too
		if s.gateDir != "" {
			sb.Read = append(sb.Read, s.gateDir) // tickets and inputrc: read only
		}
	}
	o := sandbox.Options{Name: s.id, Tmp: tmp}
	if g := spec.ExecGate; g != nil {
		o.Judge, o.GateMode, o.GateBestEffort, o.Programs = g.Judge(s.id), g.Mode, g.BestEffort, g.Programs
	} else if !sb.Unconfined {
		s.sysRefused = &sysRefused{}
		o.Refused = s.sysRefused.add
	}
	l, err := sandbox.Start(cmd, sb, o, begin)
	if err != nil {
		return fmt.Errorf("session not started: %w", err)
	}
	st := l.Status()
	s.sandbox, s.launched = st, l
	if !sb.Unconfined && st.Enforced && !slices.ContainsFunc(st.NotEnforced, func(x string) bool { return strings.HasPrefix(x, "landlock") }) {
		// What the session may reach (its tmp lies in its private
		// directory, which Write holds).
		s.grants = &grants{read: sb.Read, write: append(append([]string{}, sb.Write...), sb.Devices...), home: lookupEnv(env, "HOME")}
	}
	return nil
}

// cleanupFailed undoes a start that did not happen: a process begun is
// killed and waited for (a launch that failed has already released its
// cgroup, tmp and gate), the output log closed, the private directory
// removed.
func (s *Session) cleanupFailed(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	s.closeOutputLog()
	os.RemoveAll(s.privDir)
	if s.tickets != nil {
		s.tickets.close()
	}
	if s.gateDir != "" {
		os.RemoveAll(s.gateDir)
	}
}

// Sandbox says how the session is confined.
func (s *Session) Sandbox() sandbox.Status { return s.sandbox }

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Name returns the session's name.
func (s *Session) Name() string { return s.spec.Name }

// Pid returns the session leader's process id.
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// show puts output on the screen; with a redactor it runs on the
// redactor's schedule (at once, or after it held a trailing token), on the
// redactor's goroutine: a panic here is recovered as the reader's would be.
func (s *Session) show(b []byte) {
	defer s.recoverIn("output")
	// Lines the shell refused for want of a ticket are reported once
	// s.mu is let go (defers run last first).
	var unjudged []string
	var lost int
	defer func() { s.reportUnjudged(unjudged, lost) }()
	// Rows the screen buffered for the output log go to disk after s.mu
	// is let go (defers run last first).
	defer s.flushOutputLog()
	s.mu.Lock()
	tap, broken := s.tap, s.broken != nil
	s.mu.Unlock()
	if broken {
		return
	}
	if tap != nil {
		tap.Output(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen != nil || s.broken != nil {
		return
	}
	s.screen.Write(b)
	unjudged, lost = s.screen.takeUnjudged()
	if len(s.rcFiles) > 0 && s.screen.MarkSeq() > 0 {
		// The shell printed its first mark: it has read its rc, whose
		// mark key no program it runs may read.
		for _, f := range s.rcFiles {
			_ = os.Remove(f)
		}
		s.rcFiles = nil
	}
	s.lastOutput = time.Now()
	s.unshown = false // what the reader read is on the screen (or held by the redactor)
	s.notifyLocked()
}

func (s *Session) readLoop() {
	defer close(s.readerDone)
	defer s.recoverIn("reader")
	buf := make([]byte, 16<<10)
	pipe := s.spec.Mode == ModePipe
	stream := s.stream
	if stream != nil {
		defer stream.Close()
	}
	read := s.out.Read
	if s.pty != nil {
		if rc, err := s.pty.SyscallConn(); err == nil {
			read = func(b []byte) (int, error) { return s.readShown(rc, b) }
		}
	}
	for {
		n, err := read(buf)
		if n > 0 {
			b := buf[:n]
			if pipe {
				b = toCRLF(b)
			}
			s.mu.Lock()
			s.bytesOut += int64(n)
			s.lastRead = time.Now()
			s.unshown = true
			s.mu.Unlock()
			if stream != nil {
				stream.Write(b)
			} else {
				s.show(b)
			}
			s.mu.Lock()
			s.unshown = false
			s.mu.Unlock()
		}
		if err != nil {
			return // EOF, or EIO once every holder of the PTY's other end is gone
		}
	}
}

// readShown reads the terminal's next output, marking it unshown before
// the bytes leave the kernel. Marked after the read returned, there was a
// moment when the kernel held no output, the reader held it unmarked, and
// readingInput said the screen showed everything the program printed: the
// line at Enter was then read without its latest echo. Under load that
// moment is long (after a read the reader waits for a processor). The
// master is non-blocking (pollable): the mark is undone when nothing was
// there, and the poller waits for more.
func (s *Session) readShown(rc syscall.RawConn, b []byte) (int, error) {
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		s.mu.Lock()
		s.unshown = true
		s.mu.Unlock()
		for {
			n, rerr = syscall.Read(int(fd), b)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr != nil || n <= 0 {
			s.mu.Lock()
			s.unshown = false // nothing was read
			s.mu.Unlock()
		}
		return rerr != syscall.EAGAIN
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &os.PathError{Op: "read", Path: s.pty.Name(), Err: rerr}
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
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
	defer s.recoverIn("waiter")
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
	if s.launched != nil {
		// What left the process session (setsid) is still in the cgroup;
		// the exec gate stops with the launch.
		_ = s.launched.End()
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

// callDeadline is when a call's wait ends: its timeout bounds the whole
// call, waiting for the session's turn included.
func callDeadline(o WaitOpts) time.Time {
	if o.NoWait {
		return time.Time{}
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return time.Now().Add(o.Timeout)
}

// beforePromptLocked is t, the output from the last read to the cursor,
// without its last line when that is the cursor's line and the program's
// prompt: the line this input is typed on, not earlier output. (A start
// can end on a quiet screen before a slow program's prompt comes; the
// prompt then follows.)
func (s *Session) beforePromptLocked(t string) string {
	if strings.HasSuffix(t, "\n") {
		return strings.TrimRight(t, "\n")
	}
	i := strings.LastIndexByte(t, '\n') + 1
	isPrompt := s.promptPrefix()
	if last := strings.TrimRight(t[i:], " "); isPrompt(last) || isPrompt(last+" ") {
		t = t[:i]
	}
	return strings.TrimRight(t, "\n")
}

// newPendingLocked makes the pending input of a call that is about to type.
// Output no call has returned yet (an earlier command's, still running, or
// printed after its call returned) is not this input's: it is kept for the
// next read, and the result says so.
func (s *Session) newPendingLocked(op string) *pending {
	cur := s.screen.CursorPos()
	p := &pending{op: op, markSeq: s.screen.MarkSeq(), start: cur, at: time.Now()}
	p.lastSeq, p.lastAt = p.markSeq, cur
	if s.screen.AltScreen() {
		p.alt, p.resume = true, s.screen.MainResumePos()
	} else if s.readPos.Before(cur) && s.readPos.Line >= s.screen.FirstLine() {
		if t, _ := s.screen.Text(s.readPos, cur); strings.TrimSpace(t) != "" {
			t = s.beforePromptLocked(t)
			if strings.TrimSpace(t) != "" {
				s.backlog = appendBacklog(s.backlog, t)
				p.earlier = strings.Count(t, "\n") + 1
			}
		}
	}
	if s.commandRunning() {
		p.owed = 1
	}
	if prev := s.pending; prev != nil && !prev.idle && !prev.startup || !p.alt && s.busyREPLLocked() {
		// The last input's call ended before the input did (a timeout, a
		// cancel, a wait_for match), or a REPL is not at its prompt: this
		// input is typed ahead of what still runs.
		p.ahead, p.afterRunning = true, true
	}
	s.pending = p
	s.readPos = cur
	return p
}

// busyREPLLocked reports whether the foreground program is one whose
// prompt termgate knows (or learned) and the cursor is not at it.
func (s *Session) busyREPLLocked() bool {
	if s.spec.Mode != ModePTY || s.atShellPrompt() {
		return false // the session's shell reads at its prompt: no REPL is in front
	}
	program := s.programLocked()
	fam := familyOf(program)
	if fam == nil && (s.learned == "" || s.integration) {
		return false
	}
	line := s.screen.LineText()
	return !(fam != nil && fam.prompt.MatchString(line) || s.learned != "" && line == s.learned)
}

// Send types text (followed by Enter when enter is set) and waits for it to
// complete. Newlines in text are typed as Enter in a PTY, one line at a
// time: each once the program has taken the one before. The result covers
// every line typed: it ends when the program is back at its prompt after
// the last one, and holds what each line printed, without their echo or the
// prompts (continuation prompts too) they were typed at.
//
// One call runs at a time on a session: Send waits for a call in flight
// until its own timeout, then fails with a BusyError, having typed nothing.
func (s *Session) Send(ctx context.Context, text string, enter bool, o WaitOpts) (Result, error) {
	deadline := callDeadline(o)
	release, err := s.acquire(ctx, opSend, deadline)
	if err != nil {
		return Result{}, err
	}
	defer release()
	banner, err := s.awaitReady(ctx, o, deadline)
	if err != nil {
		return Result{}, err
	}
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
	p := s.newPendingLocked(opSend)
	p.input, p.earlier = lines, p.earlier+banner
	s.mu.Unlock()
	if err := s.typeInput(ctx, p, b, o, deadline); err != nil {
		s.abandon(p)
		s.voidTickets()
		return Result{}, err
	}
	defer s.voidTickets()
	return s.wait(ctx, o, true, deadline)
}

// SendKeys presses keys and waits for the terminal to settle. It takes the
// session's turn as Send does.
func (s *Session) SendKeys(ctx context.Context, keys []Key, o WaitOpts) (Result, error) {
	deadline := callDeadline(o)
	release, err := s.acquire(ctx, opKeys, deadline)
	if err != nil {
		return Result{}, err
	}
	defer release()
	banner, err := s.awaitReady(ctx, o, deadline)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	m := KeyModes{AppCursor: s.screen.AppCursor(), AppKeypad: s.screen.AppKeypad()}
	p := s.newPendingLocked(opKeys)
	p.keys, p.earlier = true, p.earlier+banner
	s.mu.Unlock()
	var b []byte
	for _, k := range keys {
		b = append(b, k.Bytes(m)...)
	}
	if err := s.typeInput(ctx, p, b, o, deadline); err != nil {
		s.abandon(p)
		s.voidTickets()
		return Result{}, err
	}
	defer s.voidTickets()
	return s.wait(ctx, o, true, deadline)
}

// abandon forgets an input whose typing failed (refused at Enter, or not
// taken in) before any of its lines ran: its typed text was cleared, so
// nothing it left on the screen is output. When some lines did run, their
// output stays for the next read.
func (s *Session) abandon(p *pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != p || p.enters > 0 {
		return
	}
	s.pending = nil
	s.readPos = s.screen.CursorPos()
}

// typeInput types input line by line. In a PTY it stops at each Enter that
// goes to a line editor (a shell, or a REPL whose prompt termgate knows) to
// ask o.Judge about the line the terminal shows. Plain text typed at an
// empty prompt that is one of o.Approved needs no second look: it cannot
// show anything but itself. Enter into any other program (vim, less, fzf,
// top, a program reading raw keys) is a key like the others: the gate
// judged the keys themselves, and there is no line to read (see doc.go).
func (s *Session) typeInput(ctx context.Context, p *pending, b []byte, o WaitOpts, deadline time.Time) error {
	if err := s.reservedKeys(b); err != nil {
		return err
	}
	if s.spec.Mode != ModePTY {
		err := s.write(ctx, b, deadline, true)
		s.mu.Lock()
		p.typedAt = time.Now()
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	p.rowOf = append(p.rowOf, p.start.Line)
	s.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexAny(b, acceptKeys)
		if i < 0 {
			err := s.typeTracked(ctx, b, deadline)
			s.mu.Lock()
			p.typedAt = time.Now()
			s.mu.Unlock()
			return err
		}
		body, key := b[:i], b[i]
		b = b[i+1:]
		s.mu.Lock()
		program := s.programLocked()
		editor := lineEditor(program)
		before, known := s.pendingLineLocked(program)
		line := s.line
		s.mu.Unlock()
		judge := o.Judge != nil && editor
		// Plain text typed at a line known to be empty (on the screen and
		// by what was typed), and already judged as it was sent, cannot
		// show anything but itself: no second look.
		fast := !judge || isPlain(body) && known && before == "" && !line.unknown && line.text == "" && containsLine(o.Approved, string(body))
		typedAt := time.Now()
		if len(body) > 0 {
			if err := s.typeTracked(ctx, body, deadline); err != nil {
				return err
			}
		}
		shown, shownOK := "", false
		if !fast {
			// With the terminal's echo off nothing shows what was typed:
			// there is no echo to wait for.
			if !s.settle(ctx, typedAt, len(body) > 0 && !s.echoFlagOff(), judgeSettle, deadline) {
				if s.isClosing() {
					return ErrClosed
				}
				// A line editor whose line could not be read: nothing may
				// run unjudged. Cancel what was typed.
				s.cancelInput(ctx, deadline, program)
				if err := ctx.Err(); err != nil {
					return err
				}
				return fmt.Errorf("%w: the terminal did not settle, so the line at Enter could not be read; the typed line was cleared and nothing ran", ErrLineRefused)
			}
			s.mu.Lock()
			program = s.programLocked()
			shown, shownOK = s.pendingLineLocked(program)
			line = s.line
			s.mu.Unlock()
			if err := judgeAtEnter(o.Judge, shown, shownOK, line); err != nil {
				s.cancelInput(ctx, deadline, program)
				return refusedAtEnter(err)
			}
		}
		s.mu.Lock()
		if p.keys && shownOK {
			p.shown = append(p.shown, shown)
		}
		p.lastSeq, p.lastAt = s.screen.MarkSeq(), s.screen.CursorPos()
		s.mu.Unlock()
		// The shell runs no line without a ticket (tickets.go).
		if err := s.issueTicket(); err != nil {
			s.cancelInput(ctx, deadline, program)
			return fmt.Errorf("%w: %v; the typed line was cleared and nothing ran", ErrLineRefused, err)
		}
		if err := s.write(ctx, []byte{key}, deadline, true); err != nil {
			s.mu.Lock()
			s.line.unknown = true
			s.mu.Unlock()
			return err
		}
		s.mu.Lock()
		s.line.accepted()
		p.enters++
		p.typedAt = time.Now()
		s.mu.Unlock()
		if len(b) > 0 {
			// Type the next line as a human would: once the program has
			// taken the Enter and waits for input again. Typed sooner, it
			// reaches a line editor between two reads, while the terminal
			// is still in cooked mode, and the kernel echoes it a second
			// time. A program still busy after two seconds gets it as
			// type-ahead, as before.
			ok := s.settle(ctx, time.Now(), false, typeAheadAfter, deadline)
			if err := ctx.Err(); err != nil {
				return err
			}
			s.mu.Lock()
			// The row the next line is typed on is its prompt's when the
			// program is reading at an empty prompt; otherwise it is not
			// known, and the echo is found by its text.
			if line, known := s.pendingLineLocked(s.programLocked()); ok && known && line == "" {
				p.rowOf = append(p.rowOf, s.screen.CursorPos().Line)
			} else {
				p.rowOf, p.ahead = append(p.rowOf, -1), p.ahead || !ok
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	p.typedAt = time.Now()
	s.mu.Unlock()
	return nil
}

// typeTracked types bytes that hold no accept key and keeps the tracked
// line up to date; a write that may have typed part of them leaves the
// line unknown.
func (s *Session) typeTracked(ctx context.Context, b []byte, deadline time.Time) error {
	err := s.write(ctx, b, deadline, true)
	s.mu.Lock()
	if err != nil {
		s.line.unknown, s.line.text = true, ""
	} else {
		s.line.typed(b)
	}
	s.mu.Unlock()
	return err
}

// isClosing reports whether Close has begun.
func (s *Session) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// lineEditor reports whether the foreground program edits a line that
// Enter runs: a shell, or a REPL whose prompt termgate knows. It is decided
// by the program in the terminal's foreground, not by the screen, which a
// program can paint to look like anything.
func lineEditor(program string) bool {
	return isShell(program) || familyOf(program) != nil
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

// How long typing waits for the terminal to settle: before judging the line
// at Enter (a line that cannot be read is refused, so a busy host gets
// time), and before typing the next line of a send (a program still busy
// then gets it as type-ahead).
const (
	judgeSettle    = 5 * time.Second
	typeAheadAfter = 2 * time.Second
)

// settle waits until the program has taken in typed keys and shown their
// effect: every byte read from the terminal's input queue, its foreground
// process blocked again, all it printed on the screen, and output quiet for
// a few milliseconds. It reports false when that could not be confirmed
// within max (or by the deadline): the line on the screen may then be
// stale, and must not be judged as final.
func (s *Session) settle(ctx context.Context, start time.Time, typed bool, max time.Duration, deadline time.Time) bool {
	limit := start.Add(max)
	if !deadline.IsZero() && deadline.Before(limit) {
		limit = deadline
	}
	const quiet = 5 * time.Millisecond
	tick := time.NewTimer(quiet)
	defer tick.Stop()
	for {
		s.mu.Lock()
		last, ch := s.lastRead, s.changed
		s.mu.Unlock()
		now := time.Now()
		if (last.After(start) || !typed) && now.Sub(last) >= quiet && now.Sub(start) >= quiet {
			if s.readingInput() {
				s.mu.Lock()
				stream := s.stream
				s.mu.Unlock()
				if stream != nil {
					// What the redactor holds back (the end of the
					// typed line) goes to the screen now.
					stream.Flush()
				}
				return true
			}
		}
		if now.After(limit) {
			return false
		}
		tick.Reset(quiet)
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return false
		case <-s.closing:
			return false
		}
	}
}

// readingInput reports whether the terminal's foreground process is
// blocked with every typed byte taken in, and the screen shows all it
// printed: it waits for more input, and what the screen shows is what it
// printed last. (A process can be ahead of the screen: it may have read the
// next line, answered it and gone back to read, while its output still
// waits in the terminal or in the reader.)
func (s *Session) readingInput() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readingInputLocked()
}

func (s *Session) readingInputLocked() bool {
	if s.unshown {
		return false
	}
	// s.mu held, the reader takes nothing more from the terminal (it
	// marks output unshown, under s.mu, before it reads): what the
	// program printed is on the screen or in the terminal.
	ok := false
	s.ctl(func(fd uintptr) { ok = readingTerminal(fd) })
	return ok
}

// pendingLineLocked returns the line the program is reading and would run
// at Enter, when that can be known: the text after a shell's prompt (from
// its shell-integration input mark), or after a known REPL prompt. It reads
// the screen the program is drawing on, the alternate one too: a shell
// that switched to it is still a shell.
func (s *Session) pendingLineLocked(program string) (string, bool) {
	if s.exited || s.closed {
		return "", false
	}
	cur := s.screen.CursorPos()
	// The whole input, to the end of the last row it wraps onto, not the
	// cursor's row only (the cursor may sit on an earlier row of it).
	first, end := s.screen.LogicalLine(cur)
	if s.integration && isShell(program) {
		marks := s.screen.Marks(0)
		if len(marks) > 0 && marks[len(marks)-1].Kind == MarkInputStart && marks[len(marks)-1].OnAlt == s.screen.AltScreen() {
			text, _ := s.screen.Text(marks[len(marks)-1].Pos, end)
			return strings.TrimRight(text, " "), true
		}
		// No input mark: the session's own shell is running a command,
		// which may be another shell (bash inside bash) that has no marks.
	}
	row, _ := s.screen.Text(first, end)
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
// anything: earlier output an input's result left out first. Complete is
// false while a command sent earlier is still running. Unless o.NoWait, it
// waits for that command to complete, or, when nothing is running, for new
// output to arrive and settle (or for o.WaitFor). It takes the session's
// turn as Send does (NoWait: without waiting for it).
func (s *Session) Read(ctx context.Context, o WaitOpts) (Result, error) {
	deadline := callDeadline(o)
	release, err := s.acquire(ctx, opRead, deadline)
	if err != nil {
		return Result{}, err
	}
	defer release()
	s.mu.Lock()
	if s.frozen != nil {
		defer s.mu.Unlock()
		return s.frozenReadLocked(), nil
	}
	if s.pending == nil {
		if o.NoWait || len(s.backlog) > 0 && o.WaitFor == nil {
			// Earlier output an input left for this read is returned at
			// once, with whatever else is new.
			defer s.mu.Unlock()
			return s.readNowLocked(), nil
		}
		p := &pending{op: opRead, markSeq: s.screen.MarkSeq(), start: s.readPos, at: time.Now(), idle: true}
		p.lastSeq, p.lastAt = p.markSeq, p.start
		if s.screen.AltScreen() {
			p.alt, p.resume = true, s.screen.MainResumePos()
		}
		s.pending = p
	}
	s.mu.Unlock()
	defer s.voidTickets()
	return s.wait(ctx, o, false, deadline)
}

// readNowLocked returns what no call has returned yet, at once.
func (s *Session) readNowLocked() Result {
	r := Result{Complete: true}
	if s.screen.AltScreen() {
		r.Output, r.Screen = s.screen.Render(), true
		s.readPos = s.screen.MainResumePos()
	} else {
		from, to := s.readPos, s.screen.CursorPos()
		text, lost := s.screen.Text(from, to)
		s.readPos = to
		r.Output, r.LostLines = strings.TrimRight(text, "\n"), lost
		r.OutputRows = s.outputRowsLocked(from, to, lost, "", r.Output)
	}
	r.Output = s.withBacklogLocked(r.Output, false)
	if s.exited {
		code := s.exitCode
		r.Completion, r.ExitCode = CompletionExited, &code
	}
	return r
}

// WaitStart waits for a new session's first prompt and returns its banner.
// When an input got the turn first (it waited for the prompt itself), it
// returns what no call has returned yet.
func (s *Session) WaitStart(ctx context.Context, o WaitOpts) (Result, error) {
	deadline := callDeadline(o)
	release, err := s.acquire(ctx, opStart, deadline)
	if err != nil {
		return Result{}, err
	}
	defer release()
	s.mu.Lock()
	if s.frozen != nil {
		defer s.mu.Unlock()
		return s.frozenReadLocked(), nil
	}
	if s.ready && s.pending == nil {
		defer s.mu.Unlock()
		r := s.readNowLocked()
		r.Completion = CompletionPrompt
		return r, nil
	}
	s.pending = &pending{op: opStart, start: Pos{}, at: s.running, startup: true}
	s.mu.Unlock()
	r, err := s.startWait(ctx, o, deadline)
	return r, err
}

// awaitReady makes an input that got a new session's turn before
// session_start did wait for the program's first prompt, as typing sooner
// would reach a program still starting. The banner is kept for the next
// read; awaitReady returns how many lines it has.
func (s *Session) awaitReady(ctx context.Context, o WaitOpts, deadline time.Time) (int, error) {
	s.mu.Lock()
	if s.ready {
		s.mu.Unlock()
		return 0, nil
	}
	s.pending = &pending{op: opStart, start: Pos{}, at: s.running, startup: true}
	s.mu.Unlock()
	o.WaitFor, o.NoWait = nil, false
	r, err := s.startWait(ctx, o, deadline)
	if err != nil || strings.TrimSpace(r.Output) == "" {
		return 0, err
	}
	s.mu.Lock()
	s.backlog = appendBacklog(s.backlog, r.Output)
	s.mu.Unlock()
	return strings.Count(r.Output, "\n") + 1, nil
}

// startWait waits for the first prompt (s.pending is the startup input).
func (s *Session) startWait(ctx context.Context, o WaitOpts, deadline time.Time) (Result, error) {
	r, err := s.wait(ctx, o, true, deadline)
	s.mu.Lock()
	s.ready = s.ready || err == nil && r.Complete
	s.mu.Unlock()
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

// wait blocks until the pending input completes, the deadline passes or ctx
// ends, then renders the result. fresh says the wait follows an input (so
// the start position holds its echo).
func (s *Session) wait(ctx context.Context, o WaitOpts, fresh bool, deadline time.Time) (Result, error) {
	if o.Quiet <= 0 {
		o.Quiet = 300 * time.Millisecond
	}
	if deadline.IsZero() {
		deadline = time.Now()
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var quietTimer *time.Timer
	defer func() {
		if quietTimer != nil {
			quietTimer.Stop()
		}
	}()
	for {
		r, done, ch, quietIn := s.step(o, fresh, false)
		if done {
			return r, nil
		}
		if o.NoWait {
			r, _, _, _ = s.step(o, fresh, true)
			return r, nil
		}
		var quietC <-chan time.Time
		if quietIn > 0 {
			if quietTimer == nil {
				quietTimer = time.NewTimer(quietIn)
			} else {
				quietTimer.Reset(quietIn)
			}
			quietC = quietTimer.C
		}
		select {
		case <-ch:
		case <-quietC:
		case <-timer.C:
			r, _, _, _ = s.step(o, fresh, true)
			return r, nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
}

// step evaluates the pending input once; with final, a wait that did not
// complete ends as a timeout. Every path releases s.mu, a panic too.
func (s *Session) step(o WaitOpts, fresh, final bool) (r Result, done bool, changed chan struct{}, quietIn time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		// Closed under the wait, or finished by another path.
		return Result{Complete: true, Completion: CompletionExited}, true, nil, 0
	}
	st, quietIn := s.evaluate(o)
	if !st.done && final {
		st = state{done: true, completion: CompletionTimeout, from: s.pending.start, to: s.screen.CursorPos()}
	}
	if st.done {
		return s.renderLocked(st, fresh), true, nil, 0
	}
	return Result{}, false, s.changed, quietIn
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
// all before its start is called quiet, when it is reading its terminal;
// maxStartupSilence when it is not.
const (
	startupSilence    = time.Second
	maxStartupSilence = 10 * time.Second
)

// readingTerminalLocked reports whether the terminal's foreground program
// is blocked reading the terminal itself (not a pipe, not a file).
func (s *Session) readingTerminalLocked() bool {
	if s.pty == nil || s.exited {
		return false
	}
	_, reading := s.foregroundReading()
	return reading
}

// programLocked returns the terminal's foreground program name.
func (s *Session) programLocked() string {
	if s.pty == nil || s.exited {
		return filepath.Base(s.spec.Argv[0])
	}
	_, name := s.foregroundNow()
	if name == "" {
		return filepath.Base(s.spec.Argv[0])
	}
	return name
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
		var err error
		ok := s.ctl(func(fd uintptr) {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
		})
		if !ok {
			return ErrClosed
		}
		if err != nil {
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
	if f := s.frozen; f != nil {
		return f.screen, f.row, f.col
	}
	row, col = s.screen.Cursor()
	return s.screen.Render(), row, col
}

// Scrollback returns the last n lines of history and screen.
func (s *Session) Scrollback(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen != nil {
		return s.frozen.scrollback(n)
	}
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
	if s.frozen != nil {
		st.AltScreen, st.AppCursor, st.Title = false, false, s.frozen.title
	}
	if s.exited {
		code := s.exitCode
		st.ExitCode = &code
		st.Signal = s.signal
		st.Program = filepath.Base(s.spec.Argv[0])
		return st
	}
	st.Own = filepath.Base(s.spec.Argv[0])
	if s.pty != nil && !s.closed {
		pgid, name := s.foregroundNow()
		st.Program = name
		if fg := leaderOrNewest(pgid); fg > 0 {
			st.ProgramPid = reader(fg)
		}
		st.Busy = pgid != 0 && pgid != st.Pid
		st.EchoOff = s.terminalEchoOff()
		if own := identify(st.Pid); own != "" {
			st.Own = own
		}
		canon := false
		s.ctl(func(fd uintptr) { canon = canonical(fd) })
		prog := st.Program
		if prog == "" {
			prog = st.Own
		}
		st.Judged = lineEditor(prog)
		st.ReadsLines = st.Judged || canon
		running := s.commandRunning() || st.Busy || s.pending != nil && !s.pending.idle && !s.pending.startup && s.pending.enters > 0
		tty := ttyID{}
		s.ctl(func(fd uintptr) { tty, _ = terminalOf(fd) })
		st.Ahead = running && !waitingForInput(leaderOrNewest(pgid), tty)
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
	s.closeOnce.Do(func() {
		if s.closeErr = s.close(ctx, grace); s.closeErr == nil {
			s.freeze()
		}
	})
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
	// A write in flight (to a program that does not read) fails now:
	// closing never waits for a writer.
	s.kickWriters()
	if !exited {
		s.writeEOF(grace)
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
	if s.pty != nil {
		s.pty.Close()
	} else {
		s.stdin.Close()
		s.out.Close()
	}
	<-s.readerDone
	s.closeOutputLog()
	<-s.replyDone
	if s.tickets != nil {
		s.tickets.close()
	}
	if s.gateDir != "" {
		if err := os.RemoveAll(s.gateDir); err != nil {
			return err
		}
	}
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
