package audit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// syslogNG runs the real collector syslog-ng with the configuration
// docs/siem.md gives, taken from the document itself: its listeners moved
// to loopback ports of the test's, its files into the test's directory.
// Its destination writes TIMESTAMP, HOSTNAME, APP-NAME, MSGID, the
// record's event.action as syslog-ng's JSON parser read it, and MSG.
type syslogNG struct {
	*daemon
	what     string // which syslog-ng, for messages
	conf     string
	tcp, tls string // ports
}

// findSyslogNG returns the syslog-ng to run: Debian's syslog-ng-core as
// scripts/dev deps unpacks it into the test cache (the package conflicts
// with rsyslog's, so it is not installed there), or an installed one.
func findSyslogNG(t *testing.T) (bin string, args, env []string, what string) {
	if cache, err := os.UserCacheDir(); err == nil {
		tree := filepath.Join(cache, "termgate-test", "syslog-ng")
		bin := filepath.Join(tree, "usr", "sbin", "syslog-ng")
		if _, err := os.Stat(bin); err == nil {
			version, _ := os.ReadFile(filepath.Join(tree, ".version"))
			what = fmt.Sprintf("syslog-ng-core (version %q) unpacked in %s by scripts/dev deps", strings.TrimSpace(string(version)), tree)
			mods, _ := filepath.Glob(filepath.Join(tree, "usr", "lib", "syslog-ng", "3.*"))
			if len(mods) != 1 {
				t.Fatalf("%s: no single module directory (%q): remove %s and run scripts/dev deps again", what, mods, tree)
			}
			// Its libraries are where the package puts them, not where
			// the binary's run path says.
			lib := filepath.Join(tree, "usr", "lib", "syslog-ng")
			if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
				lib += ":" + old
			}
			return bin, []string{"--module-path=" + mods[0]}, []string{"LD_LIBRARY_PATH=" + lib}, what
		}
	}
	for _, name := range []string{"syslog-ng", "/usr/sbin/syslog-ng"} {
		if bin, err := exec.LookPath(name); err == nil {
			return bin, nil, nil, "syslog-ng installed as " + bin
		}
	}
	t.Skip("syslog-ng is neither installed nor unpacked in the test cache (scripts/dev deps fetches Debian's syslog-ng-core there with apt-get download; without apt it cannot): the test against syslog-ng is skipped")
	return
}

// siemSyslogNGConf is the syslog-ng configuration in docs/siem.md.
func siemSyslogNGConf(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "docs", "siem.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "\n### syslog-ng (a collector for the syslog stream)\n"
	_, sec, ok := strings.Cut(string(b), heading)
	if !ok {
		t.Fatalf("docs/siem.md has no section %q", strings.TrimSpace(heading))
	}
	_, block, ok := strings.Cut(sec, "\n```\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatal("docs/siem.md's syslog-ng section has no configuration block")
	}
	return block + "\n"
}

func startSyslogNG(t *testing.T, _ bool, cert, key string) receiver {
	bin, args, env, what := findSyslogNG(t)
	s := &syslogNG{daemon: newDaemon(t, "syslog-ng", bin, 6), what: what}
	s.env = env
	s.conf = filepath.Join(s.dir, "syslog-ng.conf")
	// Foreground, errors on stderr, and every file of its own here.
	s.args = append(args, "-F", "-e", "--no-caps", "-f", s.conf,
		"-p", filepath.Join(s.dir, "syslog-ng.pid"), "-c", filepath.Join(s.dir, "syslog-ng.ctl"),
		"-R", filepath.Join(s.dir, "syslog-ng.persist"))
	doc := siemSyslogNGConf(t)
	// Ports free a moment ago can be taken before syslog-ng binds them:
	// then it exits, and it is started again on others.
	for try := 0; ; try++ {
		s.tls, s.tcp = freePort(t), freePort(t)
		conf := doc
		for _, r := range [][2]string{
			{"port(6514)", fmt.Sprintf(`ip("127.0.0.1") port(%s)`, s.tls)},
			{"port(601)", fmt.Sprintf(`ip("127.0.0.1") port(%s)`, s.tcp)},
			{`"/etc/syslog-ng/collector.pem"`, strconv.Quote(cert)},
			{`"/etc/syslog-ng/collector.key"`, strconv.Quote(key)},
			{`"/var/log/termgate/audit.log"`, strconv.Quote(s.out)},
		} {
			if n := strings.Count(conf, r[0]); n != 1 {
				t.Fatalf("docs/siem.md's syslog-ng configuration has %s %d times, not once: the test cannot place it on loopback", r[0], n)
			}
			conf = strings.Replace(conf, r[0], r[1], 1)
		}
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		err := s.listen()
		if err == nil {
			return s
		}
		if try == 3 || !strings.Contains(s.log(), "Address already in use") {
			t.Fatalf("%s does not run with docs/siem.md's configuration: %v; its log:\n%s\nthe configuration:\n%s", what, err, s.log(), conf)
		}
	}
}

// freePort is a loopback port nothing listened on a moment ago.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// listen starts syslog-ng; it is ready when both its ports take a
// connection.
func (s *syslogNG) listen() error {
	return s.start(func() bool {
		for _, p := range []string{s.tcp, s.tls} {
			c, err := net.Dial("tcp", "127.0.0.1:"+p)
			if err != nil {
				return false
			}
			c.Close()
		}
		return true
	})
}

func (s *syslogNG) target(useTLS bool) string {
	if useTLS {
		return "tls://127.0.0.1:" + s.tls
	}
	return "tcp://127.0.0.1:" + s.tcp
}

func (s *syslogNG) restart() {
	if err := s.listen(); err != nil {
		s.t.Fatalf("%s did not start again: %v; its log:\n%s", s.what, err, s.log())
	}
}

// TestSyslogNGReceivesEveryRecord: syslog-ng, configured as docs/siem.md
// says, parses every message's header and JSON body.
func TestSyslogNGReceivesEveryRecord(t *testing.T) {
	testReceivesEveryRecord(t, startSyslogNG, func(rec Record, f []string) error {
		// The record's event.action, as syslog-ng's JSON parser read it.
		if a, _ := rec.Get("event.action"); f[4] != a {
			return fmt.Errorf("syslog-ng's .json.event.action is %q, the record's %q", f[4], a)
		}
		return nil
	})
}
