package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// Rule finds one kind of secret.
type Rule struct {
	ID string
	// Regex finds the secret; SecretGroup names the capture group that is
	// the secret itself (0: the whole match).
	Regex       *regexp.Regexp
	SecretGroup int
	// Keywords: the regex runs only around a line's case-folded keyword
	// hit. A rule without keywords runs on every line.
	Keywords []string
	// Entropy: a secret whose Shannon entropy is not above this is no
	// secret (0: no check).
	Entropy float64

	allow []*gitleaks.Allowlist
	pre   precheck
}

// precheck is a cheap necessary condition on a keyword hit, read off a
// rule's regex, so that the regex runs only where it could match:
//   - opWithin > 0: one of ops follows the keyword within opWithin bytes
//     (an assignment: key=, token:);
//   - upper: the keyword is written in capitals (an environment name);
//   - runAfter > 0: at least that many letters or digits follow it.
//
// A precheck must never reject a hit the regex would match; the corpus
// tests hold every rule with one to its secrets.
type precheck struct {
	ops      string
	opWithin int
	minValue int // with ops: a value of at least this many token bytes follows the operator
	upper    bool
	runAfter int
	// words: the identifier around the keyword ([A-Za-z0-9_-]), lower-cased,
	// ends with one of these.
	words []string
}

// prechecks are the hot rules' conditions, by rule id: the rules whose
// keywords are common words (key, token, secret, ey).
var prechecks = map[string]precheck{
	"generic-api-key": {ops: "=>:|?,", opWithin: 28, minValue: 10},
	"password-assignment": {ops: "=:", opWithin: 8, minValue: 3, words: []string{
		"password", "passwd", "passphrase", "pwd", "secret", "apikey", "api_key", "api-key", "accesskey", "access_key",
		"access-key", "authtoken", "auth_token", "auth-token", "accesstoken", "access_token", "access-token",
		"clientsecret", "client_secret", "client-secret", "token"}},
	"env-secret":            {ops: "=", opWithin: 48, upper: true},
	"aws-secret-access-key": {ops: "=:", opWithin: 24, minValue: 40},
	"jwt":                   {runAfter: 17},
}

func identByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

func (p precheck) ok(text []byte, kwStart, kwEnd int) bool {
	if len(p.words) > 0 {
		i, j := kwStart, kwEnd
		for i > 0 && kwStart-i < 64 && identByte(text[i-1]) {
			i--
		}
		for j < len(text) && j-kwEnd < 64 && identByte(text[j]) {
			j++
		}
		var buf [128]byte
		ident := buf[:0]
		for _, c := range text[i:j] {
			ident = append(ident, lower(c))
		}
		found := false
		for _, w := range p.words {
			if bytes.HasSuffix(ident, []byte(w)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if p.upper && !('A' <= text[kwStart] && text[kwStart] <= 'Z') {
		return false
	}
	if p.runAfter > 0 {
		if kwEnd+p.runAfter > len(text) {
			return false
		}
		for _, c := range text[kwEnd : kwEnd+p.runAfter] {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				return false
			}
		}
	}
	if p.opWithin > 0 {
		end := min(len(text), kwEnd+p.opWithin)
		op := -1
		for i := kwEnd; i < end && text[i] != '\n'; i++ {
			if strings.IndexByte(p.ops, text[i]) >= 0 {
				op = i
				break
			}
		}
		if op < 0 {
			return false
		}
		if p.minValue > 0 {
			// Past the operator (and any more operator, quote or blank
			// bytes), a run of value bytes long enough to be a secret.
			i := op
			for i < len(text) && i < op+8 && strings.IndexByte("=>:|?,`'\" \t", text[i]) >= 0 {
				i++
			}
			n := 0
			for i < len(text) && n < p.minValue && valueByte(text[i]) {
				i, n = i+1, n+1
			}
			if n < p.minValue {
				return false
			}
		}
	}
	return true
}

// Spec is a rule as operators write it in the policy bundle
// (data.termgate.redaction.rules), as JSON.
type Spec struct {
	ID          string   `json:"id"`
	Regex       string   `json:"regex"`
	SecretGroup int      `json:"secret_group"`
	Keywords    []string `json:"keywords"`
	Entropy     float64  `json:"entropy"`
}

// Compile checks a spec and makes it a rule.
func (s Spec) Compile() (Rule, error) {
	if s.ID == "" || strings.ContainsAny(s.ID, "[]: \n") {
		return Rule{}, fmt.Errorf("redaction rule %q: an id of letters, digits and dashes is required", s.ID)
	}
	re, err := regexp.Compile(s.Regex)
	if err != nil {
		return Rule{}, fmt.Errorf("redaction rule %s: %w", s.ID, err)
	}
	if s.SecretGroup < 0 || s.SecretGroup > re.NumSubexp() {
		return Rule{}, fmt.Errorf("redaction rule %s: secret_group %d, but the regex has %d groups", s.ID, s.SecretGroup, re.NumSubexp())
	}
	kws := make([]string, len(s.Keywords))
	for i, k := range s.Keywords {
		if k == "" {
			return Rule{}, fmt.Errorf("redaction rule %s: an empty keyword", s.ID)
		}
		kws[i] = strings.ToLower(k)
	}
	return Rule{ID: s.ID, Regex: re, SecretGroup: s.SecretGroup, Keywords: kws, Entropy: s.Entropy}, nil
}

// GitleaksRules returns gitleaks' default rule set, taken as data from its
// config package: regexes, keywords, entropy thresholds, secret groups,
// and the rules' own allowlists (regexes and stop words; the path and
// commit parts of an allowlist mean nothing for terminal output). Rules
// bound to file paths (pkcs12-file, kubernetes-secret-yaml, …) are left
// out: terminal output has no path, and the terminal rules below cover
// what they would find there.
func GitleaksRules() ([]Rule, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(gitleaks.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("reading gitleaks rules: %w", err)
	}
	var vc gitleaks.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("reading gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("reading gitleaks rules: %w", err)
	}
	var rules []Rule
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		if r.Regex == nil || r.Path != nil {
			continue
		}
		rule := Rule{ID: r.RuleID, Regex: r.Regex, SecretGroup: r.SecretGroup, Keywords: r.Keywords, Entropy: r.Entropy, pre: prechecks[r.RuleID]}
		for _, a := range r.Allowlists {
			// An allowlist that needs a path or a commit to hold
			// cannot hold here; its other parts still can.
			if a.MatchCondition == gitleaks.AllowlistMatchAnd && (len(a.Paths) > 0 || len(a.Commits) > 0) {
				continue
			}
			rule.allow = append(rule.allow, a)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

// TerminalRules are the secrets of terminal output that gitleaks' rules
// miss or only catch with an entropy gate too high for them: passwords in
// URLs and assignments, HTTP authorization, environment dumps, AWS secret
// keys, service-account JSON. Private-key blocks and `kubectl get secret`
// data, which span lines, are found by the block scanner (blocks.go).
func TerminalRules() []Rule {
	specs := []Spec{
		{
			ID:          "url-password",
			Regex:       `\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/\s@'"]{1,128}:([^@\s/'"]{1,256})@`,
			SecretGroup: 1, Keywords: []string{"://"},
		},
		{
			ID:          "password-assignment",
			Regex:       `(?:\b|_)(?i:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|client[_-]?secret|token)["']?\s{0,3}(?::=|=|:)\s{0,3}["']?([^\s'",;]{3,256})`,
			SecretGroup: 1, Keywords: []string{"pass", "pwd", "secret", "key", "token"},
		},
		{
			ID:          "env-secret",
			Regex:       `\b[A-Z][A-Z0-9_]{0,64}(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH)[A-Z0-9_]{0,32}=['"]?([^\s'"]{1,512})`,
			SecretGroup: 1, Keywords: []string{"token", "secret", "pass", "pwd", "key", "credential", "auth"},
		},
		{
			ID:          "http-authorization",
			Regex:       `(?i)\b(?:proxy-)?authorization\s{0,3}:\s{0,3}(?:(?:bearer|basic|token|digest|negotiate|bot|sso-key|apikey)\s{1,3})?([^\s'"]{4,1000})`,
			SecretGroup: 1, Keywords: []string{"authorization"},
		},
		{
			ID:          "curl-user",
			Regex:       `(?:^|\s)(?:-u|--user|--proxy-user)\s{0,3}['"]?[^:\s'"]{0,128}:([^\s'"]{1,256})`,
			SecretGroup: 1, Keywords: []string{"-u", "--user"},
		},
		{
			ID:          "aws-secret-access-key",
			Regex:       `(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s{0,3}(?::|=|=>)\s{0,3}["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`,
			SecretGroup: 1, Keywords: []string{"secret"},
		},
		{
			ID:          "service-account-private-key",
			Regex:       `"private_key"\s{0,3}:\s{0,3}"(-----BEGIN[^"]{16,})"`,
			SecretGroup: 1, Keywords: []string{"private_key"},
		},
		{
			ID:          "service-account-key-id",
			Regex:       `"private_key_id"\s{0,3}:\s{0,3}"([0-9a-fA-F]{32,64})"`,
			SecretGroup: 1, Keywords: []string{"private_key_id"},
		},
	}
	rules := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := s.Compile()
		if err != nil {
			panic(err) // the table above is fixed; TestTerminalRulesCompile keeps it so
		}
		r.pre = prechecks[r.ID]
		rules = append(rules, r)
	}
	return rules
}

// valueByte: a byte a secret value may hold (anything but blanks, quotes
// and separators).
func valueByte(c byte) bool {
	return c > ' ' && c != '"' && c != '\'' && c != '`' && c != ',' && c != ';' && c != 0x7f
}
