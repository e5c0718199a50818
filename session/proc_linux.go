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
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b[:bytes.IndexByte(b, '(')])))
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
// master is fd and the name of its program ("" when unknown): its leader's,
// or, when the leader has exited (the first command of a pipeline, such as
// cat in cat f | less), the newest live member's.
func foreground(fd uintptr) (int, string) {
	pgid, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	if err != nil || pgid <= 0 {
		return 0, ""
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pgid) + "/cmdline"); err == nil && len(b) > 0 {
		return pgid, nameOf(b) // a zombie's command line is empty
	}
	if live(pgid) {
		return pgid, procName(pgid) // a kernel thread's is too
	}
	members := groupMembers(pgid)
	if len(members) == 0 {
		return pgid, ""
	}
	return pgid, procName(members[len(members)-1])
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
	return unix.IoctlGetInt(slave, unix.TIOCINQ)
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
