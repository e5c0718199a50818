package redact

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"sync"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// gitleaks joins an allowlist's regexes into one alternation, and some of
// them are long alternations already (generic-api-key's names that are not
// secrets): run on Go's slowest machine, one costs tens of microseconds a
// match. An allowList runs the same alternatives one by one, each small
// enough for the backtracker, and skips those whose literal beginning
// (case folded) is nowhere in the text. The decision is gitleaks': a
// regex target, stop words on the secret, AND or OR.
type allowList struct {
	a    *gitleaks.Allowlist
	once sync.Once
	alts []allowAlt
}

// allowAlt is one alternative: its regex and the literal strings, lower
// case, one of which any match of it begins with (nil: unknown).
type allowAlt struct {
	re   *regexp.Regexp
	lits [][]byte
}

// maxSplit bounds how many alternatives one regex is split into.
const maxSplit = 256

func (l *allowList) compile() {
	for _, re := range l.a.Regexes {
		t, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil {
			l.alts = append(l.alts, allowAlt{re: re})
			continue
		}
		l.alts = append(l.alts, split(re, t)...)
	}
}

// split returns the alternatives of re (parsed: t), or re whole.
func split(re *regexp.Regexp, t *syntax.Regexp) []allowAlt {
	subs := []*syntax.Regexp{t}
	if top := unwrapCapture(t); top.Op == syntax.OpAlternate && len(top.Sub) <= maxSplit {
		subs = top.Sub
	}
	alts := make([]allowAlt, 0, len(subs))
	for _, sub := range subs {
		alt := allowAlt{re: re}
		if len(subs) > 1 {
			c, err := regexp.Compile(sub.String())
			if err != nil {
				return []allowAlt{{re: re}}
			}
			alt.re = c
		}
		for _, p := range literalPrefixes(sub) {
			alt.lits = append(alt.lits, []byte(p))
		}
		alts = append(alts, alt)
	}
	return alts
}

func unwrapCapture(t *syntax.Regexp) *syntax.Regexp {
	for t.Op == syntax.OpCapture {
		t = t.Sub[0]
	}
	return t
}

// regexAllowed tells whether one of the allowlist's regexes matches target.
func (l *allowList) regexAllowed(target []byte) bool {
	l.once.Do(l.compile)
	var lower []byte
	for _, alt := range l.alts {
		if alt.lits != nil {
			if lower == nil {
				lower = bytes.ToLower(target)
			}
			found := false
			for _, lit := range alt.lits {
				if bytes.Contains(lower, lit) {
					found = true
					break
				}
			}
			if !found {
				continue
			}
		}
		if alt.re.Match(target) {
			return true
		}
	}
	return false
}

// allowed applies the allowlists, as gitleaks does: a regex checks the
// secret, the whole match or the line (RegexTarget); stop words check the
// secret.
func allowed(lists []*allowList, secret, match, line []byte) bool {
	for _, l := range lists {
		a := l.a
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		hasRe, hasStop := len(a.Regexes) > 0, len(a.StopWords) > 0
		reOK := hasRe && len(target) > 0 && l.regexAllowed(target)
		stopOK := false
		if hasStop {
			stopOK, _ = a.ContainsStopWord(string(secret))
		}
		if a.MatchCondition == gitleaks.AllowlistMatchAnd {
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
