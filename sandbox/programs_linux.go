package sandbox

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ProgramIndex tells what program a file is, so that an exec is judged
// by what runs, not by what it is called: a link to rm, a hard link to
// it, and a byte-for-byte copy of it under another name are rm.
//
// It indexes the executables of the system's program directories (and
// of the gateway's PATH) by device and inode, and by size; a file that
// is not one of them but has the size of one is hashed (SHA-256) and
// compared. A copy that differs by a byte is not recognised: it is
// judged by its own name (a known limit; the sandbox stays the boundary).
// The index is built on first use and again when one of its directories
// changes (checked at most every refreshEvery).
//
// A multi-call binary (busybox, toybox) runs the applet its argv[0]
// names: that is the program.
type ProgramIndex struct {
	dirs []string

	mu      sync.Mutex
	built   bool
	checked time.Time
	mtimes  map[string]int64
	byID    map[FileID]indexed
	bySize  map[int64][]indexed
	sums    map[fileKey][32]byte
}

type indexed struct {
	path, name string // its real path (links resolved), and the program's name
}

// fileKey names a version of a file: what it was when it was hashed.
type fileKey struct {
	id    FileID
	size  int64
	mtime int64
}

const (
	refreshEvery = 2 * time.Second
	maxHashed    = 256 << 20 // larger files are not hashed
)

// multiCall are the binaries whose argv[0] picks the program.
var multiCall = map[string]bool{"busybox": true, "toybox": true}

// SystemProgramDirs are the directories a ProgramIndex covers besides
// the gateway's PATH.
func SystemProgramDirs() []string {
	return []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
}

// NewProgramIndex indexes dirs (resolved, each once). Nothing is read
// until the first lookup.
func NewProgramIndex(dirs []string) *ProgramIndex {
	seen := map[string]bool{}
	x := &ProgramIndex{}
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		x.dirs = append(x.dirs, real)
	}
	return x
}

// Identify names the program the file at real is (st its stat), and how
// it was told: "path" (a file of an indexed directory, or one the index
// does not know: its own name), "inode" (a hard link to an indexed
// program), "content" (a copy of one) or "multi-call" (argv[0]'s applet).
func (x *ProgramIndex) Identify(real string, st *unix.Stat_t, argv0 string) (string, string) {
	name := filepath.Base(strings.TrimSuffix(real, " (deleted)"))
	how := "path"
	if x != nil && !x.inIndexedDir(real) {
		if n, h := x.lookup(real, st); n != "" {
			name, how = n, h
		}
	}
	if multiCall[name] {
		applet := filepath.Base(argv0)
		if argv0 == "" || strings.HasPrefix(applet, name) {
			return name, how // busybox rm …: the applet is an argument, which the policy unwraps
		}
		return applet, "multi-call"
	}
	return name, how
}

func (x *ProgramIndex) inIndexedDir(real string) bool {
	d := filepath.Dir(real)
	for _, x := range x.dirs {
		if d == x {
			return true
		}
	}
	return false
}

// lookup finds a file that is not in an indexed directory among the
// indexed programs: by identity, then by size and content.
func (x *ProgramIndex) lookup(real string, st *unix.Stat_t) (string, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	id := FileID{Dev: uint64(st.Dev), Ino: st.Ino}
	if e, ok := x.byID[id]; ok {
		return e.name, "inode"
	}
	cands := x.bySize[st.Size]
	if len(cands) == 0 || st.Size > maxHashed {
		return "", ""
	}
	sum, ok := x.sumLocked(real, fileKey{id: id, size: st.Size, mtime: st.Mtim.Nano()})
	if !ok {
		return "", ""
	}
	for _, c := range cands {
		var cst unix.Stat_t
		if unix.Stat(c.path, &cst) != nil || cst.Size != st.Size {
			continue
		}
		csum, ok := x.sumLocked(c.path, fileKey{id: FileID{Dev: uint64(cst.Dev), Ino: cst.Ino}, size: cst.Size, mtime: cst.Mtim.Nano()})
		if ok && csum == sum {
			return c.name, "content"
		}
	}
	return "", ""
}

// pathOf returns the real path of a file the index knows by its
// identity (st: what stat says of it now), sparing the caller the work
// of resolving it.
func (x *ProgramIndex) pathOf(st *unix.Stat_t) (string, bool) {
	if x == nil {
		return "", false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refreshLocked()
	e, ok := x.byID[FileID{Dev: uint64(st.Dev), Ino: st.Ino}]
	return e.path, ok
}

// sumLocked hashes a file, once per version of it.
func (x *ProgramIndex) sumLocked(path string, k fileKey) ([32]byte, bool) {
	if s, ok := x.sums[k]; ok {
		return s, true
	}
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxHashed+1)); err != nil {
		return [32]byte{}, false
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	if len(x.sums) > 4096 {
		clear(x.sums)
	}
	x.sums[k] = s
	return s, true
}

// refreshLocked builds the index, or builds it again when a directory
// changed since.
func (x *ProgramIndex) refreshLocked() {
	now := time.Now()
	if x.built && now.Sub(x.checked) < refreshEvery {
		return
	}
	x.checked = now
	if x.built {
		same := true
		for _, d := range x.dirs {
			var st unix.Stat_t
			if unix.Stat(d, &st) != nil || st.Mtim.Nano() != x.mtimes[d] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	x.built = true
	x.mtimes = map[string]int64{}
	x.byID = map[FileID]indexed{}
	x.bySize = map[int64][]indexed{}
	if x.sums == nil {
		x.sums = map[fileKey][32]byte{}
	}
	for _, d := range x.dirs {
		var dst unix.Stat_t
		if unix.Stat(d, &dst) == nil {
			x.mtimes[d] = dst.Mtim.Nano()
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		// The shortest name of a program wins (perl over perl5.36.0),
		// then the first in order: the same answer every time.
		sort.Slice(names, func(i, j int) bool {
			if len(names[i]) != len(names[j]) {
				return len(names[i]) < len(names[j])
			}
			return names[i] < names[j]
		})
		for _, n := range names {
			p := filepath.Join(d, n)
			var st unix.Stat_t
			if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 || st.Size == 0 {
				continue
			}
			// A link in the directory names the program it points to.
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			id := FileID{Dev: uint64(st.Dev), Ino: st.Ino}
			if _, ok := x.byID[id]; ok {
				continue
			}
			e := indexed{path: real, name: filepath.Base(real)}
			x.byID[id] = e
			x.bySize[st.Size] = append(x.bySize[st.Size], e)
		}
	}
}
