package sandbox

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Isolation is what the launcher unshares before it drops its
// capabilities: a mount namespace of the session's own, with a private,
// size-limited /dev/shm (and generated files bound read-only over system
// ones: ssh's configuration, the hosts file), and, for a proxy session, a
// network namespace of its own in which only loopback is up and the
// gateway's listeners are the only way out.
//
// The launcher runs as root until it drops its capabilities; a gateway
// that is not root gets no Isolation (Attach says so in the status):
// unsharing a user namespace needs a single-threaded process, which a Go
// launcher never is, so an unprivileged one would have to be made when the
// launcher is cloned.
type Isolation struct {
	// Shm is the size in bytes of the tmpfs mounted on /dev/shm.
	Shm int64 `json:"shm"`
	// Files are bound read-only over the files they name (real paths,
	// regular files), in the session's mount namespace only.
	Files []BoundFile `json:"files,omitempty"`
	// Net: a network namespace of the session's own, with loopback up.
	Net bool `json:"net"`
	// Listen are the TCP addresses the launcher binds and listens on in
	// that namespace; it sends the listening sockets, in this order, and
	// then a sock_diag netlink socket of the namespace (with which the
	// gateway finds the process behind a connection), over FD
	// (SCM_RIGHTS), and closes its own copies before exec.
	Listen []string `json:"listen,omitempty"`
	FD     int      `json:"fd,omitempty"`
}

// BoundFile is a generated file bound over a system file.
type BoundFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// isolate unshares the spec's namespaces, on this (locked) thread, the
// one that execs: a mount namespace with / private (nothing mounted here
// reaches the host, nothing the host mounts later reaches the session), a
// private /dev/shm, the spec's bound files, and with Net a network
// namespace with loopback up and the gateway's listeners bound in it.
// The grant of /dev/shm the gateway checked named the host's: it is
// replaced by the session's own, and grants below it are dropped.
//
// The seccomp filter loaded later refuses mount, unshare and setns to the
// session itself.
func isolate(s Spec, opened []openedGrant) ([]openedGrant, error) {
	iso := s.Isolate
	if iso == nil {
		return opened, nil
	}
	flags := unix.CLONE_NEWNS
	if iso.Net {
		flags |= unix.CLONE_NEWNET
	}
	if err := unix.Unshare(flags); err != nil {
		return opened, fmt.Errorf("isolating the session (unshare): %v; nothing was started", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return opened, fmt.Errorf("making the session's mounts private: %v; nothing was started", err)
	}
	shm := "/dev/shm"
	size := iso.Shm
	if size <= 0 {
		size = DefaultShm
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size="+strconv.FormatInt(size, 10)); err != nil {
		return opened, fmt.Errorf("mounting the session's private /dev/shm: %v; nothing was started", err)
	}
	opened, err := regrantShm(opened, shm)
	if err != nil {
		return opened, err
	}
	for i, f := range iso.Files {
		if err := bindFile(f, filepath.Join(shm, ".termgate-"+strconv.Itoa(i))); err != nil {
			return opened, err
		}
	}
	if !iso.Net {
		return opened, nil
	}
	if err := loopbackUp(); err != nil {
		return opened, err
	}
	fds := make([]int, 0, len(iso.Listen))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, a := range iso.Listen {
		fd, err := listenTCP(a)
		if err != nil {
			return opened, fmt.Errorf("listening on %s in the session's network: %v; nothing was started", a, err)
		}
		fds = append(fds, fd)
	}
	diag, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return opened, fmt.Errorf("the session network's socket table: %v; nothing was started", err)
	}
	fds = append(fds, diag)
	if err := unix.Sendmsg(iso.FD, []byte{'L'}, unix.UnixRights(fds...), nil, 0); err != nil {
		return opened, fmt.Errorf("handing the session's listeners to the gateway: %v; nothing was started", err)
	}
	unix.Close(iso.FD)
	return opened, nil
}

// regrantShm points the grant of /dev/shm at the session's own and drops
// grants below it.
func regrantShm(opened []openedGrant, shm string) ([]openedGrant, error) {
	out := make([]openedGrant, 0, len(opened))
	for i, g := range opened {
		switch {
		case g.Path == shm:
			fd, st, err := openNoFollow(shm, unix.O_DIRECTORY)
			if err != nil {
				closeGrants(out)
				closeGrants(opened[i:])
				return nil, fmt.Errorf("opening the session's /dev/shm: %v; nothing was started", err)
			}
			unix.Close(g.fd)
			g.fd, g.ID = fd, idOf(&st)
		case within(g.Path, shm):
			unix.Close(g.fd)
			continue
		}
		out = append(out, g)
	}
	return out, nil
}

// bindFile writes f's content to tmp (on the session's /dev/shm), binds it
// read-only over f.Path, and unlinks tmp: the session sees the content at
// f.Path only.
func bindFile(f BoundFile, tmp string) error {
	var st unix.Stat_t
	if err := unix.Lstat(f.Path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("binding over %s: it is not a regular file (%v); nothing was started", f.Path, err)
	}
	if err := os.WriteFile(tmp, []byte(f.Content), 0o444); err != nil {
		return fmt.Errorf("writing %s for the session: %v; nothing was started", f.Path, err)
	}
	defer os.Remove(tmp)
	if err := unix.Mount(tmp, f.Path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding over %s: %v; nothing was started", f.Path, err)
	}
	if err := unix.Mount("", f.Path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("making %s read-only: %v; nothing was started", f.Path, err)
	}
	return nil
}

// loopbackUp brings lo up in this network namespace (127.0.0.0/8 and ::1
// are then local).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing loopback up: %v; nothing was started", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing loopback up: %v; nothing was started", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing loopback up: %v; nothing was started", err)
	}
	return nil
}

// listenTCP binds and listens on an IPv4 address:port.
func listenTCP(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return -1, errors.New("not an IPv4 address and port")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 512); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// canIsolate reports whether a launcher of this process can unshare mount
// and network namespaces: it runs as root with CAP_SYS_ADMIN until it
// drops its capabilities.
func canIsolate() bool {
	if os.Geteuid() != 0 {
		return false
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) && has(unix.CAP_NET_ADMIN)
}
