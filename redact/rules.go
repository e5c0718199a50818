package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// Rule finds one kind of secret.
type Rule struct {
	ID string
	// Regex finds the secret. SecretGroup names the capture group that is
	// the secret itself; 0 means what it means to gitleaks: the first
	// capture group that matched something, or the whole match when the
	// regex has no groups.
	Regex       *regexp.Regexp
	SecretGroup int
	// Keywords: the regex runs only in a window around a case-folded
	// keyword hit (the keyword's line, and as many lines after it as the
	// regex can span). A rule without keywords runs on every text.
	Keywords []string
	// Entropy: a secret whose Shannon entropy is not above this is no
	// secret (0: no check).
	Entropy float64

	allow []*gitleaks.Allowlist
	pre   precheck
	// check, when set, has the last word on a match (the terminal rules:
	// placeholders and template expressions are not secrets).
	check func(m matchCtx) bool
	// trim, when set, returns how much of a matched secret is the
	// secret: a value read to the next blank may run into what follows
	// it (a URL's next parameter, a closing bracket).
	trim func(secret []byte) int
}

// rule is a Rule as an engine holds it: with the facts of its regex and
// its partial matcher, built on first use (most rules are never asked).
type rule struct {
	Rule
	allows []*allowList
	facts  regexFacts
	vmOnce sync.Once
	vm     *pvm
	// ident: the regex begins with gitleaks' identifier prefix,
	// [\w.-]{0,50}?, so a match that holds a keyword begins in the run of
	// name bytes before it; the regex is then run anchored there (once
	// per hit) rather than searched for in a window: a thread per
	// position of a window, in a program of hundreds of instructions, is
	// most of the cost of the hottest rule.
	ident      bool
	anchorOnce sync.Once
	anchored   *regexp.Regexp
}

// identPrefixes are the ways gitleaks' semi-generic regexes begin.
var identPrefixes = []string{`(?i)[\w.-]{0,50}?`, `[\w.-]{0,50}?`}

// anchoredRe returns the rule's regex anchored at its start.
func (r *rule) anchoredRe() *regexp.Regexp {
	r.anchorOnce.Do(func() {
		r.anchored = regexp.MustCompile(`^(?:` + r.Regex.String() + `)`)
	})
	return r.anchored
}

// literalThenRun reads a regex that begins with a literal, every keyword a
// suffix of it, then a class repeated at least n times: it returns n and
// the class, or 0, nil.
func literalThenRun(re *syntax.Regexp, keywords []string) (int, *[256]bool) {
	var seq []*syntax.Regexp
	var flat func(t *syntax.Regexp)
	flat = func(t *syntax.Regexp) {
		switch t.Op {
		case syntax.OpCapture:
			flat(t.Sub[0])
		case syntax.OpConcat:
			for _, s := range t.Sub {
				flat(s)
			}
		default:
			if !emptyWidth(t.Op) || len(seq) > 0 {
				seq = append(seq, t)
			}
		}
	}
	flat(re)
	if len(seq) < 2 || seq[0].Op != syntax.OpLiteral || len(keywords) == 0 {
		return 0, nil
	}
	lit := strings.ToLower(string(seq[0].Rune))
	for _, k := range keywords {
		if !strings.HasSuffix(lit, k) {
			return 0, nil
		}
	}
	rep := seq[1]
	n := 0
	switch rep.Op {
	case syntax.OpRepeat:
		n = rep.Min
	case syntax.OpPlus:
		n = 1
	}
	if n == 0 || len(rep.Sub) == 0 || rep.Sub[0].Op != syntax.OpCharClass {
		return 0, nil
	}
	var set [256]bool
	rs := rep.Sub[0].Rune
	for i := 0; i+1 < len(rs); i += 2 {
		for c := rs[i]; c <= rs[i+1] && c < 256; c++ {
			if c >= 0x80 {
				break
			}
			set[c] = true
		}
		if rs[i+1] >= 0x80 {
			for c := 0x80; c < 256; c++ {
				set[c] = true // a multi-byte rune's bytes: no judgement
			}
		}
	}
	return n, &set
}

// matchCtx is a match as a rule's check sees it: the text, the match and
// the secret within it.
type matchCtx struct {
	text                     []byte
	start, end, sStart, sEnd int
}

func (m matchCtx) secret() []byte { return m.text[m.sStart:m.sEnd] }

// partial returns the rule's partial matcher.
func (r *rule) partial() *pvm {
	r.vmOnce.Do(func() {
		re, err := syntax.Parse(r.Regex.String(), syntax.Perl)
		if err != nil {
			return
		}
		r.vm, _ = newPVM(re, r.SecretGroup)
	})
	return r.vm
}

// prepare reads the facts of the rule's regex.
func (r *rule) prepare() error {
	re, err := syntax.Parse(r.Regex.String(), syntax.Perl)
	if err != nil {
		return fmt.Errorf("redaction rule %s: %w", r.ID, err)
	}
	r.facts = analyze(re)
	for i := 0; i < len(r.pre.ops); i++ {
		r.pre.opSet[r.pre.ops[i]] = true
	}
	if r.pre.ops == "" && r.pre.runAfter == 0 && len(r.pre.words) == 0 {
		r.pre.runMin, r.pre.runSet = literalThenRun(re, r.Keywords)
	}
	for _, p := range identPrefixes {
		if strings.HasPrefix(r.Regex.String(), p) {
			r.ident = true
		}
	}
	return nil
}

// precheck is a cheap necessary condition on a keyword hit, read off a
// rule's regex, so that the regex runs only where it could match:
//   - opWithin > 0: one of ops follows the keyword within opWithin bytes
//     (an assignment: key=, token:), blanks and quotes aside;
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
	// semi: gitleaks' semi-generic shape: after the keyword, at most 20
	// bytes of [ \t\w.-], then at most 3 of [\s'"] (a newline among
	// them), then the operator.
	semi bool
	// opAfterName: the operator follows the name that holds the keyword,
	// with at most a quote and three blanks between.
	opAfterName bool
	// runName: the run after the keyword is of name bytes ([\w-]), not
	// only letters and digits.
	runName bool

	// Filled when a rule is prepared: ops as a table, and a condition
	// read off a regex that is a literal then a repeated class
	// (ghp_[0-9a-zA-Z]{36}): that many bytes of the class follow it.
	opSet  [256]bool
	runMin int
	runSet *[256]bool
}

// prechecks are the hot rules' conditions, by rule id: the rules whose
// keywords are common words (key, token, secret, ey).
var prechecks = map[string]precheck{
	"generic-api-key": {ops: "=>:|?,", semi: true, minValue: 10},
	"password-assignment": {ops: "=:", opWithin: 16, minValue: 3, opAfterName: true, words: []string{
		"password", "passwd", "passphrase", "pwd", "secret", "apikey", "api_key", "api-key", "accesskey", "access_key",
		"access-key", "authtoken", "auth_token", "auth-token", "accesstoken", "access_token", "access-token",
		"clientsecret", "client_secret", "client-secret", "token"}},
	"env-secret":            {ops: "=", opAfterName: true, upper: true},
	"aws-secret-access-key": {ops: "=:", opWithin: 24, minValue: 40},
	"jwt":                   {runAfter: 17},
	"vault-service-token":   {runAfter: 24, runName: true},
}

// Byte classes of the prechecks, as tables.
var (
	identTab       = byteTable(func(c byte) bool { return identByte(c) })
	semiName       = byteTable(func(c byte) bool { return identByte(c) || c == '.' || c == ' ' || c == '\t' })
	blankQuote     = byteTable(func(c byte) bool { return byteIn(" \t\r\n\v\f'\"", c) })
	beforeValueTab = byteTable(func(c byte) bool { return byteIn(beforeValue, c) })
	valueTab       = byteTable(valueByte)
)

func byteTable(in func(byte) bool) (t [256]bool) {
	for c := range 256 {
		t[c] = in(byte(c))
	}
	return t
}

// byteIn tells whether c is one of the bytes of set.
func byteIn(set string, c byte) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}

// beforeValue: what may stand between an operator and its value.
const beforeValue = "=>:|?,`'\" \t\r\n"

func identByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

func (p *precheck) ok(text []byte, kwStart, kwEnd int) bool {
	if p.runSet != nil {
		if kwEnd+p.runMin > len(text) {
			return false
		}
		for _, c := range text[kwEnd : kwEnd+p.runMin] {
			if !p.runSet[c] {
				return false
			}
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
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || p.runName && (c == '_' || c == '-')) {
				return false
			}
		}
	}
	if p.opAfterName {
		i := kwEnd
		for i < len(text) && i-kwEnd < 64 && identTab[text[i]] {
			i++
		}
		if i < len(text) && (text[i] == '"' || text[i] == '\'') {
			i++
		}
		for n := 0; n < 3 && i < len(text) && (text[i] == ' ' || text[i] == '\t'); n++ {
			i++
		}
		if i >= len(text) || !p.opSet[text[i]] {
			return false
		}
	}
	op := -1
	switch {
	case p.semi:
		i := kwEnd
		for i < len(text) && i-kwEnd < 20 && semiName[text[i]] {
			i++
		}
		for n := 0; n < 3 && i < len(text) && blankQuote[text[i]]; n++ {
			i++
		}
		if i >= len(text) || !p.opSet[text[i]] {
			return false
		}
		op = i
	case p.opWithin > 0:
		end := min(len(text), kwEnd+p.opWithin)
		for i := kwEnd; i < end && text[i] != '\n'; i++ {
			if p.opSet[text[i]] {
				op = i
				break
			}
		}
		if op < 0 {
			return false
		}
	}
	if op >= 0 {
		if p.minValue > 0 {
			// Past the operator (and any more operator, quote or blank
			// bytes), a run of value bytes long enough to be a secret.
			i := op
			for i < len(text) && i < op+12 && beforeValueTab[text[i]] {
				i++
			}
			n := 0
			for i < len(text) && n < p.minValue && valueTab[text[i]] {
				i, n = i+1, n+1
			}
			if n < p.minValue {
				return false
			}
		}
	}
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

// DefaultRules returns the rules an engine uses when Options.Rules is nil:
// gitleaks' rules, then the terminal rules.
func DefaultRules() ([]Rule, error) {
	gl, err := GitleaksRules()
	if err != nil {
		return nil, err
	}
	return append(gl, TerminalRules()...), nil
}

// GitleaksRules returns gitleaks' default rule set, taken as data from its
// config package: regexes, keywords, entropy thresholds, secret groups,
// the rules' own allowlists and the global one (regexes and stop words;
// the path and commit parts of an allowlist mean nothing for terminal
// output). Rules bound to file paths (pkcs12-file, kubernetes-secret-yaml,
// …) are left out: terminal output has no path, and the terminal rules
// below cover what they would find there.
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
	var global []*gitleaks.Allowlist
	for _, a := range cfg.Allowlists {
		if usable(a) {
			global = append(global, a)
		}
	}
	var rules []Rule
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		if r.Regex == nil || r.Path != nil {
			continue
		}
		rule := Rule{ID: r.RuleID, Regex: r.Regex, SecretGroup: r.SecretGroup, Keywords: r.Keywords, Entropy: r.Entropy, pre: prechecks[r.RuleID]}
		rule.allow = append(rule.allow, global...)
		for _, a := range r.Allowlists {
			if usable(a) {
				rule.allow = append(rule.allow, a)
			}
		}
		if check := gitleaksChecks[r.RuleID]; check != nil {
			rule.check = check
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

// usable: an allowlist that can hold for terminal output. One that needs
// a path or a commit to hold (AND) cannot; its other parts (OR) still can.
func usable(a *gitleaks.Allowlist) bool {
	if a.MatchCondition == gitleaks.AllowlistMatchAnd && (len(a.Paths) > 0 || len(a.Commits) > 0) {
		return false
	}
	return len(a.Regexes) > 0 || len(a.StopWords) > 0
}

// gitleaksChecks add what terminal output needs to a few of gitleaks'
// rules.
var gitleaksChecks = map[string]func(matchCtx) bool{
	// `ls -l` shows a symlink as "name -> target": the arrow is not an
	// assignment, whatever the name holds (libglapi.so.0 -> …).
	"generic-api-key": func(m matchCtx) bool {
		i := m.sStart
		for i > m.start && strings.IndexByte("`'\" \t=", m.text[i-1]) >= 0 {
			i--
		}
		if i-1 > m.start && m.text[i-1] == '>' && m.text[i-2] == '-' {
			return false
		}
		return !placeholder(m)
	},
}

// TerminalRules are the secrets of terminal output that gitleaks' rules
// miss or only catch with an entropy gate too high for them: passwords in
// URLs and assignments, HTTP authorization, environment dumps, AWS secret
// keys, service-account JSON, connection strings, tokens followed by a
// delimiter gitleaks' rules do not expect. Private-key blocks and `kubectl
// get secret` data, which span lines, are found by the block scanner
// (blocks.go). Placeholders and template expressions ($VAR, ${var},
// $(command), {Name}, <your-token>, xxxx…) are not secrets to these rules.
func TerminalRules() []Rule {
	specs := []struct {
		Spec
		check func(matchCtx) bool
		trim  func([]byte) int
	}{
		{Spec: Spec{
			ID:          "url-password",
			Regex:       `\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/\s@'"]*:([^@\s/'"]+)@`,
			SecretGroup: 1, Keywords: []string{"://"},
		}},
		{trim: valueEnd, Spec: Spec{
			ID:          "password-assignment",
			Regex:       `(?:\b|_)(?i:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|client[_-]?secret|token)["']?[ \t]{0,3}(?::=|=|:)[ \t]{0,3}["']?((?:[^\s'",;\x60\\]|\\[^nrt\s]){3,})`,
			SecretGroup: 1, Keywords: []string{"pass", "pwd", "secret", "key", "token"},
		}, check: keyNameCheck},
		{trim: valueEnd, Spec: Spec{
			ID:          "env-secret",
			Regex:       `\b[A-Z][A-Z0-9_]{0,64}(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH)[A-Z0-9_]{0,32}=['"]?((?:[^\s'";\x60\\]|\\[^nrt\s])+)`,
			SecretGroup: 1, Keywords: []string{"token", "secret", "pass", "pwd", "key", "credential", "auth"},
		}, check: envCheck},
		{check: authCheck, Spec: Spec{
			ID:          "http-authorization",
			Regex:       `(?i)\b(?:proxy-)?authorization[ \t]{0,3}:[ \t]{0,3}(?:(?:bearer|basic|token|digest|negotiate|bot|sso-key|apikey|api-token)[ \t]{1,3})?([^\s'"]{4,})`,
			SecretGroup: 1, Keywords: []string{"authorization"},
		}},
		{Spec: Spec{
			// -u user:password, and -u KEY: (an API key as the user,
			// an empty password: Stripe, Mailgun).
			ID:          "curl-user",
			Regex:       `(?:^|\s)(?:-u|--user|--proxy-user)(?:[ \t]{1,3}|=)?['"]?(?:[^:\s'"]*:([^\s'"]+)|([^:\s'"]{8,}):(?:['"\s]|$))`,
			SecretGroup: 0, Keywords: []string{"-u", "--user"},
		}},
		{Spec: Spec{
			ID:          "aws-secret-access-key",
			Regex:       `(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?[ \t]{0,3}(?::|=|=>)[ \t]{0,3}["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`,
			SecretGroup: 1, Keywords: []string{"secret"},
		}},
		{Spec: Spec{
			ID:          "service-account-private-key",
			Regex:       `"private_key"[ \t]{0,3}:[ \t]{0,3}"(-----BEGIN[^"]{16,})"`,
			SecretGroup: 1, Keywords: []string{"private_key"},
		}},
		{Spec: Spec{
			ID:          "service-account-key-id",
			Regex:       `"private_key_id"[ \t]{0,3}:[ \t]{0,3}"([0-9a-fA-F]{32,64})"`,
			SecretGroup: 1, Keywords: []string{"private_key_id"},
		}},
		{Spec: Spec{
			// A JSON Web Token wherever it ends: in a JSON list, an
			// argument list, before a comma.
			ID:          "json-web-token",
			Regex:       `\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}={0,2})`,
			SecretGroup: 1, Keywords: []string{"eyj"},
		}},
		{Spec: Spec{
			// Azure storage and service bus connection strings.
			ID:          "azure-connection-key",
			Regex:       `(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)[ \t]{0,3}=[ \t]{0,3}([A-Za-z0-9+/%=&:._-]{20,}?)(?:;|["'\s]|$)`,
			SecretGroup: 1, Keywords: []string{"accountkey", "sharedaccesskey", "sharedaccesssignature"},
		}},
		{Spec: Spec{
			// Telegram bot tokens, bare or in API URLs (/bot<token>/).
			ID:          "telegram-bot-api-token",
			Regex:       `(?:\b|/bot)([0-9]{5,16}:A[A-Za-z0-9_-]{34})(?:[^A-Za-z0-9_-]|$)`,
			SecretGroup: 1, Keywords: []string{"telegram", "/bot"},
		}},
		{Spec: Spec{
			// Stripe keys followed by anything that ends them (curl -u
			// sk_live_…:, a comma, a bracket).
			ID:          "stripe-access-token",
			Regex:       `\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})(?:[^a-zA-Z0-9]|$)`,
			SecretGroup: 1, Keywords: []string{"sk_test", "sk_live", "sk_prod", "rk_test", "rk_live", "rk_prod"}, Entropy: 2,
		}},
		{Spec: Spec{
			// .NET and NuGet configuration: <add key="ClearTextPassword" value="…"/>.
			ID:          "xml-password",
			Regex:       `(?i)<add\s+key\s*=\s*"[\w.:-]*(?:password|passwd|pwd|secret|token|apikey|api_key|accesskey)[\w.:-]*"\s+value\s*=\s*"([^"\n]+)"`,
			SecretGroup: 1, Keywords: []string{"<add"},
		}},
	}
	rules := make([]Rule, 0, len(specs))
	for _, s := range specs {
		r, err := s.Compile()
		if err != nil {
			panic(err) // the table above is fixed; TestTerminalRulesCompile keeps it so
		}
		r.pre = prechecks[r.ID]
		r.check = s.check
		r.trim = s.trim
		if r.check == nil {
			r.check = func(m matchCtx) bool { return !placeholder(m) }
		}
		rules = append(rules, r)
	}
	return rules
}

// valueByte: a byte a secret value may hold (anything but blanks, quotes
// and separators).
func valueByte(c byte) bool {
	return c > ' ' && c != '"' && c != '\'' && c != '`' && c != ',' && c != ';' && c != 0x7f
}

// valueEnd returns where a value read to the next blank ends: before a
// shell's && or ||, before a URL's next &name=, before closing brackets
// the value did not open.
func valueEnd(v []byte) int {
	n := len(v)
	for i := 0; i+1 < n; i++ {
		switch c := v[i]; {
		case (c == '&' || c == '|') && v[i+1] == c:
			n = i
		case c == '&' && isLetter(v[i+1]) || c == '&' && v[i+1] == '_':
			j := i + 1
			for j < n && (identByte(v[j]) || v[j] == '.') {
				j++
			}
			if j < n && v[j] == '=' {
				n = i
			}
		}
	}
	for n > 0 {
		open := map[byte]byte{')': '(', ']': '[', '}': '{'}[v[n-1]]
		if open == 0 || bytes.IndexByte(v[:n-1], open) >= 0 {
			break
		}
		n--
	}
	return n
}

// keyName returns the identifier a match assigns to: the run of name bytes
// that ends at the match's operator.
func keyName(m matchCtx) []byte {
	i := m.sStart
	for i > m.start && strings.IndexByte("`'\" \t=:>", m.text[i-1]) >= 0 {
		i--
	}
	j := i
	for j > 0 && i-j < 64 && (identByte(m.text[j-1]) || m.text[j-1] == '.') {
		j--
	}
	return m.text[j:i]
}

// notSecretNames are names whose values are not secrets, though they hold
// a secret-sounding word (after gitleaks' generic-api-key allowlist).
var notSecretNames = regexp.MustCompile(`(?i)(?:^|[_.-])(?:csrf|xsrf)[_.-]?token$|public[_.-]?(?:key|token)$|(?:^|[_.-])(?:key|token|secret)[_.-]?(?:id|name|alias|size|length|file|path|type|url|uri|endpoint)$`)

// keyNameCheck: password-assignment's last word.
func keyNameCheck(m matchCtx) bool {
	name := keyName(m)
	if notSecretNames.Match(name) || bytes.EqualFold(name, m.secret()) {
		return false
	}
	return !placeholder(m)
}

// envCheck: env-secret's last word. A name whose only secret word is AUTH
// (GOAUTH, HTTP_AUTH) often holds a mode (netrc, basic, off): its value
// must look like a credential.
func envCheck(m matchCtx) bool {
	name := bytes.ToUpper(keyName(m))
	if !keyNameCheck(m) {
		return false
	}
	for _, w := range []string{"TOKEN", "SECRET", "PASS", "PWD", "KEY", "CREDENTIAL"} {
		if bytes.Contains(name, []byte(w)) {
			return true
		}
	}
	s := m.secret()
	if len(s) < 8 {
		return false
	}
	var lowerC, upperC, other bool
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z':
			lowerC = true
		case 'A' <= c && c <= 'Z':
			upperC = true
		default:
			other = true
		}
	}
	return other || lowerC && upperC
}

// authCheck: http-authorization's last word. A scheme alone (Basic …) is
// no credential.
func authCheck(m matchCtx) bool {
	switch strings.ToLower(string(m.secret())) {
	case "basic", "bearer", "token", "digest", "negotiate", "bot", "sso-key", "apikey", "api-token":
		return false
	}
	return !placeholder(m)
}

// placeholderWords are values that stand for a secret in documentation
// and templates.
var placeholderWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true, "token": true, "test": true,
	"changeme": true, "changeit": true, "example": true, "placeholder": true, "redacted": true, "none": true,
	"null": true, "nil": true, "true": true, "false": true, "empty": true, "undefined": true, "apikey": true,
	"api_key": true, "yourpassword": true, "your_password": true, "mypassword": true, "my_password": true,
	"username": true, "user": true, "foo": true, "bar": true, "foobar": true, "xxx": true, "dummy": true,
}

// placeholderMarks, inside a value, say it is not a real one.
var placeholderMarks = []string{"your_", "your-", "_here", "-here", "placeholder", "changeme", "replace_me", "replaceme",
	"example", "[redacted", "...", "…", "<redacted", "dummy"}

// placeholder reports whether a matched value is a placeholder or a
// template expression rather than a secret: $VAR, ${var}, $(command),
// `command`, {Name}, {{ .Values.x }}, <your-token>, [PASSWORD], %VAR%,
// %(name)s, xxxx…, ****, a value cut short with …, a value that repeats
// its name or is one (ACCESS_TOKEN), common stand-in words.
func placeholder(m matchCtx) bool {
	s := m.secret()
	if len(s) == 0 {
		return true
	}
	ls := bytes.ToLower(s)
	if placeholderWords[string(bytes.Trim(ls, "<>[]{}*:="))] {
		return true
	}
	for _, w := range placeholderMarks {
		if bytes.Contains(ls, []byte(w)) {
			return true
		}
	}
	switch s[0] {
	case '$':
		if len(s) == 1 {
			return true
		}
		switch c := s[1]; {
		case c == '{' || c == '(' || c == '$':
			return true
		case c >= '0' && c <= '9':
			return true
		case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
			// $NAME, the whole value a variable.
			i := 2
			for i < len(s) && (identByte(s[i]) && s[i] != '-') {
				i++
			}
			if i == len(s) {
				return true
			}
		}
	case '`', '{':
		return true
	case '<':
		if len(s) > 1 && (isLetter(s[1]) || s[1] == '%' || s[1] == '$') {
			return true
		}
	case '[':
		if bytes.HasSuffix(s, []byte("]")) || bytes.HasPrefix(ls, []byte("[redacted")) {
			return true
		}
	case '%':
		if len(s) > 1 && (s[1] == '(' || isLetter(s[1]) || s[1] == '{') {
			return true
		}
	case '*', '.':
		return true
	}
	// The end of an angle-bracket placeholder whose start is before the
	// value (-u <user:password>).
	if s[len(s)-1] == '>' {
		for i := m.sStart - 1; i >= 0 && i >= m.sStart-128 && m.text[i] != '\n'; i-- {
			if m.text[i] == '<' {
				return true
			}
			if m.text[i] == ' ' || m.text[i] == '>' {
				break
			}
		}
	}
	// ACCESS_TOKEN, YOUR_API_KEY: a name in capitals.
	if upperName(s) {
		return true
	}
	// xxxx…, 1111…, ****: runs of one character make up the value.
	return repetitive(s)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// upperName: a name of capital words joined by underscores.
func upperName(s []byte) bool {
	under := false
	for i, c := range s {
		switch {
		case 'A' <= c && c <= 'Z':
		case c == '_' && i > 0 && i < len(s)-1:
			under = true
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return under
}

// repetitive: one character over and over (yyy), repeated 8 times or
// more, or runs of 4 or more of one character covering half the value.
func repetitive(s []byte) bool {
	if repeated(s) {
		return true
	}
	inRuns, run := 0, 1
	for i := 1; i <= len(s); i++ {
		if i < len(s) && s[i] == s[i-1] {
			run++
			continue
		}
		if run >= 8 {
			return true
		}
		if run >= 4 {
			inRuns += run
		}
		run = 1
	}
	return 2*inRuns >= len(s)
}
