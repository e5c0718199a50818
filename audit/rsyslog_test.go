package audit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rsyslogd runs the real collector, rsyslog, on a loopback port with a
// configuration of its own, writing each message it parsed as
// TIMESTAMP<tab>HOSTNAME<tab>APP-NAME<tab>MSGID<tab>MSG.
type rsyslogd struct {
	*daemon
	conf           string
	port           string
	global, module string
}

func startRsyslog(t *testing.T, useTLS bool, cert, key string) receiver {
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		t.Skip("rsyslogd is not installed (Debian package rsyslog; scripts/dev deps installs it): the test against a real collector is skipped")
	}
	if useTLS {
		if m, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_ossl.so"); len(m) == 0 {
			t.Skip("rsyslog's TLS driver is not installed (Debian package rsyslog-openssl; scripts/dev deps installs it): the TLS test against rsyslog is skipped")
		}
	}
	r := &rsyslogd{daemon: newDaemon(t, "rsyslogd", bin, 5)}
	r.conf = filepath.Join(r.dir, "rsyslog.conf")
	r.args = []string{"-n", "-iNONE", "-f", r.conf}
	r.global = fmt.Sprintf(`workDirectory=%q`, r.dir)
	r.module = `module(load="imtcp")`
	if useTLS {
		r.global += fmt.Sprintf(` defaultNetstreamDriverCAFile=%q defaultNetstreamDriverCertFile=%q defaultNetstreamDriverKeyFile=%q`, cert, cert, key)
		r.module = `module(load="imtcp" streamDriver.name="ossl" streamDriver.mode="1" streamDriver.authMode="anon")`
	}
	r.listen("0")
	return r
}

func (r *rsyslogd) target(useTLS bool) string {
	return map[bool]string{false: "tcp://", true: "tls://"}[useTLS] + "127.0.0.1:" + r.port
}

func (r *rsyslogd) restart() { r.listen(r.port) }

// listen writes the configuration for a port (0: any) and starts rsyslogd.
func (r *rsyslogd) listen(port string) {
	conf := fmt.Sprintf(`global(%s)
%s
input(type="imtcp" port=%q address="127.0.0.1" listenPortFileName=%q)
template(name="fields" type="list") {
  property(name="timereported" dateFormat="rfc3339")
  constant(value="\t")
  property(name="hostname")
  constant(value="\t")
  property(name="app-name")
  constant(value="\t")
  property(name="msgid")
  constant(value="\t")
  property(name="msg")
  constant(value="\n")
}
action(type="omfile" file=%q template="fields")
`, r.global, r.module, port, filepath.Join(r.dir, "port"), r.out)
	if err := os.WriteFile(r.conf, []byte(conf), 0o600); err != nil {
		r.t.Fatal(err)
	}
	os.Remove(filepath.Join(r.dir, "port"))
	// Ready when it has written the port it listens on (it does so for
	// port 0), or, on a port given, when the port takes a connection.
	err := r.start(func() bool {
		if port == "0" {
			b, err := os.ReadFile(filepath.Join(r.dir, "port"))
			r.port = strings.TrimSpace(string(b))
			return err == nil && r.port != ""
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if err != nil {
		r.t.Fatalf("%v; its log:\n%s", err, r.log())
	}
}

func TestRsyslogReceivesEveryRecord(t *testing.T) {
	testReceivesEveryRecord(t, startRsyslog, func(Record, []string) error { return nil })
}
