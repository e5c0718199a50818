package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LaunchArg is argv[1] of the gateway re-executed as a launcher.
const LaunchArg = "__termgate-sandbox-launch"

// MinABI is the Landlock ABI a confined session needs: filesystem rights
// with refer and truncate (v2, v3), TCP rules (v4), device ioctls (v5),
// and scoped signals and abstract unix sockets (v6).
const MinABI = 6

// Status says how a session is confined.
type Status struct {
	Profile     string   `json:"profile"`
	Enforced    bool     `json:"enforced"`
	LandlockABI int      `json:"landlock_abi"`
	Seccomp     bool     `json:"seccomp"`
	Cgroup      bool     `json:"cgroup"`
	NotEnforced []string `json:"not_enforced,omitempty"`
	// ExecGate is the exec gate's mode ("enforce", "audit") when every
	// exec of the launch is judged, else "".
	ExecGate string `json:"exec_gate,omitempty"`
	// Network says how the session reaches the network ("" for none, or
	// a profile's tcp or any); PrivateShm that its /dev/shm is its own;
	// MemoryLimit the bytes its memory cgroup allows (0: none).
	Network     string `json:"network,omitempty"`
	PrivateShm  bool   `json:"private_shm,omitempty"`
	MemoryLimit int64  `json:"memory_limit,omitempty"`
}

func (s Status) String() string {
	gate := ""
	if s.ExecGate != "" {
		gate = "; exec gate " + s.ExecGate
	}
	if s.Profile == "" {
		return "none: not confined" + gate + s.notEnforced("; ")
	}
	if !s.Enforced && s.LandlockABI == 0 && !s.Seccomp {
		return "none: profile " + s.Profile + " is unconfined" + gate + s.notEnforced("; ")
	}
	parts := []string{"profile " + s.Profile, fmt.Sprintf("landlock ABI %d", s.LandlockABI)}
	if s.Seccomp {
		parts = append(parts, "seccomp")
	}
	if s.Cgroup {
		parts = append(parts, "pids cgroup")
	}
	if s.MemoryLimit > 0 {
		parts = append(parts, fmt.Sprintf("memory %d MiB", s.MemoryLimit>>20))
	}
	if s.PrivateShm {
		parts = append(parts, "private /dev/shm")
	}
	if s.Network != "" {
		parts = append(parts, "network "+s.Network)
	}
	if s.ExecGate != "" {
		parts = append(parts, "exec gate "+s.ExecGate)
	}
	head := "enforced"
	if len(s.NotEnforced) > 0 {
		head = "degraded"
		parts = append(parts, "NOT enforced: "+strings.Join(s.NotEnforced, "; "))
	}
	return head + ": " + strings.Join(parts, ", ")
}

// notEnforced is what was not enforced, after sep, for an unconfined
// launch ("" when all was).
func (s Status) notEnforced(sep string) string {
	if len(s.NotEnforced) == 0 {
		return ""
	}
	return sep + "NOT enforced: " + strings.Join(s.NotEnforced, "; ")
}

// IsLauncher reports whether this process was started as the launcher.
// main calls it first, before flags or goroutines of its own.
func IsLauncher() bool { return len(os.Args) > 1 && os.Args[1] == LaunchArg }

// launcher is a launcher process being readied and started: the ends of
// its status pipe, of the exec gate's socket and of the egress channel
// the gateway keeps.
type launcher struct {
	status *os.File // reads the launcher's status: closes empty on exec
	gate   *os.File // receives the exec gate's listener, or nil
	// The spec, sent once the launcher has started and been put in its
	// cgroups (send), and the pipe's end it goes through.
	spec  []byte
	specW *os.File
	joins []string // the cgroup.procs files the launcher is put in
	// The egress proxy of a proxy launch, the gateway's end of the
	// socket its listeners come over (nil without a network namespace),
	// and what each listener is (see EgressSession.serve).
	egress  *EgressSession
	channel *os.File
	kinds   []string
}

// prepare sets cmd up to run spec's program through the launcher: cmd's
// path becomes this executable, the spec's pipe goes on fd 3 (send
// writes the spec), a status pipe on fd 4, then the egress channel of a
// proxy launch and the exec gate's socket, each on the descriptor the
// spec names (Isolate.FD, GateFD).
//
// The launcher is put in the launch's cgroups by the gateway (send),
// not by itself: moving a process between v1 cgroups waits for an RCU
// grace period (about 10 ms), which then overlaps the launcher's own
// start instead of following it. The launcher blocks reading the spec,
// and the spec is written only once every move is done, so it confines
// itself, and forks or execs anything, only inside its cgroups.
func prepare(cmd *exec.Cmd, spec Spec) (*launcher, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding termgate's own executable: %w", err)
	}
	l := &launcher{egress: spec.Egress, joins: spec.Cgroups}
	spec.Cgroups = nil   // joined by send
	var extra []*os.File // the launcher's ends beyond fd 4, in descriptor order
	fail := func(err error) (*launcher, error) {
		for _, f := range extra {
			f.Close()
		}
		l.close()
		return nil, err
	}
	channel, theirs, err := egressChannel(&spec, 5)
	if err != nil {
		return nil, err
	}
	if theirs != nil {
		l.channel, l.kinds = channel, spec.Isolate.Listen
		extra = append(extra, theirs) // fd 5, as the spec says
	}
	if spec.listens() {
		mine, theirs, err := gateSocket()
		if err != nil {
			return fail(err)
		}
		l.gate = mine
		spec.GateFD = 5 + len(extra)
		extra = append(extra, theirs)
	}
	b, err := json.Marshal(spec)
	if err == nil && len(b) > maxSpec {
		err = errors.New("sandbox: the spec is too large")
	}
	if err != nil {
		return fail(err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	if err := fitPipe(specW, len(b)); err != nil {
		specR.Close()
		specW.Close()
		closeChannel(channel, theirs)
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return fail(err)
	}
	l.status, l.spec, l.specW = statusR, b, specW
	cmd.Path = self
	cmd.Args = []string{"termgate-launch", LaunchArg}
	cmd.Dir = "/"
	// The launcher's own environment (the program gets the spec's): no
	// asynchronous preemption, whose SIGURG would interrupt its exec
	// while the gateway judges it.
	cmd.Env = []string{"GODEBUG=asyncpreemptoff=1"}
	cmd.ExtraFiles = append([]*os.File{specR, statusW}, extra...)
	return l, nil
}

// closeChildEnds closes the descriptors cmd handed the launcher: after
// the start they are the launcher's alone, and the status pipe reads EOF
// only once no copy of its write end is left.
func (l *launcher) closeChildEnds(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
}

// send puts the started launcher (pid) in its cgroups, then writes its
// spec (it fits in the pipe's buffer: fitPipe) and closes the pipe. A
// launcher that cannot be put in its cgroups is never sent a spec.
func (l *launcher) send(pid int) error {
	for _, procs := range l.joins {
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("sandbox: putting the launcher in its cgroup: %w", err)
		}
	}
	_, err := l.specW.Write(l.spec)
	if cerr := l.specW.Close(); err == nil {
		err = cerr
	}
	l.specW = nil
	if err != nil {
		return fmt.Errorf("sandbox: sending the launcher its spec: %w", err)
	}
	return nil
}

// close releases the gateway's ends.
func (l *launcher) close() {
	if l.specW != nil {
		l.specW.Close()
	}
	if l.status != nil {
		l.status.Close()
	}
	if l.gate != nil {
		l.gate.Close()
	}
	if l.channel != nil {
		l.channel.Close()
	}
}

// started waits for the launcher to exec the program or fail: the status
// pipe closes empty on exec, or carries the reason. Then a proxy launch's
// egress proxy serves the listeners the launcher sent.
func (l *launcher) started(cmd *exec.Cmd) error {
	msg, err := io.ReadAll(l.status)
	if err != nil {
		return fmt.Errorf("sandbox: reading the launcher's status: %w", err)
	}
	if len(msg) > 0 {
		return fmt.Errorf("sandbox: %s", msg)
	}
	return l.startEgress(cmd)
}

// Main is the launcher: it confines itself as the spec on fd 3 says, then
// execs the program. It never returns.
func Main() {
	// Capabilities, the bounding set, PDEATHSIG and the ambient set are
	// attributes of a thread, and the thread that calls execve is the one
	// whose attributes the program gets: everything happens on this one.
	runtime.LockOSThread()
	status := os.NewFile(4, "status")
	fail := func(format string, a ...any) {
		fmt.Fprintf(status, format, a...)
		os.Exit(126)
	}
	specFile := os.NewFile(3, "spec")
	b, err := io.ReadAll(specFile)
	if err != nil {
		fail("reading the spec: %v", err)
	}
	specFile.Close()
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		fail("reading the spec: %v", err)
	}
	unix.CloseOnExec(4)
	// Every other descriptor (inherited, or the Go runtime's own) is gone
	// at exec: only stdin, stdout and stderr reach the program.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail("closing inherited descriptors: %v", err)
	}
	if err := confine(s); err != nil {
		fail("%v", err)
	}
	if s.listens() {
		if err := gateExecs(s); err != nil {
			fail("%v", err)
		}
	}
	var data uint64
	if !s.Unconfined {
		data = uint64(s.Limits.Memory)
	}
	err = execLimited(s.Argv[0], s.Argv, s.Env, data, status)
	fail("%v", err)
}

// execLimited lowers the data limit (RLIMIT_DATA, the profile's memory
// per process) to data, unless it is 0, and execs path. The limit comes
// last, at the exec, and not with the other limits in confine: the
// launcher's own Go runtime (a race-built one is large) allocates while
// it confines itself and loads the exec gate's filter, and an allocation
// the limit refuses is a fatal error of the runtime, not an error the
// launcher could report. Between the limit and execve nothing is
// allocated: the C strings are made first, both calls are raw system
// calls, and an exec that fails after the limit says why through the
// status pipe with bytes made beforehand, then exits at once.
//
// Without a data limit it execs as syscall.Exec does, which also gives
// the program back the soft limit of open files the Go runtime raised
// for itself: a launch that sets no limits (an unconfined one, its execs
// gated) changes none. A launch with a data limit is confined, and
// confine has set the open-files limit, which syscall.Exec then leaves as
// it is too.
//
// It returns only an error from before the limit took effect.
func execLimited(path string, argv, env []string, data uint64, status *os.File) error {
	if data == 0 {
		if err := unix.Exec(path, argv, env); err != nil {
			return fmt.Errorf("exec %s: %v", path, err)
		}
		return nil // not reached
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return fmt.Errorf("exec %s: %v", path, err)
	}
	a, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return fmt.Errorf("exec %s: %v", path, err)
	}
	e, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return fmt.Errorf("exec %s: %v", path, err)
	}
	prefix := []byte("exec " + path + ": ")
	fd := status.Fd()
	data = lowered(unix.RLIMIT_DATA, data)
	lim := unix.Rlimit{Cur: data, Max: data}
	if _, _, errno := unix.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_DATA, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("setrlimit %d: %v", unix.RLIMIT_DATA, errno)
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&e[0])))
	why := errno.Error() // a string of the errno table: nothing allocated
	unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&prefix[0])), uintptr(len(prefix)))
	unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.StringData(why))), uintptr(len(why)))
	unix.RawSyscall(unix.SYS_EXIT_GROUP, 126, 0, 0)
	return nil // not reached: exit_group does not return
}

// confine applies the spec to this process: directory, cgroup,
// namespaces, limits, identity, capabilities, no_new_privs, Landlock, and
// seccomp last.
//
// The working directory and every granted path are opened first, as
// root, without following any link (magic links of /proc included), and
// each must be the very file the gateway checked (device and inode): a
// link or another directory put in a checked path's place fails the
// launch, it is never followed. The Landlock rules are made from these
// descriptors, and the working directory is entered by its descriptor.
func confine(s Spec) error {
	if !s.Unconfined && s.DirID.IsZero() {
		return errors.New("the spec's working directory was never checked (no identity); nothing was started")
	}
	if s.Dir != "" {
		if err := enterDir(s.Dir, s.DirID); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_PDEATHSIG: %v", err)
	}
	if s.Unconfined {
		return nil
	}
	opened, err := openGrants(s)
	if err != nil {
		return err
	}
	// The gateway put this process in the launch's cgroups before it
	// sent the spec (launcher.send); a spec that names cgroups still
	// (one handed over as it is) is joined here.
	pid := strconv.Itoa(os.Getpid())
	for _, procs := range s.Cgroups {
		if err := os.WriteFile(procs, []byte(pid), 0); err != nil {
			return fmt.Errorf("joining the session's cgroup: %v", err)
		}
	}
	// Namespaces (a private /dev/shm, the session's own network) while
	// this process still holds the capabilities to make them.
	if opened, err = isolate(s, opened); err != nil {
		return err
	}
	lim := []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_NOFILE, uint64(s.Limits.OpenFiles)},
		{unix.RLIMIT_FSIZE, uint64(s.Limits.FileSize)},
		// RLIMIT_DATA is set at the exec (execLimited).
		{unix.RLIMIT_NPROC, uint64(s.Limits.Processes)},
		{unix.RLIMIT_CORE, 0},
	}
	if s.Limits.CPU > 0 {
		lim = append(lim, struct {
			res int
			v   uint64
		}{unix.RLIMIT_CPU, uint64(s.Limits.CPU)})
	}
	for _, l := range lim {
		if l.v == 0 && l.res != unix.RLIMIT_CORE {
			continue
		}
		l.v = lowered(l.res, l.v)
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %v", l.res, err)
		}
	}
	// The bounding set goes while this process still may drop it (as
	// root, before any change of identity).
	if err := dropBounding(); err != nil {
		return err
	}
	if s.GID >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %v", err)
		}
		if err := syscall.Setresgid(s.GID, s.GID, s.GID); err != nil {
			return fmt.Errorf("setgid %d: %v", s.GID, err)
		}
	}
	if s.UID >= 0 {
		if err := syscall.Setresuid(s.UID, s.UID, s.UID); err != nil {
			return fmt.Errorf("setuid %d: %v", s.UID, err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if err := applyLandlock(s, opened); err != nil {
		return err
	}
	return applySeccomp(s)
}

// lowered is v for resource res, or the hard limit in force when that is
// lower: limits only go down, and one already lower stays.
func lowered(res int, v uint64) uint64 {
	var cur unix.Rlimit
	if err := unix.Getrlimit(res, &cur); err == nil && cur.Max < v {
		return cur.Max
	}
	return v
}

// dropCapabilities empties the bounding, ambient, effective, permitted and
// inheritable sets: a session holds no capability, even as root.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %v", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %v", err)
	}
	return nil
}

// dropBounding empties the capability bounding set.
func dropBounding() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			if errors.Is(err, unix.EPERM) && !hasCap(c) {
				continue // not held, and may not be dropped without CAP_SETPCAP: nothing to drop
			}
			return fmt.Errorf("dropping capability %d: %v", c, err)
		}
	}
	return nil
}

// hasCap reports whether c is in the bounding set.
func hasCap(c int) bool {
	r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
	return err == nil && r == 1
}
