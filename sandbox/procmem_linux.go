package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reading a process that waits in execve: its memory (the pathname and
// argv it passed), its working directory, its ancestry. Everything read
// here is the process's to change until the kernel runs the exec, by
// another thread or a process sharing its memory: the answer judges what
// was there when it was read (see the package doc's known limits).

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// procMem reads another process's memory (process_vm_readv: one system
// call a read, no descriptor to open), keeping the last two page-sized
// windows read: argv's strings lie close together, so most take no read
// of their own. prime reads the pathname's page and the argv array's in
// one call. What it read is the asking process's only if the request is
// still valid after the reading (the supervisor checks): a pid cannot be
// reused while its task waits in the kernel.
type procMem struct {
	read func(p []byte, addr uint64) (int, error)
	// read2, when set, reads two ranges in one call, as process_vm_readv
	// does: p whole before q, and nothing of q once p is short.
	read2 func(p []byte, a uint64, q []byte, b uint64) (int, error)
	wins  [2]memWindow
	last  int // the window used last: the other is replaced first
	bufs  [2][4096]byte
}

// memWindow is bytes read from base on.
type memWindow struct {
	base uint64
	b    []byte
}

func openMem(pid int) *procMem {
	return &procMem{
		read: func(p []byte, addr uint64) (int, error) {
			local := []unix.Iovec{{Base: &p[0]}}
			local[0].SetLen(len(p))
			return unix.ProcessVMReadv(pid, local, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}, 0)
		},
		read2: func(p []byte, a uint64, q []byte, b uint64) (int, error) {
			local := []unix.Iovec{{Base: &p[0]}, {Base: &q[0]}}
			local[0].SetLen(len(p))
			local[1].SetLen(len(q))
			return unix.ProcessVMReadv(pid, local, []unix.RemoteIovec{{Base: uintptr(a), Len: len(p)}, {Base: uintptr(b), Len: len(q)}}, 0)
		},
	}
}

// prime reads, in one call, the page that holds the pathname from path
// on, and the page that holds the argv array (the strings are often on
// it): each read to its page's end, so that neither runs into an unmapped
// page. When the call gives less, the reads that follow go one by one,
// as without it.
func (m *procMem) prime(path, argv uint64) {
	if m.read2 == nil || path == 0 || argv == 0 {
		return
	}
	const page = 4096
	pn := page - int(path%page)
	abase := argv - argv%page
	n, err := m.read2(m.bufs[0][:pn], path, m.bufs[1][:], abase)
	if err != nil || n <= 0 {
		return
	}
	m.wins[0] = memWindow{base: path, b: m.bufs[0][:min(n, pn)]}
	if n > pn {
		m.wins[1] = memWindow{base: abase, b: m.bufs[1][:n-pn]}
	}
	m.last = 0
}

// cached returns the bytes kept from addr on to the end of a window, or
// nil.
func (m *procMem) cached(addr uint64) []byte {
	for i := range m.wins {
		w := &m.wins[i]
		if w.b != nil && addr >= w.base && addr < w.base+uint64(len(w.b)) {
			m.last = i
			return w.b[addr-w.base:]
		}
	}
	return nil
}

// window returns the bytes from addr to the end of what one read gives
// (at most a page, stopping where the mapping does).
func (m *procMem) window(addr uint64) ([]byte, error) {
	if w := m.cached(addr); w != nil {
		return w, nil
	}
	if addr == 0 {
		return nil, unix.EFAULT
	}
	k := 1 - m.last
	buf := m.bufs[k][:]
	n, err := m.read(buf, addr)
	if err != nil || n == 0 {
		// A read that starts on a mapped page and runs into an unmapped
		// one may fail whole: read to the page's end alone.
		rest := 4096 - int(addr%4096)
		if rest < len(buf) {
			n, err = m.read(buf[:rest], addr)
		}
		if err != nil || n == 0 {
			if err == nil || errors.Is(err, unix.EIO) {
				err = unix.EFAULT // an unmapped address, as the kernel will say
			}
			return nil, err
		}
	}
	m.wins[k], m.last = memWindow{base: addr, b: buf[:n]}, k
	return m.wins[k].b, nil
}

// str reads a NUL-terminated string of at most max bytes at addr.
func (m *procMem) str(addr uint64, max int) (string, error) {
	var out []byte
	for {
		w, err := m.window(addr)
		if err != nil {
			return "", err
		}
		if i := bytes.IndexByte(w, 0); i >= 0 {
			if len(out)+i > max {
				return "", fmt.Errorf("longer than %d bytes", max)
			}
			if out == nil {
				return string(w[:i]), nil
			}
			return string(append(out, w[:i]...)), nil
		}
		out = append(out, w...)
		if len(out) > max {
			return "", fmt.Errorf("longer than %d bytes", max)
		}
		addr += uint64(len(w))
	}
}

// ptrSize is the size of a pointer of the process: the gate's filter
// kills any process of another architecture, so it is the gateway's own.
const ptrSize = int(unsafe.Sizeof(uintptr(0)))

// strs reads a NULL-terminated array of string pointers (argv) at addr,
// within maxArgs and maxArgBytes. A NULL array is an empty argv.
func (m *procMem) strs(addr uint64) ([]string, error) {
	if addr == 0 {
		return []string{}, nil
	}
	var ptrs []uint64
	var raw [64 * 8]byte
	for {
		var n int
		var err error
		if w := m.cached(addr); len(w) >= ptrSize {
			n = copy(raw[:], w) // the array's page, primed
		} else {
			n, err = m.read(raw[:], addr)
		}
		if err != nil || n < ptrSize {
			// Near the end of a mapping: one pointer at a time.
			n, err = m.read(raw[:ptrSize], addr)
			if err != nil || n < ptrSize {
				if err == nil || errors.Is(err, unix.EIO) {
					err = unix.EFAULT
				}
				return nil, err
			}
		}
		done := false
		for i := 0; i+ptrSize <= n; i += ptrSize {
			var p uint64
			if ptrSize == 8 {
				p = binary.NativeEndian.Uint64(raw[i:])
			} else {
				p = uint64(binary.NativeEndian.Uint32(raw[i:]))
			}
			if p == 0 {
				done = true
				break
			}
			ptrs = append(ptrs, p)
			if len(ptrs) > maxArgs {
				return nil, fmt.Errorf("more than %d arguments", maxArgs)
			}
		}
		if done {
			break
		}
		addr += uint64(n - n%ptrSize)
	}
	out := make([]string, len(ptrs))
	total := 0
	for i, p := range ptrs {
		s, err := m.str(p, maxArgBytes-total)
		if err != nil {
			if !errors.Is(err, unix.EFAULT) {
				err = fmt.Errorf("more than %d bytes", maxArgBytes)
			}
			return nil, err
		}
		out[i] = s
		total += len(s) + 1
	}
	return out, nil
}

// resolveExecutable finds the file an exec names, as the kernel will:
// relative to the process's working directory, or to execveat's
// directory, or that directory itself (AT_EMPTY_PATH), under the
// process's root, links followed. It returns the file's real path and
// what stat says, or the errno the exec fails with: a file that does
// not exist or is not a regular file is never run, whatever the answer.
// A program the index knows by its identity (most execs) needs one stat.
func resolveExecutable(pid int, dirfd int32, path string, flags uint64, programs *ProgramIndex) (string, unix.Stat_t, syscall.Errno) {
	var st unix.Stat_t
	var p string
	switch {
	case path == "" && flags&unix.AT_EMPTY_PATH != 0:
		p = procPath(pid, "fd/"+strconv.Itoa(int(dirfd)))
	case path == "":
		return "", st, unix.ENOENT
	case strings.HasPrefix(path, "/"):
		p = procPath(pid, "root") + path
	case dirfd == unix.AT_FDCWD:
		p = procPath(pid, "cwd") + "/" + path
	default:
		p = procPath(pid, "fd/"+strconv.Itoa(int(dirfd))) + "/" + path
	}
	if err := unix.Stat(p, &st); err != nil {
		return "", st, errnoOf(err, unix.ENOENT)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", st, unix.EACCES
	}
	if real, ok := programs.pathOf(&st); ok {
		return real, st, 0
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", st, errnoOf(err, unix.ENOENT)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", st, unix.EACCES
	}
	real, err := readlinkFd(fd)
	if err != nil {
		return "", st, unix.EACCES
	}
	return real, st, 0
}

func errnoOf(err error, def syscall.Errno) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return def
}

// readlinkFd is the path of an open file, as /proc/self/fd says.
func readlinkFd(fd int) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// parents lists the programs from leader (the launch's own process) down
// to the task tid, outermost first, each named by its executable (its
// image, which for tid is the one that asks to exec), and returns tid's
// process id (its thread group) and its parent's. A process that left
// the launch's tree (reparented to init) has its chain up to the first
// process outside.
//
// tid is read by its number (the request's validity, checked after,
// vouches for it); the processes above it, the leader among them, are
// read through procs, which keeps them open: a read of an open /proc/PID
// file is of that process or fails, so a pid reused since is never taken
// for the process that held it, and a process seen before costs one
// read. The name procs keeps is checked against the image's mark at
// every read, which also covers the leader's own exec: the answer lets
// it run at once, and the other judge may be asked about the new
// program's first child before the one that answered drops any name.
func parents(tid, leader int, procs *procCache) (chain []string, pid, ppid int) {
	pid, ppid = processIDs(tid)
	if pid == leader {
		name, _ := procs.parent(leader)
		return []string{name}, pid, ppid
	}
	chain = append(chain, exeName(tid))
	for p := ppid; p > 1 && len(chain) < maxParents; {
		name, pp := procs.parent(p)
		chain = append(chain, name)
		if p == leader {
			break
		}
		p = pp
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, pid, ppid
}

// procCache keeps the processes seen above an exec open (their /proc/PID
// directory and stat file), with the name of each one's image: a build's
// make and compiler drivers are above hundreds of execs each.
//
// A name is kept with the mark its image leaves in stat (the task's
// comm and the addresses of its code and stack, which an exec replaces)
// and read again when the mark differs: an exec the gate let run, or one
// under way while it was read, is seen at the next read. A process can
// change its comm (PR_SET_NAME) but not its image without an exec, and
// changing the comm only makes the name be read again. A known limit: a
// program that turns address randomisation off and execs an image laid
// out exactly like the one it replaces, under the same name, keeps the
// old image's name in the chains of its children until the gate drops it
// after answering that exec (forget); the exec itself was judged by what
// it runs.
type procCache struct {
	mu sync.Mutex
	m  map[int]*procEntry
}

type procEntry struct {
	dir, stat int // /proc/PID and its stat, open (bound to the process)
	refs      int // readers using the descriptors
	dropped   bool
	mark      string // the image's mark in stat when name was read
	name      string
}

// maxCachedProcs bounds the processes kept open: past it, all are let go.
const maxCachedProcs = 128

func newProcCache() *procCache { return &procCache{m: map[int]*procEntry{}} }

// parent names process pid and returns its parent's pid ("?" and 0 when
// it is gone).
func (c *procCache) parent(pid int) (string, int) {
	for range 2 { // a second time when the entry kept was of a process gone
		e, fresh := c.acquire(pid)
		if e == nil {
			return "?", 0
		}
		var buf [512]byte
		n, err := unix.Pread(e.stat, buf[:], 0)
		if err != nil || n <= 0 {
			c.release(e, true)
			if fresh {
				return "?", 0
			}
			continue
		}
		st, _ := parseStat(buf[:n])
		mark := imageMark(buf[:n])
		c.mu.Lock()
		name := e.name
		if e.mark != mark {
			name = ""
		}
		c.mu.Unlock()
		if name == "" {
			name = exeNameAt(e.dir)
			c.mu.Lock()
			e.name, e.mark = name, mark
			c.mu.Unlock()
		}
		c.release(e, false)
		return name, st.ppid
	}
	return "?", 0
}

// acquire returns pid's entry, opened now when it was not kept (fresh),
// held until release; nil when the process cannot be opened.
func (c *procCache) acquire(pid int) (e *procEntry, fresh bool) {
	c.mu.Lock()
	if e := c.m[pid]; e != nil {
		e.refs++
		c.mu.Unlock()
		return e, false
	}
	c.mu.Unlock()
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	stat, err := unix.Openat(dir, "stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(dir)
		return nil, false
	}
	e = &procEntry{dir: dir, stat: stat, refs: 1}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		e.dropped = true // the cache is closed: this one goes at release
		return e, true
	}
	if old := c.m[pid]; old != nil {
		c.dropLocked(pid, old) // opened twice at once: the newer stays
	}
	if len(c.m) >= maxCachedProcs {
		for p, o := range c.m {
			c.dropLocked(p, o)
		}
	}
	c.m[pid] = e
	return e, true
}

// release lets go of an entry acquire returned; gone: its process is,
// and the entry is dropped.
func (c *procCache) release(e *procEntry, gone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gone {
		for p, o := range c.m {
			if o == e {
				c.dropLocked(p, e)
				break
			}
		}
	}
	e.refs--
	if e.dropped && e.refs == 0 {
		e.closeFds()
	}
}

func (c *procCache) dropLocked(pid int, e *procEntry) {
	delete(c.m, pid)
	e.dropped = true
	if e.refs == 0 {
		e.closeFds()
	}
}

func (e *procEntry) closeFds() {
	unix.Close(e.stat)
	unix.Close(e.dir)
	e.stat, e.dir = -1, -1
}

// forget drops the name kept for process pid: an exec of it was let run.
// The mark would tell the new image from the old unless the two were laid
// out alike (no address randomisation, the same code size and comm).
func (c *procCache) forget(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[pid]; e != nil {
		e.name, e.mark = "", ""
	}
}

// close lets every entry go; the cache keeps none after.
func (c *procCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, e := range c.m {
		c.dropLocked(p, e)
	}
	c.m = nil
}

// imageMark is what of a stat line an exec changes: the task's comm
// (field 2) and the start and end of its code and the start of its
// stack (fields 26-28; zeros without an address space).
func imageMark(b []byte) string {
	i := bytes.IndexByte(b, '(')
	j := bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return ""
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 26 {
		return ""
	}
	return string(b[i:j+1]) + " " + f[23] + " " + f[24] + " " + f[25]
}

// exeNameAt is exeName of the process whose /proc directory dir is.
func exeNameAt(dir int) string {
	var buf [unix.PathMax]byte
	n, err := unix.Readlinkat(dir, "exe", buf[:])
	if err != nil {
		return "?"
	}
	return filepath.Base(strings.TrimSuffix(string(buf[:n]), " (deleted)"))
}

// processIDs returns task tid's process (its thread group; tid when it
// cannot be read) and that process's parent. /proc/PID/stat gives the
// parent and the thread count: a process of one thread is its own thread
// group (a leader that exited before its other threads still counts), so
// /proc/PID/status, which the kernel makes far more slowly, is read only
// for a thread of a process with others.
func processIDs(tid int) (pid, ppid int) {
	st, ok := readStat(tid)
	pid, ppid = tid, st.ppid
	if ok && st.threads != 1 {
		if p, pp := taskIDs(tid); p != 0 {
			pid, ppid = p, pp
		}
	}
	return pid, ppid
}

// taskIDs reads a task's process id (Tgid) and its parent's (PPid) from
// /proc/TID/status (zeros when it is gone).
func taskIDs(tid int) (pid, ppid int) {
	var buf [1024]byte
	fd, err := unix.Open(procPath(tid, "status"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0
	}
	return parseStatus(buf[:n])
}

// parseStatus reads Tgid and PPid from the start of a /proc/PID/status
// file. Its first line, Name:, holds the task's name, which the task sets
// itself (prctl PR_SET_NAME, or its executable's file name) and may hold
// anything but a newline: the fields wanted are whole lines after it.
func parseStatus(b []byte) (pid, ppid int) {
	_, rest, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return 0, 0
	}
	for _, line := range strings.Split(string(rest), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Tgid":
			pid, _ = strconv.Atoi(strings.TrimSpace(v))
		case "PPid":
			ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			return max(pid, 0), max(ppid, 0)
		}
	}
	return max(pid, 0), max(ppid, 0)
}

// exeName is the base name of a process's executable ("?" when it cannot
// be read).
func exeName(pid int) string {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(procPath(pid, "exe"), buf[:])
	if err != nil {
		return "?"
	}
	return filepath.Base(strings.TrimSuffix(string(buf[:n]), " (deleted)"))
}

// readlinkProc reads the link /proc/PID/name ("" when it cannot be read)
// with one system call: os.Readlink starts with 128 bytes and reads again
// with twice as many until the link fits, and a build's directories are
// often longer.
func readlinkProc(pid int, name string) string {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(procPath(pid, name), buf[:])
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// taskStat is what the gate reads of /proc/PID/stat.
type taskStat struct {
	ppid    int // the parent process (for a thread, its process's parent)
	threads int // the threads of its process
}

// readStat reads a task's /proc/PID/stat (false when it is gone).
func readStat(pid int) (taskStat, bool) {
	var buf [512]byte
	fd, err := unix.Open(procPath(pid, "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return taskStat{}, false
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return taskStat{}, false
	}
	return parseStat(buf[:n])
}

// parseStat reads the parent's pid (field 4) and the thread count (field
// 20) from a /proc/PID/stat line. Field 2, the task's name in
// parentheses, may hold anything, ")" and spaces included: the fields are
// counted after the last ")". A field that is not a number is 0, and the
// line is then not whole (false).
func parseStat(b []byte) (taskStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return taskStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	num := func(k int) (int, bool) {
		if k >= len(f) {
			return 0, false
		}
		n, err := strconv.Atoi(f[k])
		if err != nil || n < 0 {
			return 0, false
		}
		return n, true
	}
	// After the name: state (3), ppid (4), …, num_threads (20).
	ppid, ok1 := num(1)
	threads, ok2 := num(17)
	return taskStat{ppid: ppid, threads: threads}, ok1 && ok2
}
