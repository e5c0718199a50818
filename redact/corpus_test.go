package redact

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every secret in these tests is generated here, at random: none is real.

const (
	upper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lowerAZ = "abcdefghijklmnopqrstuvwxyz"
	digits  = "0123456789"
	alnum   = upper + lowerAZ + digits
	b64     = alnum + "+/"
)

func rnd(r *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.IntN(len(set))]
	}
	return string(b)
}

// planted is a line of terminal output holding secrets.
type planted struct {
	name    string
	text    string   // what the program prints
	secrets []string // what must never come out
}

func pem(r *rand.Rand, kind string) (string, []string) {
	var lines []string
	for range 6 {
		lines = append(lines, rnd(r, b64, 64))
	}
	lines = append(lines, rnd(r, b64, 20)+"==")
	return "-----BEGIN " + kind + "-----\n" + strings.Join(lines, "\n") + "\n-----END " + kind + "-----\n", lines
}

func jwt(r *rand.Rand) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"sub":"%s"}`, rnd(r, alnum, 24)))) + "." +
		rnd(r, alnum+"-_", 43)
}

// corpus returns one planted line or block of every must-have type.
func corpus(seed uint64) []planted {
	r := rand.New(rand.NewPCG(seed, 7))
	var c []planted
	add := func(name, text string, secrets ...string) {
		c = append(c, planted{name, text, secrets})
	}
	s := "AKIA" + rnd(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	add("aws-access-key-id", "aws_access_key_id = "+s+"\n", s)
	s = rnd(r, b64, 40)
	add("aws-secret-access-key", "aws_secret_access_key = "+s+"\n", s)
	s = "ghp_" + rnd(r, alnum, 36)
	add("github-pat", "remote: token "+s+" accepted\n", s)
	s = "gho_" + rnd(r, alnum, 36)
	add("github-oauth", "GH_OAUTH="+s+"\n", s)
	s = "github_pat_" + rnd(r, alnum+"_", 82)
	add("github-fine-grained", "using "+s+"\n", s)
	for _, kind := range []string{"RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "PGP PRIVATE KEY BLOCK"} {
		text, body := pem(r, kind)
		add("pem "+kind, "$ cat id\n"+text+"$ ", body...)
	}
	s = jwt(r)
	add("jwt", "token: "+s+"\n", s)
	s = "xoxb-" + rnd(r, digits, 12) + "-" + rnd(r, digits, 12) + "-" + rnd(r, alnum, 24)
	add("slack-bot", "SLACK="+s+"\n", s)
	s = "https://hooks.slack.com/services/T" + rnd(r, upper+digits, 10) + "/B" + rnd(r, upper+digits, 10) + "/" + rnd(r, alnum, 24)
	add("slack-webhook", "posting to "+s+"\n", s)
	s = "sk_live_" + rnd(r, alnum, 24)
	add("stripe", "stripe key "+s+" loaded\n", s)
	key, body := pem(r, "PRIVATE KEY")
	keyID := rnd(r, "0123456789abcdef", 40)
	escaped := strings.ReplaceAll(key, "\n", `\n`)
	add("gcp-service-account", "{\n  \"type\": \"service_account\",\n  \"project_id\": \"demo\",\n  \"private_key_id\": \""+keyID+"\",\n  \"private_key\": \""+escaped+"\",\n  \"client_email\": \"x@demo.iam.gserviceaccount.com\"\n}\n",
		append([]string{keyID}, body...)...)
	s = "AIza" + rnd(r, alnum+"-_", 35)
	add("gcp-api-key", "key="+s+"\n", s)
	s = rnd(r, alnum, 14)
	add("postgres-url", "DATABASE_URL is postgres://app:"+s+"@db.internal:5432/app\n", s)
	s = rnd(r, alnum, 12)
	add("amqp-url", "connecting amqp://guest:"+s+"@rabbit/\n", s)
	s = "hunter" + rnd(r, digits, 2)
	add("password-assignment", "password="+s+"\n", s)
	s = rnd(r, lowerAZ, 9)
	add("password-yaml", "  password: "+s+"\n", s)
	s = rnd(r, alnum, 32)
	add("authorization-bearer", "> Authorization: Bearer "+s+"\n", s)
	s = base64.StdEncoding.EncodeToString([]byte("admin:" + rnd(r, alnum, 10)))
	add("authorization-basic", "authorization: Basic "+s+"\n", s)
	s = rnd(r, alnum, 10)
	add("curl-u", "$ curl -u admin:"+s+" https://api.internal/\n", s)
	s = "sk-" + rnd(r, alnum, 20) + "T3BlbkFJ" + rnd(r, alnum, 20)
	add("openai", "OPENAI="+s+"\n", s)
	s = "sk-ant-api03-" + rnd(r, alnum+"-_", 93) + "AA"
	add("anthropic", "export ANTHROPIC_API_KEY="+s+"\n", s)
	s = "hf_" + rnd(r, lowerAZ+upper, 34)
	add("huggingface", "hf token "+s+"\n", s)
	s = "npm_" + rnd(r, alnum, 36)
	add("npm", "//registry/:_authToken="+s+"\n", s)
	s = "glpat-" + rnd(r, alnum+"-_", 20)
	add("gitlab", "glab auth: "+s+"\n", s)
	s = rnd(r, alnum, 18)
	add("env-dump", "HOME=/root\nMY_SERVICE_TOKEN="+s+"\nPATH=/usr/bin\n", s)
	s = rnd(r, alnum, 16)
	add("env-password", "DB_PASSWORD="+s+"\n", s)
	p1 := base64.StdEncoding.EncodeToString([]byte(rnd(r, alnum, 12)))
	p2 := base64.StdEncoding.EncodeToString([]byte(rnd(r, alnum, 9)))
	add("kubectl-secret", "apiVersion: v1\ndata:\n  password: "+p1+"\n  username: "+p2+"\nkind: Secret\nmetadata:\n  name: db\n", p1, p2)
	// Formats and boundaries of issue 14.
	s = "sk_live_" + rnd(r, alnum, 24)
	add("stripe-curl-user", "$ curl -u "+s+": https://api.stripe.com/v1/charges\n", s)
	s = base64.StdEncoding.EncodeToString([]byte(rnd(r, alnum, 48)))
	add("azure-connection-string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="+s+";EndpointSuffix=core.windows.net\n", s)
	s = rnd(r, digits, 10) + ":AA" + rnd(r, alnum+"_-", 33)
	add("telegram-url", "POST https://api.telegram.org/bot"+s+"/sendMessage 200\n", s)
	s = rnd(r, alnum, 20)
	add("redis-empty-user", "redis-cli -u redis://:"+s+"@cache:6379/0\n", s)
	s = rnd(r, alnum, 16)
	add("xml-password", "    <add key=\"ClearTextPassword\" value=\""+s+"\" />\n", s)
	s = rnd(r, lowerAZ+digits, 32)
	add("xml-token-next-line", "<adafruitToken>\n    "+s+"\n</adafruitToken>\n", s)
	s = rnd(r, alnum, 32)
	add("generic-camel-case", "    genericToken := \""+s+"\"\n", s)
	s = jwt(r)
	add("jwt-in-list", "[\""+s+"\", "+jwt(r)+"]\nf("+s+")\n", s)
	s = "ghp_" + rnd(r, alnum, 36)
	add("json-token", "{\"token\": \""+s+"\"}\n", s)
	return c
}

// public are the parts of planted secrets anyone knows: a token's fixed
// prefix, a JWT's usual header. A window of a secret inside one of them
// is no leak.
var public = []string{"ghp_", "gho_", "github_pat_", "AKIA", "xoxb-", "https://hooks.slack.com/services/T", "sk_live_",
	"AIza", "sk-ant-api03-", "hf_", "npm_", "glpat-", "sk-", "T3BlbkFJ", "hunter", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOi"}

// leakWindow is the length of the pieces of a secret that must not come
// out: any 8 bytes of it in a row, in the output or in its text.
const leakWindow = 8

// leakedPiece returns a piece of one of the secrets that out shows, or "".
func leakedPiece(out string, secrets []string) string {
	plain := stripANSI(out)
	shown := make(map[uint64]bool, len(out)+len(plain))
	for _, t := range []string{out, plain} {
		for i := 0; i+leakWindow <= len(t); i++ {
			shown[binary.LittleEndian.Uint64([]byte(t[i:i+leakWindow]))] = true
		}
	}
	for _, s := range secrets {
		if len(s) < leakWindow {
			if strings.Contains(plain, s) {
				return s
			}
			continue
		}
	window:
		for i := 0; i+leakWindow <= len(s); i++ {
			w := s[i : i+leakWindow]
			if !shown[binary.LittleEndian.Uint64([]byte(w))] {
				continue
			}
			for _, p := range public {
				if j := strings.Index(s, p); j >= 0 && j <= i && i+leakWindow <= j+len(p) {
					continue window
				}
			}
			return w
		}
	}
	return ""
}

// wrappers dress a planted text as terminals show it.
var wrappers = []struct {
	name string
	f    func(text string, secrets []string) string
}{
	{"plain", func(t string, _ []string) string { return t }},
	{"sgr-wrapped", func(t string, _ []string) string { return "\x1b[1;32m" + t + "\x1b[0m" }},
	{"sgr-inside", func(t string, secrets []string) string {
		for _, s := range secrets {
			mid := len(s) / 2
			t = strings.Replace(t, s, s[:mid]+"\x1b[31m"+s[mid:]+"\x1b[39m", 1)
		}
		return t
	}},
	{"osc-title", func(t string, _ []string) string {
		first, rest, _ := strings.Cut(t, "\n")
		return "\x1b]0;" + first + "\x07" + t + "\x1b]8;;https://x/" + strings.ReplaceAll(first, " ", "%20") + "\x1b\\link\x1b]8;;\x1b\\\n" + rest[:0]
	}},
	{"crlf", func(t string, _ []string) string { return strings.ReplaceAll(t, "\n", "\r\n") }},
}

var ansiRE = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

func testEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := New(Options{Key: []byte("test key")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// sink collects what a stream emits.
type sink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (k *sink) emit(p []byte)  { k.mu.Lock(); k.b.Write(p); k.mu.Unlock() }
func (k *sink) String() string { k.mu.Lock(); defer k.mu.Unlock(); return k.b.String() }

func streamed(e *Engine, chunks ...string) string {
	var k sink
	s := e.NewStream(time.Hour, k.emit)
	for _, c := range chunks {
		s.Write([]byte(c))
	}
	s.Close()
	return k.String()
}

func leaks(out string, secrets []string) string { return leakedPiece(out, secrets) }

func TestOneShotFindsEveryType(t *testing.T) {
	e := testEngine(t)
	for _, p := range corpus(1) {
		out := e.Redact(p.text)
		if s := leaks(out, p.secrets); s != "" {
			t.Errorf("%s: secret survived: %q", p.name, out)
		}
		if !strings.Contains(out, "[REDACTED:") {
			t.Errorf("%s: no placeholder in %q", p.name, out)
		}
	}
}

// splitStep is how far apart the split points of a sweep are.
func splitStep() int {
	if raceEnabled || testing.Short() {
		return 5
	}
	return 1
}

// TestStreamEverySplit: every type × every wrapper × every two-chunk split
// point, and byte by byte: no secret byte run reaches the sink.
func TestStreamEverySplit(t *testing.T) {
	e := testEngine(t)
	for _, p := range corpus(2) {
		for _, w := range wrappers {
			text := w.f(p.text, p.secrets)
			if s := leaks(streamed(e, text), p.secrets); s != "" {
				t.Fatalf("%s/%s whole: leaked", p.name, w.name)
			}
			for i := 1; i < len(text); i += splitStep() {
				if s := leaks(streamed(e, text[:i], text[i:]), p.secrets); s != "" {
					t.Fatalf("%s/%s split at %d: leaked", p.name, w.name, i)
				}
			}
			bytewise := make([]string, len(text))
			for i := range text {
				bytewise[i] = text[i : i+1]
			}
			if s := leaks(streamed(e, bytewise...), p.secrets); s != "" {
				t.Fatalf("%s/%s byte by byte: leaked", p.name, w.name)
			}
		}
	}
}

// TestStreamKeepsTheRest: what is not secret comes through unchanged,
// escape sequences included, whatever the chunking.
func TestStreamKeepsTheRest(t *testing.T) {
	e := testEngine(t)
	text := "\x1b[1mbold\x1b[0m line one\r\n\x1b]0;title\x07two \x1b[31mred\x1b[39m\n€ wide 漢字 ok\n$ "
	for i := 0; i <= len(text); i++ {
		if got := streamed(e, text[:i], text[i:]); got != text {
			t.Fatalf("split %d: %q", i, got)
		}
	}
}

// TestStreamEqualsOneShotByLines: fed line by line, in any grouping, a
// stream masks exactly what one pass over the whole text masks. (Split
// inside a line, a match that begins in text already sent is masked from
// the split on: see Stream.)
func TestStreamEqualsOneShotByLines(t *testing.T) {
	e := testEngine(t)
	for _, p := range corpus(3) {
		want := e.Redact(p.text)
		for i := 0; i <= len(p.text); i++ {
			if i > 0 && p.text[i-1] != '\n' {
				continue
			}
			if got := streamed(e, p.text[:i], p.text[i:]); got != want {
				t.Fatalf("%s split %d:\n got %q\nwant %q", p.name, i, got, want)
			}
		}
	}
}

func TestPlaceholderCorrelates(t *testing.T) {
	e := testEngine(t)
	s := "ghp_" + rnd(rand.New(rand.NewPCG(9, 9)), alnum, 36)
	out := e.Redact("a " + s + "\nb " + s + "\n")
	re := regexp.MustCompile(`\[REDACTED:github-pat:[0-9a-f]{4}\]`)
	m := re.FindAllString(out, -1)
	if len(m) != 2 || m[0] != m[1] {
		t.Fatalf("placeholders %q in %q", m, out)
	}
	other, _ := New(Options{Key: []byte("another key")})
	if other.Placeholder("github-pat", []byte(s)) == m[0] {
		t.Fatal("the placeholder does not depend on the key")
	}
}

func TestKnownSecret(t *testing.T) {
	e := testEngine(t)
	if err := e.AddSecret("abc"); err == nil {
		t.Fatal("a 3-byte secret was accepted")
	}
	v := "plain-" + rnd(rand.New(rand.NewPCG(4, 4)), lowerAZ, 8)
	if err := e.AddSecret(v); err != nil {
		t.Fatal(err)
	}
	out := streamed(e, "echo: "+v[:5], v[5:]+" done\n")
	if strings.Contains(out, v) || !strings.Contains(out, "[REDACTED:known-secret:") {
		t.Fatalf("known secret: %q", out)
	}
}

// TestIdleFlush: an unfinished line goes out after the idle time, and a
// value after a pause is still caught with the line's context.
func TestIdleFlush(t *testing.T) {
	e := testEngine(t)
	var k sink
	s := e.NewStream(20*time.Millisecond, k.emit)
	defer s.Close()
	s.Write([]byte("Password: "))
	if got := k.String(); got != "Password: " {
		t.Fatalf("a line ending in a blank was held: %q", got)
	}
	s.Write([]byte("hunter22"))
	if got := k.String(); got != "Password: " {
		t.Fatalf("a trailing token went out at once: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(k.String(), "[REDACTED:") {
		if time.Now().After(deadline) {
			t.Fatalf("idle flush never came: %q", k.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if strings.Contains(k.String(), "hunter22") {
		t.Fatalf("leaked: %q", k.String())
	}
}

// TestHoldIsBounded: a stream never holds more than HoldCap.
func TestHoldIsBounded(t *testing.T) {
	e := testEngine(t)
	var n int
	var mu sync.Mutex
	s := e.NewStream(time.Hour, func(p []byte) { mu.Lock(); n += len(p); mu.Unlock() })
	chunk := []byte(strings.Repeat("x", 1000))
	for range 200 {
		s.Write(chunk)
	}
	mu.Lock()
	defer mu.Unlock()
	if held := 200*1000 - n; held > HoldCap {
		t.Fatalf("holding %d bytes", held)
	}
	s.Close()
}

func TestTerminalRulesCompile(t *testing.T) {
	if n := len(TerminalRules()); n < 8 {
		t.Fatalf("%d terminal rules", n)
	}
	gl, err := GitleaksRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(gl) < 200 {
		t.Fatalf("only %d gitleaks rules", len(gl))
	}
}
