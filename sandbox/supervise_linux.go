package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// ExecRequest is one exec a process of a launch asked for, held in the
// kernel until it is answered: what the gateway could read of it.
type ExecRequest struct {
	Pid     int    // the process that asks (its thread group)
	PPid    int    // its parent
	Syscall string // execve or execveat
	// Path is the pathname as the process gave it; Executable the file
	// it names, resolved (relative to the process's working directory or
	// execveat's directory, links followed).
	Path       string
	Executable string
	// Program is what the file is (Identify): its name, or the system
	// program it is a copy or link of, or a multi-call binary's applet.
	// IdentifiedBy says how (path, inode, content, multi-call).
	Program      string
	IdentifiedBy string
	Argv         []string
	Cwd          string
	// Parents are the programs from the launch's own down to the one
	// that asks (its image before this exec), outermost first.
	Parents []string
	// Launcher: the launcher's own exec of the launch's program, the
	// first exec of every launch.
	Launcher bool
	// Unreadable, when set, says why the request could not be read
	// whole (argv too large, memory unreadable): the judge must refuse.
	Unreadable error
	// Refusal, when set, is not an exec but a call the profile's seccomp
	// filter refused (refuse_linux.go): the judge is told of it, and its
	// verdict is not asked for (the call fails with its errno).
	Refusal *SyscallRefusal
	// Environ reads the environment the exec passes (envp), on demand:
	// only while the judge runs (nil after, and for an Ask), and nil when
	// it cannot be read whole.
	Environ func() []string
}

// ExecVerdict is a judge's answer.
type ExecVerdict struct {
	Allow bool
	// Ask, when set, is an answer that takes time (a human is asked): the
	// supervisor runs it on a goroutine of its own, answers the process
	// when it returns (true: allow), and goes on with the launch's other
	// execs meanwhile. Its ctx ends when the launch does.
	Ask func(ctx context.Context) bool
}

// ExecJudge decides the execs of a launch. It runs on the launch's
// supervisor goroutines, up to judgeWorkers requests at a time (the
// launch's processes exec concurrently, as make -j does): it must be safe
// for concurrent use and quick, and hand anything slow to
// ExecVerdict.Ask.
type ExecJudge func(ctx context.Context, r *ExecRequest) ExecVerdict

// judgeWorkers is how many of a launch's requests are read and judged at
// once. One receives while the others handle what they received.
const judgeWorkers = 2

// Limits of what the supervisor reads of a request: past them the
// request is unreadable, and refused.
const (
	maxArgs     = 16384
	maxArgBytes = 1 << 20 // all of argv
	maxPathLen  = unix.PathMax
	maxParents  = 32
)

// supervisor is the receive loop of a launch's exec gate: it waits on
// the listener and a stop pipe, reads each request, asks the judge and
// answers the kernel. It owns the listener, and closes it when it ends:
// a process left after that fails every exec (ENOSYS).
//
// Its judgeWorkers goroutines take turns as the receiver (leader and
// followers): the one holding the turn polls and receives, hands the turn
// on, and handles what it received itself. So a request is read and
// judged on the thread the kernel woke (with SYNC_WAKE_UP, the CPU the
// exec ran on), and one more can be received while it is. Only the
// turn's holder ever receives: a receive blocks until a request comes,
// and nothing else could end it.
type supervisor struct {
	fd       int // the listener
	leader   int // the launch's process: the launcher, then its program
	judge    ExecJudge
	programs *ProgramIndex
	budget   refusalBudget // of refusals named in full (refuse_linux.go)
	procs    *procCache

	ctx     context.Context
	cancel  context.CancelFunc
	stopR   *os.File
	stopW   *os.File
	stopFd  int // stopR's descriptor (os.File.Fd costs an fcntl a call)
	asks    sync.WaitGroup
	workers sync.WaitGroup
	turn    chan struct{} // held by the worker that receives
	quit    chan struct{} // closed when the loop ends
	endOnce sync.Once
	done    chan struct{}

	mu    sync.Mutex
	first bool // the next request from the leader is the launcher's own
}

// supervise starts the receive loop on listener fd for the launch whose
// process is leader.
func supervise(fd, leader int, judge ExecJudge, programs *ProgramIndex) (*supervisor, error) {
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sandbox: the exec gate's stop pipe: %w", err)
	}
	// Each exec then hands the CPU to the supervisor and back, rather
	// than waking a thread on another one (Linux 6.6; else as before).
	_ = unix.IoctlSetInt(fd, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{fd: fd, stopR: r, stopW: w, stopFd: int(r.Fd()), leader: leader, judge: judge, programs: programs,
		procs: newProcCache(), ctx: ctx, cancel: cancel, done: make(chan struct{}), first: true,
		turn: make(chan struct{}, 1), quit: make(chan struct{})}
	s.turn <- struct{}{}
	s.workers.Add(judgeWorkers)
	for range judgeWorkers {
		go s.work()
	}
	go s.wait()
	return s, nil
}

// stop ends the loop and waits for it, and for every answer still being
// asked (their ctx ends).
func (s *supervisor) stop() {
	s.cancel()
	s.stopW.Close()
	<-s.done
	s.asks.Wait()
}

// wait closes the listener once every worker has ended and every answer
// is in (the asks respond on it), then says the supervisor is done.
func (s *supervisor) wait() {
	defer close(s.done)
	s.workers.Wait()
	s.asks.Wait()
	s.procs.close()
	s.stopR.Close()
	unix.Close(s.fd)
}

// end stops every worker: the launch's last process is gone, or stop.
func (s *supervisor) end() { s.endOnce.Do(func() { close(s.quit) }) }

// work takes turns at receiving until the loop ends, and handles what it
// received.
func (s *supervisor) work() {
	defer s.workers.Done()
	for {
		select {
		case <-s.turn:
		case <-s.quit:
			return
		}
		req, ok := s.receive()
		if !ok {
			s.end()
			return // the turn is not handed on: every worker ends
		}
		s.turn <- struct{}{}
		if req != nil {
			s.handle(req)
		}
	}
}

// receive waits for the next request: nil when there was none after all
// (its process died before it was received), false when the launch's
// last process is gone (POLLHUP) or the supervisor stops.
func (s *supervisor) receive() (*seccomp.ScmpNotifReq, bool) {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.stopFd), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, false
		}
		if fds[1].Revents != 0 {
			s.cancel() // the asks end too
			return nil, false
		}
		ev := fds[0].Revents
		if ev&unix.POLLIN != 0 {
			req, err := notifReceive(s.fd)
			if err != nil {
				if errors.Is(err, unix.ENOENT) {
					return nil, true // the process died before it was received
				}
				return nil, false
			}
			return req, true
		}
		if ev&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return nil, false // no process of the launch is left
		}
	}
}

// handle reads, judges and answers one request.
func (s *supervisor) handle(req *seccomp.ScmpNotifReq) {
	if !isExec(req) {
		s.refuse(req) // a call the profile refuses: named, then refused
		return
	}
	r, mem, errno := s.read(req)
	if mem != nil {
		var envAddr uint64
		switch r.Syscall {
		case "execve":
			envAddr = req.Data.Args[2]
		case "execveat":
			envAddr = req.Data.Args[3]
		}
		open := true
		defer func() { open = false }()
		r.Environ = func() []string {
			if !open {
				return nil
			}
			env, err := mem.strs(envAddr)
			if err != nil || !s.valid(req.ID) {
				return nil
			}
			return env
		}
	}
	if r == nil {
		// The process is gone, or the exec would fail anyway (no such
		// file): the kernel's own errno, no judge.
		if errno != 0 {
			s.respond(req.ID, false, errno)
		}
		return
	}
	// The launcher's own exec: until it runs, no other task holds the
	// filter (the launcher does not fork). It is a Go program: the thread
	// that execs need not be its main one, and a signal may restart the
	// exec as a new request before it is answered, which is the
	// launcher's still.
	s.mu.Lock()
	first := s.first
	s.mu.Unlock()
	launcher := first && sameProcess(int(req.Pid), s.leader)
	r.Launcher = launcher
	v := s.judge(s.ctx, r)
	if v.Ask == nil {
		if launcher && v.Allow {
			// Before the answer: the program's first request must not
			// pass for the launcher's.
			s.setFirst(false)
		}
		answered := s.respond(req.ID, v.Allow, unix.EPERM)
		if answered && v.Allow {
			s.procs.forget(r.Pid) // its image is another now
		}
		if launcher && v.Allow && !answered {
			s.setFirst(true) // a signal restarted the exec as a new request
		}
		return
	}
	if launcher {
		s.setFirst(false)
	}
	r.Environ = nil
	s.asks.Add(1)
	pid := r.Pid
	go func() {
		defer s.asks.Done()
		allow := v.Ask(s.ctx)
		if s.respond(req.ID, allow, unix.EPERM) && allow {
			s.procs.forget(pid)
		}
	}()
}

func (s *supervisor) setFirst(v bool) {
	s.mu.Lock()
	s.first = v
	s.mu.Unlock()
}

// respond answers a request; false when it no longer waits (its process
// died, or a signal restarted the call as a new request).
func (s *supervisor) respond(id uint64, allow bool, errno syscall.Errno) bool {
	resp := notifResp{ID: id}
	if allow {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		resp.Error = -int32(errno)
		resp.Val = -1
	}
	return notifIoctl(s.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) == nil
}

// read gathers what a request says, from the process's memory and /proc.
// A nil request with errno 0 means the process is gone; with an errno,
// that the exec fails with it whatever the answer (its file does not
// exist, is not a regular file, or a pointer is bad).
func (s *supervisor) read(req *seccomp.ScmpNotifReq) (*ExecRequest, *procMem, syscall.Errno) {
	tid := int(req.Pid)
	name := ""
	switch int(req.Data.Syscall) {
	case unix.SYS_EXECVE:
		name = "execve"
	case unix.SYS_EXECVEAT:
		name = "execveat"
	}
	args := req.Data.Args
	if len(args) < 6 {
		return nil, nil, unix.EINVAL
	}
	r := &ExecRequest{Pid: tid, Syscall: name}
	var pathAddr, argvAddr uint64
	dirfd := int32(unix.AT_FDCWD)
	var flags uint64
	switch name {
	case "execve":
		pathAddr, argvAddr = args[0], args[1]
	case "execveat":
		dirfd, pathAddr, argvAddr, flags = int32(args[0]), args[1], args[2], args[4]
	default:
		return nil, nil, unix.ENOSYS
	}
	// Everything is read while the request waits, and counts only if it
	// still waits afterwards (valid, below): then the task that asked was
	// alive throughout, and its pid was nobody else's.
	mem := openMem(tid)
	mem.prime(pathAddr, argvAddr)
	gone := func(err error) bool { return errors.Is(err, unix.ESRCH) || !s.valid(req.ID) }
	path, err := mem.str(pathAddr, maxPathLen)
	switch {
	case errors.Is(err, unix.EFAULT):
		return nil, nil, unix.EFAULT
	case err != nil && gone(err):
		return nil, nil, 0
	case err != nil:
		r.Unreadable = fmt.Errorf("the program's path: %w", err)
		return r, nil, 0
	}
	r.Path = path
	r.Argv, err = mem.strs(argvAddr)
	switch {
	case errors.Is(err, unix.EFAULT):
		return nil, nil, unix.EFAULT
	case err != nil && gone(err):
		return nil, nil, 0
	case err != nil:
		r.Unreadable = fmt.Errorf("the arguments: %w", err)
	}
	r.Cwd = readlinkProc(tid, "cwd")
	exe, st, errno := resolveExecutable(tid, dirfd, path, flags, s.programs)
	if errno != 0 {
		if !s.valid(req.ID) {
			return nil, nil, 0
		}
		return nil, nil, errno
	}
	r.Executable = exe
	argv0 := ""
	if len(r.Argv) > 0 {
		argv0 = r.Argv[0]
	}
	r.Program, r.IdentifiedBy = s.programs.Identify(exe, &st, argv0)
	r.Parents, r.Pid, r.PPid = parents(tid, s.leader, s.procs)
	if !s.valid(req.ID) {
		return nil, nil, 0
	}
	return r, mem, 0
}

// valid reports whether the request still waits (its process lives and
// has not been answered).
func (s *supervisor) valid(id uint64) bool {
	return notifIoctl(s.fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// sameProcess reports whether task tid is a thread of process pid.
func sameProcess(tid, pid int) bool {
	if tid == pid {
		return true
	}
	_, err := os.Stat(procPath(pid, "task/"+strconv.Itoa(tid)))
	return err == nil
}

// The listener's requests and answers, as the kernel lays them out
// (linux/seccomp.h): the gate speaks to the listener with ioctl(2)
// directly, with no allocation or cgo call per request.
type notifData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type notifReq struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  notifData
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The sizes the ioctl numbers encode.
var (
	_ [80 - unsafe.Sizeof(notifReq{})]struct{}
	_ [unsafe.Sizeof(notifReq{}) - 80]struct{}
	_ [24 - unsafe.Sizeof(notifResp{})]struct{}
	_ [unsafe.Sizeof(notifResp{}) - 24]struct{}
)

// notifIoctl is one request to the listener, retried when a signal
// interrupts it.
func notifIoctl(fd int, op uintptr, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), op, uintptr(arg))
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return e
	}
}

// notifReceive receives one request (it blocks until one is pending).
// The kernel's seccomp_data is the gateway's own architecture's: the
// gate's filter kills a process of any other.
func notifReceive(fd int) (*seccomp.ScmpNotifReq, error) {
	var n notifReq // zeroed, as the kernel requires
	if err := notifIoctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
		return nil, err
	}
	return &seccomp.ScmpNotifReq{ID: n.ID, Pid: n.Pid, Flags: n.Flags, Data: seccomp.ScmpNotifData{
		Syscall: seccomp.ScmpSyscall(n.Data.Nr), Arch: seccomp.ArchNative, InstrPointer: n.Data.IP, Args: n.Data.Args[:]}}, nil
}
