package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/policies"
)

// sandboxRun runs argv confined with `termgate sandbox run` in dir.
func sandboxRun(t *testing.T, dir string, extra []string, argv ...string) (string, int) {
	t.Helper()
	args := append(append([]string{"sandbox", "run"}, extra...), "--")
	return runBinary(t, dir, append(args, argv...)...)
}

// tinyBundle is the default bundle plus a profile with small limits, so
// that the resource cases end quickly.
func tinyBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "data.json"))
	tiny := `"tiny": {"description": "test", "read": ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "{path}", "{home}/.pyenv"], "write": ["{cwd}"], "devices": ["/dev/null", "/dev/urandom"], "network": "none", "limits": {"processes": 64, "file_size": 1048576, "memory": 268435456, "session_memory": 134217728}},`
	s := strings.Replace(string(b), `"profiles": {`, `"profiles": {`+tiny, 1)
	if err := os.WriteFile(filepath.Join(dir, "data.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEscapeBattery makes real escape attempts from inside the sandbox;
// each prints BLOCKED when it fails, ESCAPED when it works.
func TestEscapeBattery(t *testing.T) {
	project := t.TempDir()
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary")
	if err := os.WriteFile(canary, []byte("secret-canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "ro"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Listeners outside the sandbox: abstract and pathname unix sockets,
	// and TCP on loopback.
	abstract := fmt.Sprintf("@tg-test-%d", time.Now().UnixNano())
	la, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	sock := filepath.Join(outside, "s.sock")
	lp, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	lt, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	port := lt.Addr().(*net.TCPAddr).Port
	// A UDP echo on the host's loopback: an answer is a way out.
	lu, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lu.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := lu.ReadFrom(buf)
			if err != nil {
				return
			}
			lu.WriteTo(buf[:n], from)
		}
	}()
	udpPort := lu.LocalAddr().(*net.UDPAddr).Port
	tiny := tinyBundle(t)
	// The session's home (its secrets are not read) and another user's.
	home, otherHome := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{
		".ssh/id_ed25519": "key", ".aws/credentials": "key", ".config/gh/hosts.yml": "token",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(home, name)), 0o700)
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, "keylink")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(otherHome, ".profile"), []byte("secret-canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)

	sh := func(script string) []string { return []string{"sh", "-c", script} }
	py := func(code string) []string { return []string{"python3", "-c", code} }
	tryPy := func(body string) []string {
		return py("import os, socket, ctypes, errno\ntry:\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n    print('ESCAPED')\nexcept Exception as e:\n    print('BLOCKED', e)")
	}
	sysc := func(nr int, args string) []string {
		return py(fmt.Sprintf("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(%d%s)\nprint('BLOCKED' if r == -1 and ctypes.get_errno() in (1, 13, 38) else 'ESCAPED', r, ctypes.get_errno())", nr, args))
	}
	cases := []struct {
		name  string
		extra []string
		argv  []string
	}{
		{"write outside the project", nil, sh("touch " + outside + "/pwn 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"write /etc", nil, sh("touch /etc/termgate-pwn 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"write home", nil, sh("touch $HOME/termgate-pwn 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"read a canary outside", nil, sh("cat " + canary + " 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		// Every directory's names may be listed (list ["/"]); the files of
		// a home that is not the session's are not read.
		{"read a file of another home", nil, sh("cat " + otherHome + "/.profile 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"read a private key in the home", nil, sh("cat $HOME/.ssh/id_ed25519 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"read credentials in the home", nil, sh("cat $HOME/.aws/credentials $HOME/.config/gh/hosts.yml 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"read a private key through a link in the home", nil, sh("cat $HOME/keylink 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"symlink read escape", nil, sh("ln -s " + canary + " l && cat l 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"symlink write escape", nil, sh("ln -s " + outside + "/via-link l2 && echo x > l2 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"hard link to an outside file", nil, sh("ln " + canary + " h 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"truncate a read-only file", []string{"--profile", "strict"}, sh("truncate -s0 ro 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"no_new_privs (setuid is void)", nil, sh("grep -q 'NoNewPrivs:\t1' /proc/self/status && echo BLOCKED || echo ESCAPED")},
		{"no capabilities", nil, sh("grep -q 'CapEff:\t0000000000000000' /proc/self/status && grep -q 'CapBnd:\t0000000000000000' /proc/self/status && echo BLOCKED || echo ESCAPED")},
		{"mount", nil, sh("mkdir m; mount -t tmpfs none m 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"unshare", nil, sh("unshare -r true 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"nsenter", nil, sh("nsenter -t 1 -m true 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"ptrace the gateway", nil, py("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.ptrace(16, os.getppid(), 0, 0)\nprint('BLOCKED' if r == -1 else 'ESCAPED', ctypes.get_errno())")},
		{"process_vm_readv", nil, sysc(310, ", __import__('os').getppid(), 0, 0, 0, 0, 0")},
		{"bpf", nil, sysc(321, ", 0, 0, 0")},
		{"perf_event_open", nil, sysc(298, ", 0, 0, -1, -1, 0")},
		{"userfaultfd", nil, sysc(323, ", 0")},
		{"keyctl", nil, sysc(250, ", 0, 0")},
		{"io_uring_setup", nil, sysc(425, ", 1, 0")},
		{"kill -9 the gateway", nil, sh("kill -9 $PPID 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"signal another process", nil, sh("kill -0 1 2>/dev/null && echo ESCAPED || echo BLOCKED")},
		{"abstract unix socket outside", nil, tryPy("s = socket.socket(socket.AF_UNIX)\ns.connect('\\0" + abstract[1:] + "')")},
		{"pathname unix socket outside", nil, tryPy("s = socket.socket(socket.AF_UNIX)\ns.connect('" + sock + "')")},
		{"TCP to loopback", nil, tryPy(fmt.Sprintf("socket.create_connection(('127.0.0.1', %d), timeout=2)", port))},
		{"UDP to the host's loopback", nil, tryPy(fmt.Sprintf("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(2)\ns.sendto(b'x', ('127.0.0.1', %d))\ns.recvfrom(16)", udpPort))},
		{"UDP out", nil, tryPy("socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))")},
		{"TCP out around the proxy", nil, tryPy("socket.create_connection(('140.82.112.3', 443), timeout=2)")},
		{"raw socket", nil, tryPy("socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)")},
		{"AF_PACKET", nil, tryPy("socket.socket(socket.AF_PACKET, socket.SOCK_RAW)")},
		{"AF_VSOCK", nil, tryPy("socket.socket(40, socket.SOCK_STREAM)")},
		{"AF_ALG", nil, tryPy("socket.socket(38, socket.SOCK_SEQPACKET)")},
		{"TCP in the network profile, around the proxy", []string{"--profile", "network"}, tryPy(fmt.Sprintf("socket.create_connection(('127.0.0.1', %d), timeout=2)", port))},
		{"UDP in the network profile", []string{"--profile", "network"}, tryPy(fmt.Sprintf("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(2)\ns.sendto(b'x', ('127.0.0.1', %d))\ns.recvfrom(16)", udpPort))},
		{"the strict profile's TCP", []string{"--profile", "strict"}, tryPy(fmt.Sprintf("socket.create_connection(('127.0.0.1', %d), timeout=2)", port))},
		{"fork bomb", []string{"--profile", "tiny", "--policy-dir", tiny}, py("import os, time\nn = 0\ntry:\n    for i in range(1000):\n        if os.fork() == 0:\n            time.sleep(3); os._exit(0)\n        n += 1\n    print('ESCAPED', n)\nexcept OSError as e:\n    print('BLOCKED after', n, e)")},
		{"memory hog", []string{"--profile", "tiny", "--policy-dir", tiny}, tryPy("b = bytearray(1 << 30)")},
		// Four processes of 64 MiB each, every one under RLIMIT_DATA: the
		// session's memory cgroup (128 MiB) stops them together.
		{"memory hog across processes", []string{"--profile", "tiny", "--policy-dir", tiny}, py("import os\npids = []\nfor i in range(4):\n    p = os.fork()\n    if p == 0:\n        b = bytearray(64 << 20)\n        for j in range(0, len(b), 4096): b[j] = 1\n        import time; time.sleep(2)\n        os._exit(0)\n    pids.append(p)\nok = sum(1 for p in pids if os.waitpid(p, 0)[1] == 0)\nprint('ESCAPED' if ok == 4 else 'BLOCKED', ok, 'of 4 lived')")},
		{"disk fill", []string{"--profile", "tiny", "--policy-dir", tiny}, sh("head -c 4000000 /dev/zero > big 2>/dev/null; [ $(stat -c %s big) -le 1048576 ] && echo BLOCKED || echo ESCAPED")},
		{"gateway environment", nil, sh("env | grep -q '^TERMGATE_TEST_LEAK=' && echo ESCAPED || echo BLOCKED")},
		{"inherited descriptors", nil, sh("ls /proc/self/fd | awk '$1 > 3' | grep -q . && echo ESCAPED || echo BLOCKED")},
	}
	t.Setenv("TERMGATE_TEST_LEAK", "gateway-only")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "ro"), []byte("keep me"), 0o644)
			// The kernel's sandbox alone: the exec gate would refuse some
			// attempts before they ran (python code that imports ctypes
			// is asked about), and the sandbox would go untested.
			out, code := sandboxRun(t, dir, append([]string{"--exec-gate", "off"}, c.extra...), c.argv...)
			if strings.Contains(out, "ESCAPED") || !strings.Contains(out, "BLOCKED") {
				t.Fatalf("exit %d:\n%s", code, out)
			}
		})
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "secret-canary" {
		t.Fatal("the canary was touched")
	}
}

// TestSandboxStillUsable: the default profile keeps a terminal usable —
// job control, ctrl+c, python, git in the project, vim (TestVimScreenAndQuit).
func TestSandboxStillUsable(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := startServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	info := s.ok("session_info", map[string]any{"session_id": id})
	if !strings.HasPrefix(str(info, "sandbox"), "enforced: profile default, landlock ABI 6, seccomp, pids cgroup") {
		t.Fatalf("sandbox status: %q", str(info, "sandbox"))
	}
	r := s.send(id, "git init -q . && git -c user.email=a@b -c user.name=t commit -q --allow-empty -m one && git log --oneline | wc -l")
	wantOutput(t, r, "1")
	s.send(id, "sleep 300 &")
	wantOutput(t, s.send(id, "jobs | wc -l"), "1")
	s.ok("session_send", map[string]any{"session_id": id, "text": "fg", "timeout_ms": 500})
	r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}})
	if r["complete"] != true {
		t.Fatalf("ctrl+c did not end fg'd sleep: %v", r)
	}
	wantOutput(t, s.send(id, "python3 -c 'print(6*7)'"), "42")
	// TIOCSTI on the session's own controlling terminal.
	script := "import fcntl, termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('ESCAPED')\nexcept OSError as e:\n    print('BLOCKED', e.errno)\n"
	if err := os.WriteFile(filepath.Join(dir, "tiocsti.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r = s.send(id, "python3 tiocsti.py")
	if !strings.Contains(str(r, "output"), "BLOCKED") {
		t.Fatalf("TIOCSTI: %v", r)
	}
	// A process that leaves the session with setsid is still in the
	// session's cgroup, and goes with it.
	mk := marker()
	s.send(id, "setsid sleep "+mk+" > /dev/null 2>&1 < /dev/null &")
	eventually(t, 5*time.Second, "the setsid marker to start", func() bool { return len(processesWith(mk)) > 0 })
	s.ok("session_close", map[string]any{"session_id": id})
	eventually(t, 10*time.Second, "the setsid marker to be gone", func() bool { return len(processesWith(mk)) == 0 })

	outside := t.TempDir()
	ex := s.ok("exec", map[string]any{"command": "touch " + outside + "/pwn 2>/dev/null && echo ESCAPED || echo BLOCKED", "cwd": dir})
	if !strings.Contains(str(ex, "output"), "BLOCKED") || !strings.HasPrefix(str(ex, "sandbox"), "enforced") {
		t.Fatalf("exec: %v", ex)
	}
}

// BenchmarkSandboxedStart: session start to first prompt of bash --norc,
// confined and unconfined, two servers side by side.
func BenchmarkSandboxedStart(b *testing.B) {
	off := startServer(b, "--sandbox", "off", "--max-sessions", "4096")
	on := startServer(b, "--max-sessions", "4096")
	dir := b.TempDir()
	for _, argv := range [][]string{
		// The measure: bash's own prompt, recognised as a shell's.
		{"bash", "--norc"},
		// What an agent usually starts: bash with termgate's generated rc
		// (HOME is empty, so no user rc), its prompt marked by OSC 133.
		{"bash"},
	} {
		b.Run(strings.Join(argv, "_"), func(b *testing.B) {
			start := func(s *server) time.Duration {
				t0 := time.Now()
				out := s.ok("session_start", map[string]any{"argv": argv, "cwd": dir})
				d := time.Since(t0)
				if str(out, "completion") != "prompt" {
					b.Fatalf("start did not end on a prompt: %v", out)
				}
				s.ok("session_close", map[string]any{"session_id": str(out, "session_id")})
				return d
			}
			var dOff, dOn []time.Duration
			b.ResetTimer()
			for range b.N {
				dOff = append(dOff, start(off))
				dOn = append(dOn, start(on))
			}
			b.StopTimer()
			reportPair(b, dOff, dOn, "unconfined", "confined")
		})
	}
}

func reportPair(b *testing.B, a, c []time.Duration, an, cn string) {
	med := func(d []time.Duration) float64 {
		d = append([]time.Duration(nil), d...)
		for i := range d {
			for j := i + 1; j < len(d); j++ {
				if d[j] < d[i] {
					d[i], d[j] = d[j], d[i]
				}
			}
		}
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(med(a), an+"-median-ms")
	b.ReportMetric(med(c), cn+"-median-ms")
	b.ReportMetric(0, "ns/op")
}

// TestSessionUser: --session-user runs the program as that user, with no
// capabilities.
func TestSessionUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user")
	}
	if _, err := exec.Command("id", "nobody").Output(); err != nil {
		t.Skip("no user nobody")
	}
	out, code := sandboxRun(t, t.TempDir(), []string{"--session-user", "nobody"}, "sh", "-c", "id -u; grep -c 'Cap...:\t0000000000000000' /proc/self/status")
	if code != 0 || out != "65534\n5\n" {
		t.Fatalf("exit %d: %q", code, out)
	}
}
