package redact

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBoundaries: only the credential is masked; what is around it, up to
// the byte after it, stays as it was (the audit log keeps the command
// that ran).
func TestBoundaries(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(21, 22))
	tok := "ghp_" + rnd(r, alnum, 36)
	bearer := rnd(r, alnum, 40)
	j1, j2 := jwt(r), jwt(r)
	for _, c := range []struct{ in, want string }{
		{`{"token": "` + tok + `"}`, `{"token": "@"}`},
		{`export T=` + tok + `; echo set`, `export T=@; echo set`},
		{`curl -H "Authorization: Bearer ` + bearer + `" x`, `curl -H "Authorization: Bearer @" x`},
		{`curl -H 'Authorization: Bearer ` + bearer + `' https://api.internal/v1`, `curl -H 'Authorization: Bearer @' https://api.internal/v1`},
		{`["` + j1 + `", ` + j2 + `]`, `["@", @]`},
		{`f(` + j1 + `)`, `f(@)`},
		{`{"jwt": "` + j1 + `", "n": 1}`, `{"jwt": "@", "n": 1}`},
		{j1 + `,` + j2, `@,@`},
		{`export TOKEN=` + tok + `; echo set`, `export TOKEN=@; echo set`},
		{`export DB_PASSWORD=` + bearer + `&& make`, `export DB_PASSWORD=@&& make`},
		{`{"config.ini": "API_TOKEN=` + bearer + `\nDEBUG=1"}`, `{"config.ini": "API_TOKEN=@\nDEBUG=1"}`},
	} {
		got := placeholderRE.ReplaceAllString(e.Redact(c.in), "@")
		if got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestGitleaksSamplesKeepTheirEdges: in gitleaks' own true positives, the
// byte after each secret is still there after the placeholder.
func TestGitleaksSamplesKeepTheirEdges(t *testing.T) {
	samples := gitleaksSamples(t)
	e := testEngine(t)
	bad := 0
	for _, s := range samples {
		if s.Paths {
			continue
		}
		for _, c := range s.TPs {
			out := e.Redact(c.Text)
			for _, sec := range c.Secrets {
				i := strings.Index(c.Text, sec)
				if i < 0 || i+len(sec) >= len(c.Text) || strings.Count(c.Text, sec) > 1 {
					continue
				}
				after := c.Text[i+len(sec):]
				if !placeholderFollowedBy(out, after) {
					bad++
					if bad <= 5 {
						t.Errorf("%s: %q -> %q: lost what follows the secret", s.Rule, c.Text, out)
					}
				}
			}
		}
	}
}

// placeholderFollowedBy tells whether a placeholder in out is followed by
// the rest of the text as it was (other secrets in it masked too).
func placeholderFollowedBy(out, after string) bool {
	for _, m := range placeholderRE.FindAllStringIndex(out, -1) {
		rest := out[m[1]:]
		if strings.HasPrefix(rest, after) || strings.HasPrefix(after, rest) && rest != "" {
			return true
		}
		// What follows may hold another secret, masked.
		if n := min(len(after), 1); n > 0 && strings.HasPrefix(rest, after[:n]) {
			return true
		}
	}
	return false
}

// TestFormats: the formats issue 14 found missed in terminal output.
func TestFormats(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(31, 32))
	stripe := "sk_live_" + rnd(r, alnum, 24)
	azure := base64.StdEncoding.EncodeToString([]byte(rnd(r, alnum, 64)))
	tg := rnd(r, digits, 10) + ":AA" + rnd(r, alnum+"_-", 33)
	redis := rnd(r, alnum, 18)
	nuget := rnd(r, alnum, 14)
	token := rnd(r, lowerAZ+digits, 32)
	generic := rnd(r, alnum, 40)
	for _, c := range []struct{ name, text, secret string }{
		{"curl -u key:", "curl https://api.stripe.com/v1/charges -u " + stripe + ":", stripe},
		{"azure storage", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + azure + ";EndpointSuffix=core.windows.net", azure},
		{"azure service bus", "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + azure, azure},
		{"telegram url", "curl https://api.telegram.org/bot" + tg + "/getMe", tg},
		{"redis empty user", "redis://:" + redis + "@cache.internal:6379/0", redis},
		{"nuget xml", `<add key="ClearTextPassword" value="` + nuget + `" />`, nuget},
		{"xml next line", "<adafruitToken>\n    " + token + "\n</adafruitToken>", token},
		{"camel case", `genericToken = "` + generic + `"`, generic},
		{"go short", `apiSecret := "` + generic + `"`, generic},
		{"php arrow", `'client_secret' => '` + generic + `',`, generic},
		{"java", `private static final String accessToken = "` + generic + `";`, generic},
		{"c#", `string authKey = "` + generic + `";`, generic},
	} {
		if out := e.Redact(c.text); strings.Contains(out, c.secret) || !strings.Contains(out, "[REDACTED:") {
			t.Errorf("%s: %q", c.name, out)
		}
	}
}

// TestNotSecrets: placeholders, template expressions and ordinary
// terminal output are left alone.
func TestNotSecrets(t *testing.T) {
	e := testEngine(t)
	for _, text := range []string{
		`API_KEY="xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`,
		`API_KEY="XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"`,
		`export GITHUB_TOKEN=${GITHUB_TOKEN}`,
		`export GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}`,
		`export DB_PASSWORD=$(cat /run/secrets/db)`,
		"export DB_PASSWORD=`pass show db`",
		`DB_PASSWORD=$DB_PASSWORD`,
		`password: {Placeholder}`,
		`password = "{{ .Values.password }}"`,
		`Authorization: Bearer <your-token>`,
		`Authorization: Bearer $TOKEN`,
		`Authorization: Basic ...`,
		`curl -u "${user}:${pass}" https://example.com`,
		`curl -u <user:password> https://test.com/endpoint`,
		`curl --user neo4j:[PASSWORD] http://localhost:7474/`,
		`postgres://user:password@localhost/db`,
		`lrwxrwxrwx 1 root root   17 Mar  2 10:01 libglapi.so.0 -> libglapi.so.0.0.0`,
		`lrwxrwxrwx 1 root root   22 Mar  2 10:01 libvulkan_api_key.so -> libvulkan_api_key.so.1.3.2`,
		`GOAUTH='netrc'`,
		`GOAUTH=netrc`,
		`access_token=ACCESS_TOKEN`,
		`password=********`,
		`password: [REDACTED:password-assignment:1a2b]`,
		`PuttyPassword=0`,
	} {
		if out := e.Redact(text); out != text {
			t.Errorf("%q -> %q", text, out)
		}
	}
}

// TestRedactIsIdempotent: redacting redacted text changes nothing (the
// audit path redacts what views already redacted).
func TestRedactIsIdempotent(t *testing.T) {
	e := testEngine(t)
	for _, p := range corpus(41) {
		once := e.Redact(p.text)
		if twice := e.Redact(once); twice != once {
			t.Errorf("%s:\n once %q\ntwice %q", p.name, once, twice)
		}
	}
}
