package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FileID names a file by device and inode: what a check saw, so that a
// later open can prove that it found the same file and not another one
// put in its place.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IsZero reports whether id names nothing.
func (id FileID) IsZero() bool { return id == FileID{} }

// RealPath returns p as an absolute path with every symbolic link
// resolved (the magic links of /proc too: /proc/self/root is "/"), and
// "." and ".." gone. A relative p is taken from this process's working
// directory. The answer is only as good as the moment it was given: the
// launcher opens what it names without following links and compares
// identities, so a link put in its place later is refused, not followed.
func RealPath(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%q is not a path", p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(real) {
		return "", fmt.Errorf("%s resolves to %q, which is not an absolute path", p, real)
	}
	return filepath.Clean(real), nil
}

// openNoFollow opens path as an O_PATH descriptor without following any
// symbolic link, magic links of /proc included, at any step: the path
// must already be real. It returns the descriptor and what fstat says.
func openNoFollow(path string, flags uint64) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if !filepath.IsAbs(path) {
		return -1, st, fmt.Errorf("%q is not an absolute path", path)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return -1, st, fmt.Errorf("%s: a symbolic link is in the way (it changed after it was resolved)", path)
		}
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	return fd, st, nil
}

func idOf(st *unix.Stat_t) FileID { return FileID{Dev: uint64(st.Dev), Ino: st.Ino} }

// Identify returns the identity of a real path (no link at any step) and
// whether it is a directory.
func Identify(path string) (FileID, bool, error) {
	fd, st, err := openNoFollow(path, 0)
	if err != nil {
		return FileID{}, false, err
	}
	unix.Close(fd)
	return idOf(&st), st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// PseudoFS names the kernel's own file system a real path lies on (proc,
// sysfs, cgroup, devpts, …), or "" for an ordinary one. Nothing of a
// session's may live on one.
func PseudoFS(path string) (string, error) {
	fd, _, err := openNoFollow(path, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return "", &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return pseudoFSName(int64(sfs.Type)), nil
}

func pseudoFSName(t int64) string {
	switch uint32(t) {
	case unix.PROC_SUPER_MAGIC:
		return "proc"
	case unix.SYSFS_MAGIC:
		return "sysfs"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "cgroup"
	case unix.DEVPTS_SUPER_MAGIC:
		return "devpts"
	case unix.DEBUGFS_MAGIC:
		return "debugfs"
	case unix.TRACEFS_MAGIC:
		return "tracefs"
	case unix.SECURITYFS_MAGIC:
		return "securityfs"
	case unix.BPF_FS_MAGIC:
		return "bpf"
	case unix.NSFS_MAGIC:
		return "nsfs"
	case unix.PID_FS_MAGIC:
		return "pidfs"
	case unix.EFIVARFS_MAGIC:
		return "efivarfs"
	case unix.PSTOREFS_MAGIC:
		return "pstore"
	case unix.BINFMTFS_MAGIC:
		return "binfmt_misc"
	case unix.SELINUX_MAGIC, unix.SMACK_MAGIC:
		return "selinuxfs"
	case 0x62656570: // configfs
		return "configfs"
	case 0x65735543: // fusectl
		return "fusectl"
	}
	return ""
}

// UnderMagicRoot reports which of /proc, /sys and /dev, the trees of the
// kernel's own files, holds a path ("" for none): a session's working
// directory is never under one.
func UnderMagicRoot(path string) string {
	for _, r := range []string{"/proc", "/sys", "/dev"} {
		if within(path, r) {
			return r
		}
	}
	return ""
}

// guard refuses grants that reach the gateway's own files: "/", any of
// them, a directory that holds one, or one inside them, however the grant
// is spelled (links are resolved before it looks) and whatever other name
// the same directory has (a bind mount is caught by its identity).
type guard struct {
	protected []string          // resolved
	holders   map[FileID]string // "/" and each protected path and every directory above it → the protected path
	inside    map[FileID]string // each protected path that exists → itself
	mounts    []string          // mount points, from /proc/self/mountinfo
	// above are the identities of the directories above grants, found
	// once per guard (one Resolve): a home read by deny-list is hundreds
	// of grants below the same few directories.
	above map[string]dirID
}

// dirID is a directory's identity, or that it could not be found.
type dirID struct {
	id FileID
	ok bool
}

// identifyAbove is Identify of a directory above a grant, once per guard.
func (g *guard) identifyAbove(d string) (FileID, bool) {
	if x, seen := g.above[d]; seen {
		return x.id, x.ok
	}
	id, _, err := Identify(d)
	if g.above == nil {
		g.above = map[string]dirID{}
	}
	g.above[d] = dirID{id, err == nil}
	return id, err == nil
}

// newGuard resolves the protected paths (the part of one that does not
// exist yet is kept as written below its nearest existing directory).
func newGuard(protected []string) (*guard, error) {
	g := &guard{holders: map[FileID]string{}, inside: map[FileID]string{}}
	root, _, err := Identify("/")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	g.holders[root] = "/"
	for _, p := range protected {
		if p == "" {
			continue
		}
		real, err := resolveExisting(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: resolving the gateway's own %s: %w", p, err)
		}
		g.protected = append(g.protected, real)
		for d := real; ; d = filepath.Dir(d) {
			if id, _, err := Identify(d); err == nil {
				if _, seen := g.holders[id]; !seen || d == real {
					g.holders[id] = real
				}
				if d == real {
					g.inside[id] = real
				}
			}
			if d == "/" {
				break
			}
		}
	}
	g.mounts = mountPoints()
	return g, nil
}

// resolveExisting resolves the longest existing prefix of p and keeps the
// rest as written.
func resolveExisting(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for d := abs; ; d = filepath.Dir(d) {
		real, err := filepath.EvalSymlinks(d)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return filepath.Clean(real), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || d == "/" {
			return "", err
		}
		rest = append(rest, filepath.Base(d))
	}
}

// check refuses a resolved grant that reaches a protected path.
func (g *guard) check(path string, id FileID) error {
	if path == "/" {
		return errors.New("it grants the whole file system")
	}
	for _, prot := range g.protected {
		switch {
		case within(prot, path):
			return fmt.Errorf("it holds the gateway's own %s", prot)
		case within(path, prot):
			return fmt.Errorf("it is inside the gateway's own %s", prot)
		}
	}
	if prot, ok := g.holders[id]; ok {
		if prot == "/" {
			return errors.New("it is the root of the file system under another name")
		}
		return fmt.Errorf("it is, under another name, %s or a directory that holds it", prot)
	}
	// Inside a protected directory under another name (a bind mount of
	// it): some directory above the grant is a protected one.
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if pid, ok := g.identifyAbove(d); ok {
			if prot, ok := g.inside[pid]; ok {
				return fmt.Errorf("it is inside the gateway's own %s, under another name", prot)
			}
		}
		if d == "/" {
			break
		}
	}
	// A file system mounted below the grant that is "/" or a protected
	// directory, or holds one (a bind mount of / inside the project).
	for _, m := range g.mounts {
		if m == path || !within(m, path) {
			continue
		}
		mid, _, err := Identify(m)
		if err != nil {
			continue
		}
		if prot, ok := g.holders[mid]; ok {
			return fmt.Errorf("%s is mounted below it and is %s or holds it", m, prot)
		}
	}
	return nil
}

// mountPoints lists this process's mount points.
func mountPoints() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMount(fields[4]))
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// CheckGrant refuses a real path that reaches one of protected (the
// gateway's own files), as a profile's grant would be refused: "/", one
// of them, a directory that holds one, one inside them, under any name.
func CheckGrant(path string, protected []string) error {
	g, err := newGuard(protected)
	if err != nil {
		return err
	}
	id, _, err := Identify(path)
	if err != nil {
		return err
	}
	return g.check(path, id)
}
