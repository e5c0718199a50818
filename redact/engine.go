package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unsafe"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// Options configure an Engine.
type Options struct {
	// Rules replace the default set (gitleaks' rules and the terminal
	// rules); Extra rules are added to whichever set is used.
	Rules []Rule
	Extra []Rule
	// Key keys the HMAC in placeholders; nil draws a random one, so the
	// same secret correlates within one run of the gateway.
	Key []byte
	// Held bounds the secrets AddSecret takes (zero fields: 256 values,
	// 256 KiB in all, 16 KiB each).
	Held TaintLimits
}

// Engine finds secrets in text. It is safe for concurrent use.
type Engine struct {
	rules []*rule
	m     *matcher
	// kwRules: keyword id → the rules whose keyword it is; holdRules:
	// keyword id → the rules to ask when it is near the end of a stream
	// (their keywords and the literal prefixes of their matches). Block
	// keywords have neither.
	kwRules, holdRules [][]int32
	nBlock             int     // the first nBlock keyword ids are the block keywords
	always             []int32 // rules with no keyword: run on every text
	key                []byte
	// ctxLines is how many lines before the current one a stream keeps
	// as context: the most any rule's window spans.
	ctxLines int
	// reach is how far back from the end of a stream's text a match not
	// yet decided can begin.
	reach int
	known *Taint // secrets the gateway holds (AddSecret)
}

// Window of text around a keyword hit that a rule's regex looks at: from a
// little before the keyword, within its line, to the end of as many lines
// after it as the regex can span (at most maxWindowLines), and no further
// than the rule's longest match.
const (
	windowBefore   = 96
	windowAfter    = 4096
	maxWindowLines = 8
	// maxMerged bounds the windows of one rule merged into one run of its
	// regex: past it they are run apart (overlapping; the same match
	// found twice is one span), so that a regex never runs over a long
	// text (Go's regexp then leaves its backtracker for a slower machine).
	maxMerged = 1024
)

// New builds an engine.
func New(o Options) (*Engine, error) {
	rules := o.Rules
	if rules == nil {
		var err error
		if rules, err = DefaultRules(); err != nil {
			return nil, err
		}
	}
	rules = append(slices.Clip(rules), o.Extra...)
	held := o.Held
	if held.Held == 0 {
		held.Held = 256
	}
	if held.HeldBytes == 0 {
		held.HeldBytes = 256 << 10
	}
	if held.MaxValue == 0 {
		held.MaxValue = 16 << 10
	}
	e := &Engine{key: o.Key, known: NewTaint(held)}
	if e.key == nil {
		e.key = make([]byte, 32)
		if _, err := rand.Read(e.key); err != nil {
			return nil, fmt.Errorf("redaction key: %w", err)
		}
	}
	var keywords []string
	index := map[string]int32{}
	kwID := func(k string) int32 {
		id, ok := index[k]
		if !ok {
			id = int32(len(keywords))
			index[k] = id
			keywords = append(keywords, k)
			e.kwRules = append(e.kwRules, nil)
			e.holdRules = append(e.holdRules, nil)
		}
		return id
	}
	for _, b := range blockKeywords {
		kwID(string(bytes.ToLower(b)))
	}
	e.nBlock = len(keywords)
	lists := map[*gitleaks.Allowlist]*allowList{} // shared, like the global one
	for i, r := range rules {
		if r.Regex == nil {
			return nil, fmt.Errorf("redaction rule %s has no regex", r.ID)
		}
		st := &rule{Rule: r}
		if err := st.prepare(); err != nil {
			return nil, err
		}
		for _, a := range r.allow {
			l := lists[a]
			if l == nil {
				l = &allowList{a: a}
				lists[a] = l
			}
			st.allows = append(st.allows, l)
		}
		e.rules = append(e.rules, st)
		e.ctxLines = max(e.ctxLines, min(st.facts.maxNL, maxWindowLines))
		e.reach = max(e.reach, min(st.facts.maxLen, windowAfter))
		if len(r.Keywords) == 0 {
			e.always = append(e.always, int32(i))
			continue
		}
		for _, k := range r.Keywords {
			id := kwID(k)
			if !slices.Contains(e.kwRules[id], int32(i)) {
				e.kwRules[id] = append(e.kwRules[id], int32(i))
				e.holdRules[id] = append(e.holdRules[id], int32(i))
			}
		}
		for _, p := range st.facts.prefixes {
			if len(p) < 3 {
				continue // too common to hold on
			}
			id := kwID(p)
			if !slices.Contains(e.holdRules[id], int32(i)) {
				e.holdRules[id] = append(e.holdRules[id], int32(i))
			}
		}
	}
	e.reach += windowBefore
	e.m = newMatcher(keywords)
	return e, nil
}

// Rules returns the number of rules in force.
func (e *Engine) Rules() int { return len(e.rules) }

// AddSecret registers a value the gateway holds (a secret it will type):
// every piece of it of 8 or more bytes is masked wherever it appears, and a
// shorter value is masked whole. Values shorter than four bytes are
// refused (masking them would mask ordinary text), and so is a value that
// would go over the engine's limits (Options.Held). A secret that belongs
// to one session belongs in that session's Taint (Taint.Hold) instead.
func (e *Engine) AddSecret(value string) error {
	return e.known.Hold(value)
}

// Placeholder is what a secret found by rule is replaced with: the rule
// and 4 hex digits of a keyed HMAC of the secret, so that the same secret
// can be correlated without being revealed.
func (e *Engine) Placeholder(rule string, secret []byte) string {
	h := hmac.New(sha256.New, e.key)
	h.Write(secret)
	return "[REDACTED:" + rule + ":" + hex.EncodeToString(h.Sum(nil)[:2]) + "]"
}

// span is a secret's place in a text.
type span struct {
	start, end int
	rule       string
}

type candidate struct {
	rule       int32
	start, end int // window
}

// linesAfter returns how many lines after a keyword's line its rule's
// window spans: none, unless the regex can span lines and the keyword's
// line leaves its value to the next ones (it ends with an operator,
// blanks or quotes after it, or with a backslash: <xToken>⏎  SECRET,
// key =⏎ value, a command continued).
func (e *Engine) linesAfter(r *rule, text []byte, kwEnd int) int {
	if r.facts.maxNL == 0 {
		return 0
	}
	le := lineEnd(text, kwEnd, 0)
	rest := bytes.TrimRight(text[kwEnd:le], " \t\r`'\"")
	if len(rest) == 0 || strings.IndexByte("=:>,|\\({[", rest[len(rest)-1]) < 0 {
		return 0
	}
	return min(r.facts.maxNL, maxWindowLines)
}

// byteRank orders bytes by how often terminal text holds them (lower is
// rarer), roughly: letters and digits of words and numbers, blanks and
// common punctuation are common; capitals, rare letters and symbols are
// not.
var byteRank = func() (r [256]uint8) {
	for c := range 256 {
		r[c] = 10
	}
	for _, c := range []byte(" etaoinsrhldcumfpgwybv.,:/-_=\n0123456789") {
		r[c] = 250
	}
	for _, c := range []byte("ABCDEFGHILMNOPRSTU\"'()[]k") {
		r[c] = 120
	}
	for _, c := range []byte("JKQVWXYZjqxz") {
		r[c] = 40
	}
	return r
}()

// rarest returns the offset of v's rarest byte.
func rarest(v []byte) int {
	k := 0
	for i := range v {
		if byteRank[v[i]] < byteRank[v[k]] {
			k = i
		}
	}
	return k
}

// indexAt returns where v next occurs in text at or after from, or -1,
// looking for its byte at offset k first: the library's search looks for
// the first byte, often a common one.
func indexAt(text, v []byte, k, from int) int {
	for i := from + k; i < len(text); {
		j := bytes.IndexByte(text[i:], v[k])
		if j < 0 {
			return -1
		}
		at := i + j - k
		if at+len(v) <= len(text) && bytes.Equal(text[at:at+len(v)], v) {
			return at
		}
		i += j + 1
	}
	return -1
}

// identStart returns where the run of name bytes before a keyword begins,
// 50 at most, not before the line's start ls: where a match of a rule with
// gitleaks' identifier prefix that holds the keyword begins.
func identStart(text []byte, ls, kwStart int) int {
	ws := kwStart
	for ws > ls && kwStart-ws < 50 && nameByte(text[ws-1]) {
		ws--
	}
	return ws
}

// nameByte: a byte of gitleaks' identifier prefix, [\w.-].
func nameByte(c byte) bool { return identByte(c) || c == '.' }

// lineEnd returns the offset of the newline that ends the line holding i,
// after skipping n more lines, or len(text).
func lineEnd(text []byte, i, n int) int {
	for {
		j := bytes.IndexByte(text[i:], '\n')
		if j < 0 {
			return len(text)
		}
		if n == 0 {
			return i + j
		}
		i, n = i+j+1, n-1
	}
}

// find reports the secrets of text. text[:from] is context already seen:
// its lines before the one that holds from are not run through the block
// scanner again, whose state st carries multi-line blocks in and out;
// final says whether a last line without a newline is complete. Found
// values are added to taint, and the copies of its values masked; without
// a taint, the copies of what was found in text are masked all the same.
func (e *Engine) find(text []byte, from int, st *blockState, final bool, taint *Taint) []span {
	return e.findHits(text, from, st, final, taint, nil)
}

// kwHit is a keyword hit: the keyword's id and the offset just past it.
type kwHit struct {
	id  int32
	end int
}

// findHits is find, that also keeps in tail the keyword hits close enough
// to the end of text for undecidedIn.
func (e *Engine) findHits(text []byte, from int, st *blockState, final bool, taint *Taint, tail *[]kwHit) []span {
	var spans []span
	add := func(start, end int, rule string) {
		if end > start {
			spans = append(spans, span{start, end, rule})
		}
	}
	blockFrom := bytes.LastIndexByte(text[:from], '\n') + 1
	cands, blockLines := e.candidates(text, from, blockFrom, tail)
	if len(cands) > 0 {
		// Merge the windows of each rule.
		sort.Slice(cands, func(i, j int) bool {
			if cands[i].rule != cands[j].rule {
				return cands[i].rule < cands[j].rule
			}
			return cands[i].start < cands[j].start
		})
		cur := cands[0]
		for _, c := range cands[1:] {
			if c.rule == cur.rule && c.start <= cur.end && max(cur.end, c.end)-cur.start <= maxMerged &&
				(!e.rules[c.rule].ident || c.start == cur.start) {
				cur.end = max(cur.end, c.end)
				continue
			}
			e.runRule(text, cur, add)
			cur = c
		}
		e.runRule(text, cur, add)
	}
	for _, r := range e.always {
		e.runRule(text, candidate{r, 0, len(text)}, add)
	}
	e.blocks(text, blockFrom, st, final, blockLines, add)
	// Copies of what was found (a private key's lines are masked by the
	// block scanner wherever they are).
	if n := len(spans); n > 0 {
		if taint == nil {
			e.copies(text, spans[:n], add)
		} else {
			// The taint's scan below masks the copies of what it
			// takes; the copies of what it does not (too long) are
			// looked for here.
			var rest []span
			for _, s := range spans[:n] {
				if s.rule != "private-key" && !taint.Add(string(text[s.start:s.end]), s.rule) {
					rest = append(rest, s)
				}
			}
			e.copies(text, rest, add)
		}
	}
	taint.load().scan(text, add)
	e.known.load().scan(text, add)
	if len(spans) > 0 && bytes.Contains(text, placeholderStart) {
		spans = outsidePlaceholders(text, spans)
	}
	return spans
}

var (
	placeholderStart = []byte("[REDACTED:")
	placeholderRE    = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+:[0-9a-f]{4}\]`)
)

// outsidePlaceholders cuts out of spans what lies in a placeholder of a
// text redacted before: redacting it again changes nothing.
func outsidePlaceholders(text []byte, spans []span) []span {
	phs := placeholderRE.FindAllIndex(text, -1)
	if len(phs) == 0 {
		return spans
	}
	out := spans[:0]
	for _, s := range spans {
		for _, p := range phs {
			if p[1] <= s.start || p[0] >= s.end {
				continue
			}
			// A span that begins in a placeholder is a rule reading
			// the placeholder; one that runs into it stops there.
			s.end = min(s.end, p[0])
		}
		if s.start < s.end {
			out = append(out, s)
		}
	}
	return out
}

// candidates scans text for keywords and returns the windows the rules
// they call for must run in (but those that end before from: seen before,
// with the same result), and the offsets of the block keyword hits after
// blockFrom.
func (e *Engine) candidates(text []byte, from, blockFrom int, tail *[]kwHit) (cands []candidate, blockLines []int) {
	tailFrom := len(text) - e.reach
	e.m.scan(text, func(id int32, end int) {
		if int(id) < e.nBlock {
			if end > blockFrom {
				blockLines = append(blockLines, end)
			}
			return
		}
		if tail != nil && end > tailFrom {
			*tail = append(*tail, kwHit{id, end})
		}
		rules := e.kwRules[id]
		if len(rules) == 0 {
			return // a prefix: it matters to streams only
		}
		kwStart := end - e.m.lens[id]
		ls := -1
		for _, ri := range rules {
			r := e.rules[ri]
			if !r.pre.ok(text, kwStart, end) {
				continue
			}
			if ls < 0 {
				ls = bytes.LastIndexByte(text[:kwStart], '\n') + 1
			}
			we := min(lineEnd(text, end, e.linesAfter(r, text, end)), end+min(r.facts.maxLen, windowAfter))
			if we <= from {
				continue // all of it seen before, with the same result
			}
			ws := max(ls, kwStart-windowBefore)
			if r.ident {
				ws = identStart(text, ls, kwStart)
			}
			cands = append(cands, candidate{ri, ws, we})
		}
	})
	return cands, blockLines
}

// copies masks the other copies in text of the values spans found.
func (e *Engine) copies(text []byte, found []span, add func(int, int, string)) {
	var values []foundValue
	for _, s := range found {
		v := text[s.start:s.end]
		if len(v) < minFound || s.rule == "private-key" ||
			slices.ContainsFunc(values, func(f foundValue) bool { return bytes.Equal(f.value, v) }) {
			continue
		}
		values = append(values, foundValue{v, s.rule})
	}
	if len(values) > 0 {
		newValueSet(values).scan(text, add)
	}
}

// blocks runs the block scanner over the lines that need it: every line
// while a block is open, and the lines holding a block keyword.
func (e *Engine) blocks(text []byte, pos int, st *blockState, final bool, hits []int, add func(int, int, string)) {
	for pos < len(text) {
		if st.kind == blockNone {
			for len(hits) > 0 && hits[0] <= pos {
				hits = hits[1:]
			}
			if len(hits) == 0 {
				return
			}
			pos = max(pos, bytes.LastIndexByte(text[:hits[0]], '\n')+1)
		}
		end, lineFinal := len(text), final
		if i := bytes.IndexByte(text[pos:], '\n'); i >= 0 {
			end, lineFinal = pos+i, true
		}
		st.line(bytes.TrimSuffix(text[pos:end], []byte{'\r'}), pos, lineFinal, add)
		pos = end + 1
	}
}

// secretOf returns where the secret is in a match's submatch indexes: the
// rule's secret group; with none, as gitleaks does, the first group that
// matched something, or the whole match without its edge newlines when the
// regex has no groups.
func secretOf(m []int, group int, w []byte) (int, int) {
	if group > 0 {
		if 2*group+1 >= len(m) || m[2*group] < 0 {
			return -1, -1
		}
		return m[2*group], m[2*group+1]
	}
	if len(m) > 2 {
		for g := 1; 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				return m[2*g], m[2*g+1]
			}
		}
		return -1, -1
	}
	s, t := m[0], m[1]
	for s < t && w[s] == '\n' {
		s++
	}
	for t > s && w[t-1] == '\n' {
		t--
	}
	return s, t
}

// runRule runs one rule's regex over a window and reports what passes its
// entropy gate, allowlists and check.
func (e *Engine) runRule(text []byte, c candidate, add func(int, int, string)) {
	r := e.rules[c.rule]
	w := text[c.start:c.end]
	var ms [][]int
	if r.ident {
		if m := r.anchoredRe().FindSubmatchIndex(w); m != nil {
			ms = [][]int{m}
		}
	} else {
		ms = r.Regex.FindAllSubmatchIndex(w, -1)
	}
	for _, m := range ms {
		s, t := secretOf(m, r.SecretGroup, w)
		if s < 0 || t <= s {
			continue
		}
		if r.trim != nil {
			t = s + r.trim(w[s:t])
			if t <= s {
				continue
			}
		}
		secret := w[s:t]
		if r.Entropy > 0 && entropy(secret) <= r.Entropy {
			continue
		}
		if len(r.allows) > 0 && allowed(r.allows, secret, w[m[0]:m[1]], lineAround(text, c.start+s)) {
			continue
		}
		if r.check != nil && !r.check(matchCtx{text, c.start + m[0], c.start + m[1], c.start + s, c.start + t}) {
			continue
		}
		add(c.start+s, c.start+t, r.ID)
	}
}

func lineAround(text []byte, i int) []byte {
	ls := bytes.LastIndexByte(text[:i], '\n') + 1
	le := len(text)
	if j := bytes.IndexByte(text[i:], '\n'); j >= 0 {
		le = i + j
	}
	return text[ls:le]
}

// entropy is the Shannon entropy of b in bits per byte.
func entropy(b []byte) float64 {
	if len(b) == 0 {
		return 0
	}
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	h, n := 0.0, float64(len(b))
	for _, k := range counts {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// merge sorts spans and joins those that overlap. Spans that only touch
// stay apart: two secrets side by side get a placeholder each.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start < last.end {
			last.end = max(last.end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Span is a secret's place in a text, and what replaces it.
type Span struct {
	Start, End  int
	Rule        string
	Placeholder string
}

// Find reports where the secrets of text are, as Redact would mask them,
// with t as RedactWith uses it (nil: none): for a caller that masks a
// picture of its own (a screen's cells).
func (e *Engine) Find(text string, t *Taint) []Span {
	if text == "" {
		return nil
	}
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	spans := merge(e.find(b, 0, &blockState{}, true, t))
	out := make([]Span, len(spans))
	for i, s := range spans {
		out[i] = Span{s.start, s.end, s.rule, e.Placeholder(s.rule, b[s.start:s.end])}
	}
	return out
}

// Redact masks every secret in text, taken as whole.
func (e *Engine) Redact(text string) string { return e.RedactWith(text, nil) }

// RedactWith masks every secret in text, taken as whole, and with t: what
// it finds is added to t, and every value t holds is masked (see Taint).
// Every view of a session and its audit records use the session's Taint.
func (e *Engine) RedactWith(text string, t *Taint) string {
	if text == "" {
		return text
	}
	// The text is only read: find keeps no reference to it.
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	spans := merge(e.find(b, 0, &blockState{}, true, t))
	if len(spans) == 0 {
		return text
	}
	var out strings.Builder
	out.Grow(len(b) + 32*len(spans))
	prev := 0
	for _, s := range spans {
		out.Write(b[prev:s.start])
		out.WriteString(e.Placeholder(s.rule, b[s.start:s.end]))
		prev = s.end
	}
	out.Write(b[prev:])
	return out.String()
}
