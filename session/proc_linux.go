package session

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/PID/stat says of a process that matters here.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// parseStat parses /proc/PID/stat; the command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	open := bytes.IndexByte(b, '(')
	if i < 0 || open < 0 || open > i || i+2 >= len(b) {
		return procStat{}, false
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 4 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgrp, _ := strconv.Atoi(f[2])
	sid, _ := strconv.Atoi(f[3])
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, sid: sid, state: f[0][0]}, true
}

// sessionTree returns the live (not zombie) processes that belong to the
// session led by sid, and every descendant of them, whatever session or
// process group they moved to.
func sessionTree(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var all []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			all = append(all, st)
		}
	}
	in := map[int]bool{}
	for _, p := range all {
		if p.sid == sid || p.pid == sid {
			in[p.pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid] = true
				changed = true
			}
		}
	}
	var out []int
	for _, p := range all {
		if in[p.pid] && p.state != 'Z' && p.state != 'X' {
			out = append(out, p.pid)
		}
	}
	return out
}

// signalTree sends sig to every process of the session tree and reports how
// many it found.
func signalTree(sid int, sig syscall.Signal) int {
	pids := sessionTree(sid)
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return len(pids)
}

// foreground returns the foreground process group of the terminal whose
// master is fd and the program that reads it ("" when unknown), identified
// by what it is (identify), not by what it calls itself: its leader, or,
// when the leader has exited (the first command of a pipeline, such as cat
// in cat f | less), the newest live member.
func foreground(fd uintptr) (int, string) {
	pgid, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	if err != nil || pgid <= 0 {
		return 0, ""
	}
	pid := pgid
	if !live(pgid) {
		members := groupMembers(pgid)
		if len(members) == 0 {
			return pgid, ""
		}
		pid = members[len(members)-1]
	}
	return pgid, identify(pid)
}

// identify names the program a process runs by its executable, not by its
// argv[0] or comm, which any program sets as it likes (exec -a x bash,
// a shell named rbash, python's pty.spawn): /proc/PID/exe, resolved by the
// kernel, mapped to its family's name (programAlias: rbash is bash,
// python3.11 is python3). A relay — a process whose descendant runs on a
// terminal of its own, as script, python's pty.spawn, expect or a nested
// terminal do — is not the program that reads what is typed: the
// foreground program of that inner terminal is, found the same way, up to
// four relays deep. An executable that cannot be read (the process is
// gone, or its exe is hidden) falls back to argv[0]'s base name, as
// before, which identifies nothing better but is not worse either.
func identify(pid int) string {
	pid = reader(pid)
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && exe != "" {
		return programAlias(exeName(strings.TrimSuffix(exe, " (deleted)")))
	}
	return programAlias(procName(pid))
}

// reader is the process that reads what is typed to pid's terminal: pid
// itself, or, when pid relays its terminal to another, the foreground
// process of the innermost terminal, up to four relays deep (see
// identify).
func reader(pid int) int {
	for depth := 0; depth < 4; depth++ {
		inner := relayTarget(pid)
		if inner <= 0 {
			break
		}
		pid = inner
	}
	return pid
}

// exeName is the name an executable goes by: its base name, or, for a
// variant that a link of a shorter name in its directory resolves to
// (Debian's alternatives: /usr/bin/vim → vim.basic, /usr/bin/python3 →
// python3.11, nc → nc.openbsd), that shorter name.
func exeName(exe string) string {
	base := filepath.Base(exe)
	dir := filepath.Dir(exe)
	for i := len(base) - 1; i > 0; i-- {
		if base[i] != '.' {
			continue
		}
		short := base[:i]
		if real, err := filepath.EvalSymlinks(filepath.Join(dir, short)); err == nil && real == exe {
			return short
		}
	}
	return base
}

// programAlias maps an executable's name to the name its family goes by:
// restricted and versioned shells to the shell, versioned interpreters to
// their major name (python3.11 → python3, which familyOf knows).
func programAlias(name string) string {
	switch name {
	case "rbash":
		return "bash"
	case "rzsh":
		return "zsh"
	case "nodejs":
		return "node"
	}
	for _, p := range []string{"python3", "python2", "pypy3", "ruby", "perl", "php", "lua"} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && strings.Trim(rest, "0123456789.") == "" {
			return p
		}
	}
	return name
}

// relayTarget returns, when pid relays its terminal to another one (one of
// its children has a different controlling terminal, as script's and
// pty.spawn's do), the foreground process of that terminal; 0 otherwise.
// Only children count: a shell whose background job runs a relay is not
// itself one.
func relayTarget(pid int) int {
	st, ok := readStatFull(pid)
	if !ok {
		return 0
	}
	kids := children(pid, 64)
	for _, k := range kids {
		ks, ok := readStatFull(k)
		if !ok || ks.ttyNr == 0 || ks.ttyNr == st.ttyNr || ks.tpgid <= 0 {
			continue
		}
		fg := ks.tpgid
		if !live(fg) {
			members := groupMembers(fg)
			if len(members) == 0 {
				continue
			}
			fg = members[len(members)-1]
		}
		return fg
	}
	return 0
}

// statFull adds a process's controlling terminal and that terminal's
// foreground group to procStat.
type statFull struct {
	procStat
	ttyNr, tpgid int
}

func readStatFull(pid int) (statFull, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return statFull{}, false
	}
	return parseStatFull(b)
}

// parseStatFull parses /proc/PID/stat as parseStat does, with the
// controlling terminal and its foreground group.
func parseStatFull(b []byte) (statFull, bool) {
	st, ok := parseStat(b)
	if !ok {
		return statFull{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 6 {
		return statFull{}, false
	}
	tty, _ := strconv.Atoi(f[4])
	tpgid, _ := strconv.Atoi(f[5])
	return statFull{procStat: st, ttyNr: tty, tpgid: tpgid}, true
}

// children returns up to max children of pid, from
// /proc/PID/task/*/children.
func children(pid, max int) []int {
	var out []int
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && len(out) < max {
				out = append(out, c)
			}
		}
	}
	return out
}

// canonical reports whether the terminal reads a line at a time (ICANON):
// a program reading it with plain reads gets whole lines the kernel
// edited.
func canonical(fd uintptr) bool {
	t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil && t.Lflag&unix.ICANON != 0
}

// leaderOrNewest is a process group's leader, or its newest live member
// when the leader has exited; 0 when none is left.
func leaderOrNewest(pgid int) int {
	if pgid <= 0 || live(pgid) {
		return pgid
	}
	if m := groupMembers(pgid); len(m) > 0 {
		return m[len(m)-1]
	}
	return 0
}

// live reports whether a process exists and is not a zombie.
func live(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state != 'Z' && st.state != 'X'
}

// groupMembers returns the live processes of a process group, oldest pid
// first.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// procName returns a process's program name: the base name of its
// executable as it was run (argv[0]), which survives interpreters such as
// pyenv shims better than comm, falling back to comm.
func procName(pid int) string {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(b) > 0 {
		if name := nameOf(b); name != "" {
			return name
		}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// nameOf returns the program name in a /proc/PID/cmdline: the base of
// argv[0], "" when there is none.
func nameOf(cmdline []byte) string {
	arg0, _, _ := bytes.Cut(cmdline, []byte{0})
	if name := filepath.Base(string(arg0)); name != "" && name != "." {
		return strings.TrimPrefix(name, "-") // login shells are "-bash"
	}
	return ""
}

// echoOff reports whether the terminal is reading a line with echo off: a
// password prompt (getpass, sudo, ssh, psql). Programs that do their own
// echo in raw mode (readline, vim) turn ICANON off too and do not count.
func echoOff(fd uintptr) bool {
	t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	if err != nil {
		return false
	}
	return t.Lflag&unix.ECHO == 0 && t.Lflag&unix.ICANON != 0
}

// inputPending returns how many bytes typed into the terminal whose master
// is fd the program has not read yet (the slave's input queue).
func inputPending(fd uintptr) (int, error) {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
	if err != nil {
		return 0, err
	}
	slave, err := unix.Open("/dev/pts/"+strconv.Itoa(n), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(slave)
	// Typed bytes reach the slave's queue through the kernel's flip
	// buffer, moved by a worker that may run late on a busy machine:
	// until it runs, TIOCINQ says 0 and the program, still blocked in its
	// read, looks as if it took everything in. poll on the slave moves
	// them first (n_tty_poll flushes the buffer's work when no input is
	// there yet); its answer is not needed.
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(slave), Events: unix.POLLIN}}, 0)
	return unix.IoctlGetInt(slave, unix.TIOCINQ)
}

// outputPending returns how many bytes the program wrote to the terminal
// whose master is fd that the master has not read yet. What a program
// writes goes through the master's flip buffer as typed bytes go through
// the slave's (see inputPending): until the worker moves it, TIOCINQ on
// the master says 0 though the program printed, and went back to read,
// long ago. poll on the master moves it first. (The session's reader
// waits on the same descriptor; poll takes nothing from it.)
func outputPending(fd uintptr) (int, error) {
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return unix.IoctlGetInt(int(fd), unix.TIOCINQ)
}

// readingTerminal reports whether the foreground process group of the
// terminal whose master is fd is blocked with every byte typed taken in,
// and all it printed before it blocked is in the master's queue: once it
// is not there either, the session's reader has it. The order of the
// looks matters. Every typed byte taken in, then the group asleep: it
// went back to wait after it read them (or a sleep of its own began
// before it read anything, and then the bytes would still be there).
// Then its output: anything it printed before it went to sleep was
// written by then, and is in the master's queue unless the reader took
// it. Looked at in another order, a program could read the line, print
// its echo and answer, and block again between the looks, and a stale
// screen would pass for the program's reply.
func readingTerminal(fd uintptr) bool {
	if n, err := inputPending(fd); err != nil || n != 0 {
		return false
	}
	pgid, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	if err != nil || !asleep(pgid) {
		return false
	}
	n, err := outputPending(fd)
	return err == nil && n == 0
}

// ttyID identifies a terminal device: the file system it lives on and
// its inode, as stat (following /proc's links) reports them, and its
// device number as /proc/PID/stat writes a controlling terminal's.
type ttyID struct {
	dev, ino uint64
	nr       int
}

// statTTYNr encodes a device number as /proc/PID/stat writes tty_nr.
func statTTYNr(rdev uint64) int {
	major, minor := uint64(unix.Major(rdev)), uint64(unix.Minor(rdev))
	return int(minor&0xff | major<<8 | (minor&^0xff)<<12)
}

// terminalOf returns the identity of the slave of the terminal whose
// master is fd.
func terminalOf(fd uintptr) (ttyID, bool) {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
	if err != nil {
		return ttyID{}, false
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/pts/"+strconv.Itoa(n), &st); err != nil {
		return ttyID{}, false
	}
	return ttyID{dev: uint64(st.Dev), ino: uint64(st.Ino), nr: statTTYNr(uint64(st.Rdev))}, true
}

// asleep reports whether a process group is blocked (state S): none of
// its processes is still working on the input it read. The leader stands
// for the group; when it has exited (a pipeline's first command), every
// live member is looked at.
func asleep(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	if st, ok := readStat(pgid); ok && st.state != 'Z' && st.state != 'X' {
		return st.state == 'S'
	}
	members := groupMembers(pgid)
	for _, pid := range members {
		if st, ok := readStat(pid); !ok || st.state != 'S' {
			return false
		}
	}
	return len(members) > 0
}

// waitingForInput reports whether the foreground process pid is blocked
// in a call that waits for input (read, poll, select, epoll): a program
// reading its terminal, not one that sleeps, waits for a child or works.
// A read (read, readv) counts only when it reads the terminal tty: a
// program blocked reading a pipe or a socket (bash's child waiting on a
// pipe for its job's process group to be set up, before it runs the
// command; a client waiting for a server) does not read what is typed,
// whatever reads the terminal next does. Which descriptors a poll, select
// or epoll waits on /proc does not say: those count as waiting for input.
// /proc/PID/syscall names the call; when it (or the descriptor read)
// cannot be read, the answer is no, which judges typed input more
// strictly (see Status.Ahead).
func waitingForInput(pid int, tty ttyID) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	switch nr {
	case unix.SYS_READ, unix.SYS_READV:
		return len(f) > 1 && readsTerminal(pid, f[1], tty)
	case unix.SYS_PSELECT6, unix.SYS_PPOLL, unix.SYS_EPOLL_PWAIT:
		return true
	}
	return waitSyscall(nr)
}

// readsTerminal reports whether descriptor fd (as /proc/PID/syscall
// writes an argument: hexadecimal) of process pid is the terminal tty:
// the terminal itself, or /dev/tty (less, sudo and git's prompts read
// keys there) when tty is the process's controlling terminal.
func readsTerminal(pid int, fd string, tty ttyID) bool {
	n, err := strconv.ParseUint(strings.TrimPrefix(fd, "0x"), 16, 31)
	if err != nil || tty == (ttyID{}) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.FormatUint(n, 10), &st); err != nil {
		return false
	}
	if uint64(st.Dev) == tty.dev && uint64(st.Ino) == tty.ino {
		return true
	}
	if rdev := uint64(st.Rdev); st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(rdev) == 5 && unix.Minor(rdev) == 0 {
		ps, ok := readStatFull(pid)
		return ok && ps.ttyNr != 0 && ps.ttyNr == tty.nr
	}
	return false
}
