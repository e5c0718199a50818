package redact

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// What the engine reads off a rule's regex, once, when it is built.

// unbounded stands for "no limit" in the facts below.
const unbounded = 1 << 30

// regexFacts are the shape of a rule's matches.
type regexFacts struct {
	// maxLen is the longest match in bytes (unbounded: no limit).
	maxLen int
	// maxNL is the most newlines a match can hold (unbounded: no limit):
	// a rule's window spans that many lines after its keyword's line.
	maxNL int
	// prefixes are literal strings, lower-cased, one of which every match
	// begins with (nil: none known). A trailing token that begins with one
	// is held back until it is decided.
	prefixes []string
}

func analyze(re *syntax.Regexp) regexFacts {
	return regexFacts{maxLen: maxLen(re), maxNL: maxNewlines(re), prefixes: literalPrefixes(re)}
}

func addCap(a, b int) int { return min(a+b, unbounded) }

func mulCap(a, n int) int {
	if a == 0 || n == 0 {
		return 0
	}
	if n < 0 || a >= unbounded/n {
		return unbounded
	}
	return a * n
}

// runeLen is the longest UTF-8 encoding of a rune in ranges.
func runeLen(ranges []rune) int {
	n := 0
	for i := 1; i < len(ranges); i += 2 {
		n = max(n, utf8.RuneLen(ranges[i]))
	}
	return max(n, 1)
}

func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCharClass:
		return runeLen(re.Rune)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxLen(re.Sub[0]) == 0 {
			return 0
		}
		return unbounded
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		return mulCap(maxLen(re.Sub[0]), re.Max)
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = addCap(n, maxLen(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = max(n, maxLen(s))
		}
		return n
	}
	return 0 // empty-width operators
}

func hasNL(ranges []rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= '\n' && '\n' <= ranges[i+1] {
			return true
		}
	}
	return false
}

func maxNewlines(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return strings.Count(string(re.Rune), "\n")
	case syntax.OpCharClass:
		if hasNL(re.Rune) {
			return 1
		}
		return 0
	case syntax.OpAnyChar:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxNewlines(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxNewlines(re.Sub[0]) == 0 {
			return 0
		}
		return unbounded
	case syntax.OpRepeat:
		return mulCap(maxNewlines(re.Sub[0]), re.Max)
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = addCap(n, maxNewlines(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = max(n, maxNewlines(s))
		}
		return n
	}
	return 0
}

func emptyWidth(op syntax.Op) bool {
	switch op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// maxPrefixes bounds how many alternative prefixes a rule may have.
const maxPrefixes = 16

// literalPrefixes returns the literal strings one of which every match of
// re begins with, lower-cased, or nil.
func literalPrefixes(re *syntax.Regexp) []string {
	p, _ := prefixesOf(re)
	out := p[:0]
	for _, s := range p {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) < len(p) || len(out) == 0 {
		return nil // some match may begin otherwise
	}
	return out
}

// prefixesOf returns the prefixes of re's matches and whether they are the
// whole of them (re matches exactly those strings).
func prefixesOf(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCapture:
		return prefixesOf(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		whole := true
		for _, s := range re.Sub {
			p, w := prefixesOf(s)
			if p == nil {
				return nil, false
			}
			out = append(out, p...)
			whole = whole && w
		}
		if len(out) > maxPrefixes {
			return nil, false
		}
		return out, whole
	case syntax.OpConcat:
		acc := []string{""}
		for _, s := range re.Sub {
			if emptyWidth(s.Op) {
				continue
			}
			p, w := prefixesOf(s)
			if p == nil || len(acc)*len(p) > maxPrefixes {
				return acc, false
			}
			next := make([]string, 0, len(acc)*len(p))
			for _, a := range acc {
				for _, b := range p {
					next = append(next, a+b)
				}
			}
			acc = next
			if !w {
				return acc, false
			}
		}
		return acc, true
	case syntax.OpCharClass:
		// A small class of letters that differ only in case: (?i)x.
		if len(re.Rune) <= 4 {
			var set []string
			for i := 0; i+1 < len(re.Rune); i += 2 {
				for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
					s := strings.ToLower(string(r))
					if !containsStr(set, s) {
						set = append(set, s)
					}
				}
			}
			if len(set) == 1 {
				return set, true
			}
		}
	case syntax.OpRepeat:
		if re.Min == re.Max && re.Min > 0 && re.Min <= 4 {
			p, w := prefixesOf(re.Sub[0])
			if len(p) == 1 && w {
				return []string{strings.Repeat(p[0], re.Min)}, true
			}
		}
	}
	if emptyWidth(re.Op) {
		return []string{""}, true
	}
	return nil, false
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
