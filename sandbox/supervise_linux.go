package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

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
// supervisor goroutine, one request at a time: it must be quick, and
// hand anything slow to ExecVerdict.Ask.
type ExecJudge func(ctx context.Context, r *ExecRequest) ExecVerdict

// Limits of what the supervisor reads of a request: past them the
// request is unreadable, and refused.
const (
	maxArgs     = 16384
	maxArgBytes = 1 << 20 // all of argv
	maxPathLen  = unix.PathMax
	maxParents  = 32
)

// supervisor is the one receive loop of a launch's exec gate: it waits on
// the listener and a stop pipe, reads each request, asks the judge and
// answers the kernel. It owns the listener, and closes it when it ends:
// a process left after that fails every exec (ENOSYS).
type supervisor struct {
	fd       seccomp.ScmpFd
	leader   int // the launch's process: the launcher, then its program
	judge    ExecJudge
	programs *ProgramIndex

	ctx        context.Context
	cancel     context.CancelFunc
	stopR      *os.File
	stopW      *os.File
	asks       sync.WaitGroup
	done       chan struct{}
	first      bool   // the next request from the leader is the launcher's own
	leaderName string // the leader's program, read once per image ("": not yet)
	// imageChanged: an answer given off the loop let the leader exec.
	imageChanged atomic.Bool
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
	s := &supervisor{fd: seccomp.ScmpFd(fd), leader: leader, judge: judge, programs: programs,
		ctx: ctx, cancel: cancel, stopR: r, stopW: w, done: make(chan struct{}), first: true}
	go s.loop()
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

// loop receives until the launch's last process is gone (POLLHUP), or
// stop. A request is answered before the next is taken, but for an
// ExecVerdict.Ask, which answers from a goroutine of its own.
func (s *supervisor) loop() {
	defer close(s.done)
	defer s.stopR.Close()
	defer func() {
		// The listener closes only after every answer is in: the asks
		// respond on it.
		s.asks.Wait()
		unix.Close(int(s.fd))
	}()
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.stopR.Fd()), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			s.cancel() // the asks end too
			return
		}
		ev := fds[0].Revents
		if ev&unix.POLLIN != 0 {
			req, err := seccomp.NotifReceive(s.fd)
			if err != nil {
				if errors.Is(err, syscall.ENOENT) {
					continue // the process died before it was received
				}
				return
			}
			s.handle(req)
			continue
		}
		if ev&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return // no process of the launch is left
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
	launcher := s.first && sameProcess(int(req.Pid), s.leader)
	r.Launcher = launcher
	v := s.judge(s.ctx, r)
	if v.Ask == nil {
		if s.respond(req.ID, v.Allow, unix.EPERM) && v.Allow && r.Pid == s.leader {
			s.first = false
			s.leaderName = "" // a new image
		}
		return
	}
	s.first = s.first && !launcher
	r.Environ = nil
	s.asks.Add(1)
	leader := r.Pid == s.leader
	go func() {
		defer s.asks.Done()
		allow := v.Ask(s.ctx)
		if s.respond(req.ID, allow, unix.EPERM) && allow && leader {
			s.imageChanged.Store(true)
		}
	}()
}

// respond answers a request; false when it no longer waits (its process
// died, or a signal restarted the call as a new request).
func (s *supervisor) respond(id uint64, allow bool, errno syscall.Errno) bool {
	resp := &seccomp.ScmpNotifResp{ID: id}
	if allow {
		resp.Flags = seccomp.NotifRespFlagContinue
	} else {
		resp.Error = int32(errno)
		resp.Val = ^uint64(0)
	}
	return seccomp.NotifRespond(s.fd, resp) == nil
}

// read gathers what a request says, from the process's memory and /proc.
// A nil request with errno 0 means the process is gone; with an errno,
// that the exec fails with it whatever the answer (its file does not
// exist, is not a regular file, or a pointer is bad).
func (s *supervisor) read(req *seccomp.ScmpNotifReq) (*ExecRequest, *procMem, syscall.Errno) {
	tid := int(req.Pid)
	name, _ := req.Data.Syscall.GetName()
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
	r.Cwd, _ = os.Readlink(procPath(tid, "cwd"))
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
	r.Parents, r.Pid, r.PPid = parents(tid, s.leader, s.leaderProgram)
	if !s.valid(req.ID) {
		return nil, nil, 0
	}
	return r, mem, 0
}

// leaderProgram names the launch's own process, read once per image: the
// leader can change its image only by an exec, which passes here.
func (s *supervisor) leaderProgram() string {
	if s.imageChanged.Swap(false) || s.leaderName == "" {
		s.leaderName = exeName(s.leader)
	}
	return s.leaderName
}

// valid reports whether the request still waits (its process lives and
// has not been answered).
func (s *supervisor) valid(id uint64) bool { return seccomp.NotifIDValid(s.fd, id) == nil }

// sameProcess reports whether task tid is a thread of process pid.
func sameProcess(tid, pid int) bool {
	if tid == pid {
		return true
	}
	_, err := os.Stat(procPath(pid, "task/"+strconv.Itoa(tid)))
	return err == nil
}
