package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// executable is this program's real path.
func executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return RealPath(p)
}

// prepare readies a proxy launch (Attach calls it before the spec is
// sealed): with a network namespace, the listeners the launcher binds in
// it (the proxy's, and one per direct destination), ssh's configuration
// and the hosts file bound in the session's mount namespace, and this
// executable readable for ssh's ProxyCommand; without one, a listener on
// the gateway's loopback and a Landlock rule for its port only. Then the
// variables that point the session's tools at the proxy.
func (s *EgressSession) prepare(spec *Spec, name string, st *Status) error {
	s.name, s.profile = name, spec.Profile
	netns := spec.Isolate != nil && !s.testNoNamespace
	s.netns = netns
	port := ProxyPort
	var noProxy []string
	if netns {
		iso := spec.Isolate
		iso.Net = true
		iso.Listen = []string{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ProxyPort).String()}
		s.direct = map[string]Direct{}
		var hosts []string
		for i, d := range spec.Direct {
			ip := netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)})
			if a, ok := parseAddr(d.Host); ok && a.IsLoopback() && a.Is4() {
				ip = a
			} else if ok && a.IsLoopback() || d.Host == "localhost" {
				ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
			} else {
				hosts = append(hosts, ip.String()+"\t"+d.Host)
				noProxy = append(noProxy, d.Host)
			}
			addr := netip.AddrPortFrom(ip, uint16(d.Port)).String()
			if _, dup := s.direct[addr]; dup || addr == iso.Listen[0] {
				return fmt.Errorf("profile %s: direct destination %s:%d takes a port already taken", spec.Profile, d.Host, d.Port)
			}
			iso.Listen = append(iso.Listen, addr)
			s.direct[addr] = d
		}
		if len(hosts) > 0 {
			f, err := boundOver("/etc/hosts", "", "\n# termgate: this session's direct destinations\n"+strings.Join(hosts, "\n")+"\n")
			if err != nil {
				return fmt.Errorf("direct destinations by name: %w", err)
			}
			iso.Files = append(iso.Files, f)
		}
		// ssh (and git over ssh) goes through termgate's own CONNECT client.
		cmd := quoteSh(s.e.helper) + " " + ConnectArg + " " + iso.Listen[0] + " %h %p"
		head := "# termgate: ssh reaches the network through the gateway's egress proxy\nHost *\n    ProxyCommand " + cmd + "\n\n# the system's configuration\n"
		if f, err := boundOver("/etc/ssh/ssh_config", head, ""); err == nil {
			iso.Files = append(iso.Files, f)
			spec.Read = append(spec.Read, s.e.helper)
		} else {
			st.NotEnforced = append(st.NotEnforced, "ssh: no ProxyCommand ("+err.Error()+"); ssh -o ProxyCommand='"+s.e.helper+" "+ConnectArg+" "+iso.Listen[0]+" %h %p' reaches the proxy")
		}
		st.Network = "proxy: a network namespace of its own, out only through the gateway's egress proxy (127.0.0.1:3128), each destination judged"
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("the egress proxy's listener: %w", err)
		}
		s.hostLn = ln
		port = ln.Addr().(*net.TCPAddr).Port
		if fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG); err == nil {
			s.diag = newSockDiag(fd)
		}
		spec.Ports = []int{port}
		st.Network = fmt.Sprintf("proxy on the host's loopback (127.0.0.1:%d), each destination judged", port)
		st.NotEnforced = append(st.NotEnforced, fmt.Sprintf("network: no namespace of its own (that needs a root gateway), so a program that ignores the proxy may reach TCP port %d of any host; UDP and raw sockets are refused", port))
		if len(spec.Direct) > 0 {
			st.NotEnforced = append(st.NotEnforced, "direct destinations need a network namespace: none is offered")
		}
	}
	for _, kv := range proxyEnv(port, noProxy) {
		spec.Env = setEnv(spec.Env, kv[0], kv[1])
	}
	return nil
}

// boundOver makes the file bound over path (its real path, a regular
// file): head, its content now, tail.
func boundOver(path, head, tail string) (BoundFile, error) {
	real, err := RealPath(path)
	if err != nil {
		return BoundFile{}, err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return BoundFile{}, err
	}
	if !fi.Mode().IsRegular() {
		return BoundFile{}, fmt.Errorf("%s is not a regular file", real)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		return BoundFile{}, err
	}
	if len(b) > 16<<10 {
		return BoundFile{}, fmt.Errorf("%s is over 16 KiB", real)
	}
	return BoundFile{Path: real, Content: head + string(b) + tail}, nil
}

// quoteSh quotes a word for sh.
func quoteSh(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkDirect checks a profile's direct destinations.
func checkDirect(ds []Direct) error {
	if len(ds) > 64 {
		return errors.New("at most 64 direct destinations")
	}
	for _, d := range ds {
		if d.Port < 1 || d.Port > 65535 {
			return fmt.Errorf("direct destination %q: port %d", d.Host, d.Port)
		}
		if a, ok := parseAddr(d.Host); ok {
			if !a.IsLoopback() {
				return fmt.Errorf("direct destination %s: an address must be loopback's (name any other host)", d.Host)
			}
			continue
		}
		if _, err := normalizeHost(d.Host); err != nil || d.Host != strings.ToLower(d.Host) {
			return fmt.Errorf("direct destination %q is not a lower-case host name", d.Host)
		}
	}
	return nil
}

// egressChannel makes the socket pair the launcher hands its listeners
// over, when the spec asks for a network namespace: fd is the number the
// launcher's end will have.
func egressChannel(spec *Spec, fd int) (ours, theirs *os.File, err error) {
	if spec.Isolate == nil || !spec.Isolate.Net {
		return nil, nil, nil
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: the egress channel: %w", err)
	}
	iso := *spec.Isolate
	iso.FD = fd
	spec.Isolate = &iso
	return os.NewFile(uintptr(pair[0]), "egress"), os.NewFile(uintptr(pair[1]), "egress-launcher"), nil
}

// closeChannel closes both ends of an egress channel (nil: none).
func closeChannel(ours, theirs *os.File) {
	if ours != nil {
		ours.Close()
		theirs.Close()
	}
}

// startEgress takes the listeners the launcher sent (or, without a
// namespace, the gateway's own) and serves them.
func (l *launcher) startEgress(cmd *exec.Cmd) error {
	if l.channel != nil {
		defer func() { l.channel.Close(); l.channel = nil }()
	}
	es := l.egress
	if es == nil {
		return nil
	}
	es.leader = cmd.Process.Pid
	if l.channel == nil {
		if es.hostLn != nil {
			es.serve([]net.Listener{es.hostLn}, []string{"proxy"})
		}
		return nil
	}
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*64))
	n, oobn, _, _, err := unix.Recvmsg(int(l.channel.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 1 {
		return fmt.Errorf("sandbox: the launcher sent no listener for the egress proxy (%v)", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return fmt.Errorf("sandbox: the egress listeners: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, r...)
		}
	}
	if len(fds) != len(l.kinds)+1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("sandbox: the launcher sent %d descriptors for the egress proxy, not %d", len(fds), len(l.kinds)+1)
	}
	es.diag = newSockDiag(fds[len(fds)-1])
	fds = fds[:len(fds)-1]
	lns := make([]net.Listener, 0, len(fds))
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "egress-listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err == nil {
			lns = append(lns, ln)
		}
	}
	if len(lns) != len(l.kinds) {
		for _, ln := range lns {
			ln.Close()
		}
		return fmt.Errorf("sandbox: the launcher sent %d egress listeners, not %d", len(lns), len(l.kinds))
	}
	es.serve(lns, l.kinds)
	return nil
}

// owner finds the process of the session that holds the client end of c
// (the socket whose local address is c's remote one, in the session's
// network namespace), and its program: the base name of its executable,
// or, for termgate's own CONNECT client (ssh's ProxyCommand), its
// parent's. member is false when no process of the session holds it.
func (s *EgressSession) owner(c net.Conn) (pid int, program string, member bool) {
	peer, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, "", false
	}
	pids := s.members()
	ns := []string{"self"}
	if s.netns {
		ns = ns[:0]
		if s.leader > 0 {
			ns = append(ns, strconv.Itoa(s.leader))
		}
		for _, p := range pids {
			if len(ns) >= 3 {
				break
			}
			ns = append(ns, strconv.Itoa(p))
		}
	}
	var inode string
	if s.diag != nil {
		inode = s.diag.inode(peer.AddrPort(), local.AddrPort())
	}
	for _, p := range ns {
		if inode != "" {
			break
		}
		inode = socketInode(p, peer.AddrPort(), local.AddrPort())
	}
	if inode == "" {
		return 0, "", false
	}
	want := "socket:[" + inode + "]"
	for _, p := range pids {
		if !holds(p, want) {
			continue
		}
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe")
		if exe == s.e.helper {
			if pp := parentOf(p); pp > 0 {
				parent, _ := os.Readlink("/proc/" + strconv.Itoa(pp) + "/exe")
				return p, programName(pp, parent), true
			}
		}
		return p, programName(p, exe), true
	}
	return 0, "", false
}

// programName is the base name of an executable, or the process's comm
// when its executable cannot be read.
func programName(pid int, exe string) string {
	if exe != "" {
		return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// members lists the session's processes: its cgroup's, or, without one,
// the descendants of its first process.
func (s *EgressSession) members() []int {
	for _, f := range s.procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var out []int
		for _, x := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(x); err == nil {
				out = append(out, p)
			}
		}
		return out
	}
	if s.leader <= 0 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			parent[p] = parentOf(p)
		}
	}
	var out []int
	for p := range parent {
		for q, n := p, 0; q > 1 && n < 256; q, n = parent[q], n+1 {
			if q == s.leader {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// parentOf is a process's parent (0 when unknown).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// holds reports whether process pid has the file want ("socket:[N]") open.
func holds(pid int, want string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
			return true
		}
	}
	return false
}

// sockDiag asks the kernel's socket table of one network namespace
// (NETLINK_SOCK_DIAG, an exact lookup by address and ports: what ss
// does) for a TCP socket's inode, without reading the whole table.
type sockDiag struct {
	mu  sync.Mutex
	fd  int
	seq uint32
}

func newSockDiag(fd int) *sockDiag { return &sockDiag{fd: fd} }

func (d *sockDiag) close() {
	if d != nil {
		unix.Close(d.fd)
	}
}

// inode is the inode of the TCP socket whose local address is local and
// remote one remote ("" when there is none), looked up as IPv4 and as
// IPv6 (a dual-stack socket holds IPv4 as mapped addresses).
func (d *sockDiag) inode(local, remote netip.AddrPort) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	fams := []uint8{unix.AF_INET6}
	if local.Addr().Unmap().Is4() && remote.Addr().Unmap().Is4() {
		fams = []uint8{unix.AF_INET, unix.AF_INET6}
	}
	for _, fam := range fams {
		d.seq++
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
		binary.NativeEndian.PutUint32(req[8:], d.seq)
		r := req[16:]
		r[0], r[1] = fam, unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // every state
		id := r[8:]
		binary.BigEndian.PutUint16(id[0:], local.Port())
		binary.BigEndian.PutUint16(id[2:], remote.Port())
		put := func(b []byte, a netip.Addr) {
			if fam == unix.AF_INET {
				a4 := a.Unmap().As4()
				copy(b, a4[:])
				return
			}
			a16 := a.As16()
			copy(b, a16[:])
		}
		put(id[4:20], local.Addr())
		put(id[20:36], remote.Addr())
		binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // no cookie
		binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
		if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return ""
		}
		buf := make([]byte, 4096)
		for tries := 0; tries < 4; tries++ {
			n, _, err := unix.Recvfrom(d.fd, buf, 0)
			if err != nil {
				return ""
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil || len(msgs) == 0 {
				return ""
			}
			m := msgs[0]
			if m.Header.Seq != d.seq {
				continue // an answer to an earlier question
			}
			if m.Header.Type == unix.SOCK_DIAG_BY_FAMILY && len(m.Data) >= 72 {
				if ino := binary.NativeEndian.Uint32(m.Data[68:]); ino != 0 {
					return strconv.FormatUint(uint64(ino), 10)
				}
			}
			break // NLMSG_ERROR: no such socket as this family
		}
	}
	return ""
}

// socketInode finds, in /proc/PID/net/tcp{,6} (PID's network namespace),
// the inode of the socket whose local address is local and remote one is
// remote.
func socketInode(pid string, local, remote netip.AddrPort) string {
	for _, f := range []string{"tcp", "tcp6"} {
		file, err := os.Open("/proc/" + pid + "/net/" + f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			l, ok1 := procNetAddr(fields[1])
			r, ok2 := procNetAddr(fields[2])
			if ok1 && ok2 && l == local && r == remote {
				file.Close()
				return fields[9]
			}
		}
		file.Close()
	}
	return ""
}

// procNetAddr reads an address of /proc/net/tcp: hex words in the host's
// byte order, a colon, the port in hex. IPv4-mapped IPv6 is unmapped.
func procNetAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || len(h) != 8 && len(h) != 32 {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// ConnectArg is argv[1] of termgate run as the CONNECT client ssh's
// ProxyCommand runs in a proxy session.
const ConnectArg = "__termgate-connect"

// IsConnectHelper reports whether this process was started as the
// CONNECT client; main calls it first, with IsLauncher.
func IsConnectHelper() bool { return len(os.Args) > 1 && os.Args[1] == ConnectArg }

// ConnectMain is the CONNECT client: termgate __termgate-connect PROXY
// HOST PORT opens a tunnel to HOST:PORT through the proxy at PROXY and
// relays stdin and stdout through it, as ssh's ProxyCommand wants. A
// refusal is said on stderr. It never returns.
func ConnectMain() {
	os.Exit(connectMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}

func connectMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintf(stderr, "usage: termgate %s PROXY HOST PORT\n", ConnectArg)
		return 2
	}
	proxy, host, port := args[0], args[1], args[2]
	if strings.ContainsFunc(host+port, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		fmt.Fprintf(stderr, "termgate: %q is not a host and port\n", host+":"+port)
		return 2
	}
	c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: the sandbox's egress proxy at %s: %v\n", proxy, err)
		return 1
	}
	defer c.Close()
	target := net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		fmt.Fprintf(stderr, "termgate: the sandbox's egress proxy: %v\n", err)
		return 1
	}
	br := bufio.NewReader(io.LimitReader(c, 1<<62))
	status, err := br.ReadString('\n')
	if err != nil {
		fmt.Fprintf(stderr, "termgate: the sandbox's egress proxy closed the connection to %s\n", target)
		return 1
	}
	f := strings.Fields(status)
	ok := len(f) >= 2 && f[1] == "200"
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return 1
		}
		if strings.TrimSpace(line) == "" {
			break
		}
	}
	if !ok {
		body, _ := io.ReadAll(io.LimitReader(br, 4096))
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = "termgate: the sandbox's egress proxy answered " + strings.TrimSpace(status)
		}
		fmt.Fprintln(stderr, oneLine(msg))
		return 1
	}
	go func() {
		_, _ = io.Copy(c, stdin)
		closeWrite(c)
	}()
	_, _ = io.Copy(stdout, br)
	return 0
}
