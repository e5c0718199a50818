package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memImage lays out an argv as a process's memory holds it: the strings,
// then the NULL-terminated pointer array, at base. It returns the image
// and the array's address.
func memImage(base uint64, args []string) ([]byte, uint64) {
	var img bytes.Buffer
	var ptrs []uint64
	for _, a := range args {
		ptrs = append(ptrs, base+uint64(img.Len()))
		img.WriteString(a)
		img.WriteByte(0)
	}
	for img.Len()%8 != 0 {
		img.WriteByte(0)
	}
	at := base + uint64(img.Len())
	for _, p := range append(ptrs, 0) {
		binary.Write(&img, binary.NativeEndian, p)
	}
	return img.Bytes(), at
}

// fileMem is a procMem over a file that stands in for a process's memory:
// the image at offset base, holes (unreadable) elsewhere past its end.
func fileMem(t testing.TB, base uint64, img []byte) *procMem {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "mem"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteAt(img, int64(base)); err != nil {
		t.Fatal(err)
	}
	fd := int(f.Fd())
	return &procMem{read: func(p []byte, addr uint64) (int, error) { return unix.Pread(fd, p, int64(addr)) }}
}

// primedMem is fileMem with read2 as process_vm_readv reads two ranges:
// the second only once the first was read whole, and an error only when
// nothing was read.
func primedMem(t testing.TB, base uint64, img []byte) *procMem {
	return primed(fileMem(t, base, img))
}

// sliceMem is fileMem without the file: zeros up to base, then img, and
// nothing past its end.
func sliceMem(base uint64, img []byte) *procMem {
	mem := append(make([]byte, base), img...)
	return &procMem{read: func(p []byte, addr uint64) (int, error) {
		if addr >= uint64(len(mem)) {
			return 0, nil
		}
		return copy(p, mem[addr:]), nil
	}}
}

func primed(m *procMem) *procMem {
	m.read2 = func(p []byte, a uint64, q []byte, b uint64) (int, error) {
		n, err := m.read(p, a)
		if err != nil || n < len(p) {
			return n, err
		}
		k, err := m.read(q, b)
		if err != nil || k < 0 {
			return n, nil
		}
		return n + k, nil
	}
	return m
}

// FuzzPrimedReader: reading a request's pathname and argv with their
// pages primed in one call gives what reading them one by one gives,
// whatever the memory holds and wherever the two are said to be.
func FuzzPrimedReader(f *testing.F) {
	img, at := memImage(4096, []string{"/usr/bin/rm", "-rf", "/home/u"})
	f.Add(img, uint64(0), at-4096)
	f.Add(img, at-4096, uint64(3))
	f.Add(bytes.Repeat([]byte("ab\x00"), 3000), uint64(4093), uint64(4090))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, uint64(0), uint64(9000))
	// The pathname on one page, argv on the next.
	other, at2 := memImage(8192+40, []string{"cc", "-c", "x.c"})
	f.Add(append(append([]byte("/usr/bin/cc\x00"), make([]byte, 4096+40-12)...), other...), uint64(0), at2-4096)
	f.Fuzz(func(t *testing.T, img []byte, path, argv uint64) {
		if len(img) > 1<<16 || path > 1<<17 || argv > 1<<17 {
			return
		}
		if len(img)%4096 != 0 && path%2 == 0 {
			img = append(img, make([]byte, 4096-len(img)%4096)...) // mapped to its page's end
		}
		plain, pm := sliceMem(4096, img), primed(sliceMem(4096, img))
		pm.prime(4096+path, 4096+argv)
		p1, err1 := plain.str(4096+path, maxPathLen)
		p2, err2 := pm.str(4096+path, maxPathLen)
		if p1 != p2 || (err1 == nil) != (err2 == nil) || errors.Is(err1, unix.EFAULT) != errors.Is(err2, unix.EFAULT) {
			t.Fatalf("path: %q %v, primed %q %v", p1, err1, p2, err2)
		}
		a1, err1 := plain.strs(4096 + argv)
		a2, err2 := pm.strs(4096 + argv)
		if (err1 == nil) != (err2 == nil) || errors.Is(err1, unix.EFAULT) != errors.Is(err2, unix.EFAULT) || len(a1) != len(a2) {
			t.Fatalf("argv: %q %v, primed %q %v", a1, err1, a2, err2)
		}
		for i := range a1 {
			if a1[i] != a2[i] {
				t.Fatalf("arg %d: %q, primed %q", i, a1[i], a2[i])
			}
		}
	})
}

// TestPrimedReaderOneCall: a pathname and an argv whose strings share
// the array's page are read with one call; a real process's, through
// process_vm_readv, are what it passed.
func TestPrimedReaderOneCall(t *testing.T) {
	img, at := memImage(8192, []string{"rm", "-rf", "/home/u"})
	path := 8192 + uint64(len(img))
	img = append(img, "/usr/bin/rm\x00"...)
	img = append(img, make([]byte, 4096-len(img))...) // the page, mapped whole
	m := primedMem(t, 8192, img)
	calls := 0
	read := m.read
	m.read = func(p []byte, addr uint64) (int, error) { calls++; return read(p, addr) }
	m.prime(path, at)
	p, err := m.str(path, maxPathLen)
	if err != nil || p != "/usr/bin/rm" {
		t.Fatalf("path %q %v", p, err)
	}
	args, err := m.strs(at)
	if err != nil || len(args) != 3 || args[2] != "/home/u" {
		t.Fatalf("argv %q %v", args, err)
	}
	if calls != 2 { // read2's own two (the file stands in for one call)
		t.Fatalf("%d reads after priming, want read2's 2 alone", calls)
	}

	// This process, read by process_vm_readv: a pathname and an argv in
	// memory of its own.
	pathB := append([]byte("/bin/true"), 0)
	a0, a1 := append([]byte("true"), 0), append([]byte("--x"), 0)
	arr := []uintptr{uintptr(unsafe.Pointer(&a0[0])), uintptr(unsafe.Pointer(&a1[0])), 0}
	self := openMem(os.Getpid())
	self.prime(uint64(uintptr(unsafe.Pointer(&pathB[0]))), uint64(uintptr(unsafe.Pointer(&arr[0]))))
	p, err = self.str(uint64(uintptr(unsafe.Pointer(&pathB[0]))), maxPathLen)
	got, err2 := self.strs(uint64(uintptr(unsafe.Pointer(&arr[0]))))
	runtime.KeepAlive(pathB)
	runtime.KeepAlive(a0)
	runtime.KeepAlive(a1)
	runtime.KeepAlive(arr)
	if err != nil || err2 != nil || p != "/bin/true" || len(got) != 2 || got[0] != "true" || got[1] != "--x" {
		t.Fatalf("self: %q %v, %q %v", p, err, got, err2)
	}
}

func TestArgvReader(t *testing.T) {
	big := string(bytes.Repeat([]byte("x"), 5000)) // longer than a window
	for _, args := range [][]string{{"/bin/true"}, {}, {"rm", "-rf", "/home/u"}, {"a", "", big, "c"}} {
		img, at := memImage(8192, args)
		m := fileMem(t, 8192, img)
		got, err := m.strs(at)
		if err != nil || len(got) != len(args) {
			t.Fatalf("%q: %q, %v", args, got, err)
		}
		for i := range args {
			if got[i] != args[i] {
				t.Fatalf("arg %d: %q, want %q", i, got[i], args[i])
			}
		}
	}
	// A NULL argv is an empty one; a pointer past the image is a bad
	// address, as the kernel will say.
	m := fileMem(t, 0, []byte("x\x00"))
	if got, err := m.strs(0); err != nil || len(got) != 0 {
		t.Fatalf("NULL argv: %q %v", got, err)
	}
	img, at := memImage(0, []string{"a"})
	binary.NativeEndian.PutUint64(img[at:], 1<<40)
	if _, err := fileMem(t, 0, img).strs(at); !errors.Is(err, unix.EFAULT) {
		t.Fatalf("a wild pointer: %v", err)
	}
}

// FuzzArgvReader: whatever a process's memory holds where its argv is
// said to be, reading it never panics, and what it returns is within the
// limits and is what the memory says.
func FuzzArgvReader(f *testing.F) {
	img, at := memImage(4096, []string{"rm", "-rf", "/home/u"})
	f.Add(img, at-4096)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, uint64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint64(8))
	f.Fuzz(func(t *testing.T, img []byte, off uint64) {
		if len(img) > 1<<16 || off > 1<<16 {
			return
		}
		m := fileMem(t, 4096, img)
		got, err := m.strs(4096 + off)
		if err != nil {
			return
		}
		total := 0
		for _, s := range got {
			if bytes.IndexByte([]byte(s), 0) >= 0 {
				t.Fatalf("a NUL inside %q", s)
			}
			total += len(s) + 1
		}
		if len(got) > maxArgs || total > maxArgBytes {
			t.Fatalf("over the limits: %d args, %d bytes", len(got), total)
		}
	})
}

// TestProcStatusParsers: the ids are read after the task's name, whatever
// the name holds (a task names itself): a name that spells "Tgid:" or
// ") R 1 " is no field.
func TestProcStatusParsers(t *testing.T) {
	status := "Name:\tx\\nTgid:\t1\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\nPid:\t4243\nPPid:\t4000\nTracerPid:\t0\n"
	if pid, ppid := parseStatus([]byte(status)); pid != 4242 || ppid != 4000 {
		t.Fatalf("status: %d %d", pid, ppid)
	}
	if pid, ppid := parseStatus([]byte("Tgid:\t7\nPPid:\t1\n")); pid != 0 || ppid != 1 {
		// The first line is the name's, whatever it says.
		t.Fatalf("a status whose first line looks like a field: %d %d", pid, ppid)
	}
	for line, want := range map[string]int{
		"4243 (sh) S 4000 4243 4243 0 -1":          4000,
		"4243 (a) R 1 (b) S 77 1 1 0 -1":           77,
		"4243 (evil) S 1 2 3) S 4000 4243 0 -1":    4000,
		"4243 (no close S 4000":                    0,
		"4243 (x) S":                               0,
		"4243 (x) S -5 1":                          0,
		"4243 (x) S 99999999999999999999999 1 2 3": 0,
	} {
		if got, _ := parseStat([]byte(line)); got.ppid != want {
			t.Errorf("%q: %d, want %d", line, got, want)
		}
	}
	// The real thing: this process's own files.
	b, err := os.ReadFile(procPath(os.Getpid(), "status"))
	if err != nil {
		t.Fatal(err)
	}
	if pid, ppid := parseStatus(b); pid != os.Getpid() || ppid != os.Getppid() {
		t.Fatalf("own status: %d %d", pid, ppid)
	}
	if st, ok := readStat(os.Getpid()); !ok || st.ppid != os.Getppid() || st.threads < 2 {
		// A Go test binary runs several threads.
		t.Fatalf("own stat: %+v %v", st, ok)
	}
	if st, ok := parseStat([]byte("4243 (sh) S 4000 4243 4243 0 -1 4194560 113 0 0 0 0 0 0 0 20 0 1 0 6312 0")); !ok || st.ppid != 4000 || st.threads != 1 {
		t.Fatalf("stat of a process of one thread: %+v %v", st, ok)
	}
}

// FuzzProcStatus: the /proc status and stat parsers the gate reads a
// process's ancestry with never panic, and never return a negative id,
// whatever a task named itself.
func FuzzProcStatus(f *testing.F) {
	f.Add([]byte("Name:\tbash\nTgid:\t10\nPPid:\t1\n"))
	f.Add([]byte("10 (a) b) S 1 10 10 0 -1"))
	f.Add([]byte(")"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, ppid := parseStatus(b)
		if pid < 0 || ppid < 0 {
			t.Fatalf("status: %d %d", pid, ppid)
		}
		if st, _ := parseStat(b); st.ppid < 0 || st.threads < 0 {
			t.Fatalf("stat: %+v", st)
		}
	})
}

// TestProcCacheBoundToProcess: a process the gate keeps open above an
// exec is read through descriptors bound to it: once it is gone, a read
// fails (ESRCH), whatever process holds its pid by then, and the cache
// lets it go rather than take its pid's next holder for it.
func TestProcCacheBoundToProcess(t *testing.T) {
	c := newProcCache()
	defer c.close()
	cmd := exec.Command("/bin/sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if name, ppid := c.parent(pid); name != "sleep" || ppid != os.Getpid() {
		t.Fatalf("a live process: %q, parent %d", name, ppid)
	}
	e, fresh := c.acquire(pid)
	if e == nil || fresh {
		t.Fatalf("the process is not kept: %v %v", e, fresh)
	}
	cmd.Process.Kill()
	cmd.Wait() // reaped: its pid is free for the next process
	var buf [512]byte
	if _, err := unix.Pread(e.stat, buf[:], 0); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("reading a reaped process's stat: %v, want ESRCH", err)
	}
	if name := exeNameAt(e.dir); name != "?" {
		t.Fatalf("a reaped process's image through its directory: %q", name)
	}
	c.release(e, false)
	name, ppid := c.parent(pid)
	if name == "sleep" && ppid == os.Getpid() {
		t.Fatalf("a reaped process is still read as alive")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.m[pid]; o == e {
		t.Fatalf("the entry of a process gone is kept")
	}
}

// TestProcCacheSeesExec: a process kept with the name of its image is
// named by its new image after an exec, with no word from the gate (the
// mark of the image in its stat changed).
func TestProcCacheSeesExec(t *testing.T) {
	c := newProcCache()
	defer c.close()
	cmd := exec.Command("/bin/bash", "-c", "read x; exec /bin/sleep 1000")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	if name, _ := c.parent(pid); name != "bash" {
		t.Fatalf("before the exec: %q", name)
	}
	in.Write([]byte("go\n"))
	for deadline := time.Now().Add(30 * time.Second); exeName(pid) != "sleep"; {
		if time.Now().After(deadline) {
			t.Fatal("the process did not exec sleep")
		}
		time.Sleep(time.Millisecond) // waiting for the exec, not timing it
	}
	if name, ppid := c.parent(pid); name != "sleep" || ppid != os.Getpid() {
		t.Fatalf("after the exec: %q, parent %d", name, ppid)
	}
}

// TestProcCacheConcurrent: the two judges of a launch read ancestries at
// once, some of processes that die meanwhile; every descriptor the cache
// opened is closed when it is (run it with -race).
func TestProcCacheConcurrent(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	c := newProcCache()
	var cmds []*exec.Cmd
	for range 4 {
		cmd := exec.Command("/bin/sleep", "1000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % len(cmds)
				cmd := cmds[k]
				// cmds[0] dies: what its pid names after is whatever holds it.
				if name, ppid := c.parent(cmd.Process.Pid); k != 0 && (name != "sleep" || ppid != os.Getpid()) {
					t.Errorf("pid %d: %q, parent %d", cmd.Process.Pid, name, ppid)
				}
				if i == 100 && g == 0 {
					cmds[0].Process.Kill()
					cmds[0].Wait()
				}
			}
		}()
	}
	wg.Wait()
	for _, cmd := range cmds[1:] {
		cmd.Process.Kill()
		cmd.Wait()
	}
	c.close()
	if n := fds(); n != before {
		t.Fatalf("%d descriptors open after the cache closed, %d before", n, before)
	}
}
