package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
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
}

// Engine finds secrets in text. It is safe for concurrent use.
type Engine struct {
	rules   []Rule
	m       *matcher
	kwRules [][]int32 // keyword id → rules (indexes into rules); block keywords have none
	nBlock  int       // the first nBlock keyword ids are the block keywords
	always  []int32   // rules with no keyword: run on every line
	key     []byte

	mu    sync.RWMutex
	known [][]byte // exact secret values the gateway holds
}

// New builds an engine.
func New(o Options) (*Engine, error) {
	rules := o.Rules
	if rules == nil {
		gl, err := GitleaksRules()
		if err != nil {
			return nil, err
		}
		rules = append(gl, TerminalRules()...)
	}
	rules = append(slices.Clip(rules), o.Extra...)
	e := &Engine{rules: rules, key: o.Key}
	if e.key == nil {
		e.key = make([]byte, 32)
		if _, err := rand.Read(e.key); err != nil {
			return nil, fmt.Errorf("redaction key: %w", err)
		}
	}
	var keywords []string
	index := map[string]int32{}
	for _, b := range blockKeywords {
		index[string(bytes.ToLower(b))] = int32(len(keywords))
		keywords = append(keywords, string(bytes.ToLower(b)))
		e.kwRules = append(e.kwRules, nil)
	}
	e.nBlock = len(keywords)
	for i, r := range rules {
		if r.Regex == nil {
			return nil, fmt.Errorf("redaction rule %s has no regex", r.ID)
		}
		if len(r.Keywords) == 0 {
			e.always = append(e.always, int32(i))
			continue
		}
		for _, k := range r.Keywords {
			id, ok := index[k]
			if !ok {
				id = int32(len(keywords))
				index[k] = id
				keywords = append(keywords, k)
				e.kwRules = append(e.kwRules, nil)
			}
			if !slices.Contains(e.kwRules[id], int32(i)) {
				e.kwRules[id] = append(e.kwRules[id], int32(i))
			}
		}
	}
	e.m = newMatcher(keywords)
	return e, nil
}

// Rules returns the number of rules in force.
func (e *Engine) Rules() int { return len(e.rules) }

// AddSecret registers an exact value to mask wherever it appears (a
// secret the gateway holds, or one the agent typed). Values shorter than
// four bytes are refused: masking them would mask ordinary text.
func (e *Engine) AddSecret(value string) error {
	if len(value) < 4 {
		return fmt.Errorf("a secret of %d bytes is too short to mask safely", len(value))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range e.known {
		if string(k) == value {
			return nil
		}
	}
	e.known = append(e.known, []byte(value))
	return nil
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

// Window of text around a keyword hit that a rule's regex looks at, within
// the hit's line: enough for the longest prefix and secret of any rule.
const (
	windowBefore = 96
	windowAfter  = 4096
)

type candidate struct {
	rule       int32
	start, end int // window
}

// find reports the secrets of text. st carries multi-line blocks in and
// out; final says whether a last line without a newline is complete.
func (e *Engine) find(text []byte, st *blockState, final bool) []span {
	var spans []span
	add := func(start, end int, rule string) {
		if end > start {
			spans = append(spans, span{start, end, rule})
		}
	}
	var cands []candidate
	var blockLines []int // offsets of block keyword hits
	e.m.scan(text, func(id int32, end int) {
		if int(id) < e.nBlock {
			blockLines = append(blockLines, end)
			return
		}
		kwStart := end - e.m.lens[id]
		rules := e.kwRules[id]
		wanted := false
		for _, r := range rules {
			if e.rules[r].pre.ok(text, kwStart, end) {
				wanted = true
				break
			}
		}
		if !wanted {
			return
		}
		ls := bytes.LastIndexByte(text[:kwStart], '\n') + 1
		le := len(text)
		if i := bytes.IndexByte(text[end:], '\n'); i >= 0 {
			le = end + i
		}
		ws, we := max(ls, kwStart-windowBefore), min(le, end+windowAfter)
		for _, r := range e.kwRules[id] {
			if e.rules[r].pre.ok(text, kwStart, end) {
				cands = append(cands, candidate{r, ws, we})
			}
		}
	})
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
			if c.rule == cur.rule && c.start <= cur.end {
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
	e.mu.RLock()
	for _, k := range e.known {
		for off := 0; ; {
			i := bytes.Index(text[off:], k)
			if i < 0 {
				break
			}
			add(off+i, off+i+len(k), "known-secret")
			off += i + len(k)
		}
	}
	e.mu.RUnlock()
	e.blocks(text, st, final, blockLines, add)
	return spans
}

// blocks runs the block scanner over the lines that need it: every line
// while a block is open, and the lines holding a block keyword.
func (e *Engine) blocks(text []byte, st *blockState, final bool, hits []int, add func(int, int, string)) {
	for pos := 0; pos < len(text); {
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

// runRule runs one rule's regex over a window and reports what passes its
// entropy gate and allowlists.
func (e *Engine) runRule(text []byte, c candidate, add func(int, int, string)) {
	r := &e.rules[c.rule]
	w := text[c.start:c.end]
	for _, m := range r.Regex.FindAllSubmatchIndex(w, -1) {
		g := r.SecretGroup
		if 2*g+1 >= len(m) || m[2*g] < 0 {
			continue
		}
		s, t := m[2*g], m[2*g+1]
		secret := w[s:t]
		if r.Entropy > 0 && entropy(secret) <= r.Entropy {
			continue
		}
		if r.allowed(secret, w[m[0]:m[1]], lineAround(text, c.start+s)) {
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

// allowed applies the rule's allowlists, as gitleaks does: a regex checks
// the secret, the whole match or the line (RegexTarget); stop words check
// the secret.
func (r *Rule) allowed(secret, match, line []byte) bool {
	for _, a := range r.allow {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		hasRe, hasStop := len(a.Regexes) > 0, len(a.StopWords) > 0
		reOK := hasRe && a.RegexAllowed(string(target))
		stopOK := false
		if hasStop {
			stopOK, _ = a.ContainsStopWord(string(secret))
		}
		if a.MatchCondition == 1 { // AND
			if (hasRe || hasStop) && (!hasRe || reOK) && (!hasStop || stopOK) {
				return true
			}
			continue
		}
		if reOK || stopOK {
			return true
		}
	}
	return false
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

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Redact masks every secret in text, taken as whole.
func (e *Engine) Redact(text string) string {
	if text == "" {
		return text
	}
	// The text is only read: find keeps no reference to it.
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	spans := merge(e.find(b, &blockState{}, true))
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
