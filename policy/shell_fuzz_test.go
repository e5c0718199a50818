package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// documents are policy input documents as a caller sends them (termgate
// policy eval --jsonl), null lists included.
var documents = []string{
	`{"action":"input","program":"bash","text":"> /etc/passwd"}`,
	`{"action":"input","program":"bash","shell":{"commands":[{"name":"mount","args":null}]}}`,
	`{"action":"input","shell":{"background":true,"recursive_functions":null,"commands":null}}`,
	`{"action":"start","start":{"argv":["sh","-c","> /dev/sda"],"cwd":"/","env":null}}`,
	`{"action":"input","program":"python3","text":"os.system('2>/dev/null')"}`,
	`{"action":"exec","text":"x=$(< /etc/hostname)","session":{"id":"s"},"client":{"name":"c"}}`,
	`{"shell":{"commands":[{"name":"","redirects":[{"op":">","target":"/etc/passwd"}]}]}}`,
	`{"shell":{"commands":[{"name":"rm","args":["-rf","/"],"flags":null,"operands":null}],"names":null}}`,
	`{"secret":true,"text":"x"}`,
}

// FuzzShellAnalysis: no line panics the shell analysis or makes the engine
// fail, whether typed, run with exec, started as a session or handed to a
// shell by REPL code; every command name and redirection of a line that
// parses, as syntax.Walk finds them, reaches the policy input. And an
// input that is a policy input document (as policy eval --jsonl reads
// them) is decided without a panic: decided, or denied with an error.
func FuzzShellAnalysis(f *testing.F) {
	for _, s := range redirectOnly {
		for _, l := range nested(s) {
			f.Add(l)
		}
	}
	for _, c := range corpus {
		f.Add(c.text)
	}
	for _, s := range []string{
		"bash <<< 'rm -rf ~'", "python3 <<EOF\nimport os; os.system('rm -rf /')\nEOF", "{ cat k; } >> ~/.ssh/authorized_keys",
		"echo x >& /etc/passwd", "export DOCKER_HOST=tcp://x", "$(( ))", "for i; do :; done", "${x[$(id)]}", "echo ${x/$(a)/$(b)}",
		"f() { f | f & }; f", "exec 3<> /dev/sda", "cat <<-'EOF' >> ~/.bashrc\n\tx\n\tEOF", `x\`, "sh -c 'rm${IFS}-rf${IFS}/'",
		"echo ＂ ; rm -rf ~ ＂", "{rm,-rf,~}", "$'\\x72m' -rf ~", "echo {1..99999999}", "tar cf x . --checkpoint-action=exec='rm -rf ~'",
		"GIT_PAGER='|x' git log", "sed -n '1e id' x", "awk 'BEGIN{system(\"id\")}'", "cd /; rm -rf usr", "find . -delete",
		"sudo -u", "screen -ls", "screen -X stuff 'rm -rf ~^M'", "screen -X exec", "tmux send-keys -H 72 6d 0a", "tmux send-keys -t s x BSpace C-u Up Enter", "tmux send -N", "cp -a rd rd2 && rm -rf rd2/r/usr", "ln pw pw2 && echo x > pw2", "tmux send-keys -t s rm Space -rf Enter", "hyperfine -P", "mv root r2 && rm -rf r2/etc", "cp -a -vt /tmp x && rm -rf /tmp/x/", "echo x > a/../../b", "cp -s /etc/passwd p && echo > p",
		`{"action":"input","program":"bash","text":"mv -t /tmp/q .. && rm -rf /tmp/q/../x/../../","cwd":"/"}`,
	} {
		f.Add(s)
	}
	for _, d := range documents {
		f.Add(d)
	}
	rc := reachCheck{e: defaultEngine(f)}
	f.Fuzz(func(t *testing.T, line string) {
		if err := rc.decideAll(line); err != nil {
			t.Fatal(err)
		}
		if err := rc.reaches(line); err != nil {
			t.Fatal(err)
		}
		var in Input
		if json.Unmarshal([]byte(line), &in) != nil {
			return
		}
		d, err := rc.e.Decide(context.Background(), in)
		if errors.Is(err, errPanic) {
			t.Fatalf("%s: %v", line, err)
		}
		if err != nil && d.Action != "deny" {
			t.Fatalf("%s: %+v with the error %v", line, d, err)
		}
	})
}

// FuzzWordDecoders: the decoders of text an agent controls (hosts in URLs
// and every spelling of an address, $'…' strings, sed and awk scripts,
// option values) never panic and stay bounded.
func FuzzWordDecoders(f *testing.F) {
	for _, s := range []string{
		"http://0xa9fea9fe/", "http://[::ffff:169.254.169.254]:80/x", "u@0251.0376.0251.0376", "[fd00:ec2::254", "http://", "::", "1.2.3.4.5",
		`\x72\x6d\u00e9\U0001F600\c`, `\1234\0\cz`, "1e rm -rf ~", "s/a/b/w /etc/x", "s", "y/", `BEGIN {system("id")}`, `"x" | getline`,
		"-sSo", "--checkpoint-action=exec=", "{1..9}{a,b}", "{", "}{,}",
	} {
		f.Add(s)
	}
	specs := []optSpec{parseOptSpec("-o"), parseOptSpec("--output"), parseOptSpec("-c:alias.*=!"), parseOptSpec("-P/")}
	f.Fuzz(func(t *testing.T, s string) {
		for _, h := range urlHosts(s) {
			canonicalHost(h)
		}
		canonicalHost(bareHost(s))
		if len(ansiC(s)) > 4*len(s)+4 {
			t.Fatalf("ansiC grew %q", s)
		}
		files, cmds, _ := sedEffects(s)
		if len(files)+len(cmds) > len(s) {
			t.Fatalf("sed %q: %d effects", s, len(files)+len(cmds))
		}
		awkCommands(s)
		optionValues(strings.Fields(s), specs)
		resolvePath("/w", s)
		resolvePath("~/p", s)
	})
}
