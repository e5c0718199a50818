package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// maxBraceWords bounds the words brace expansion may make of one word:
// {1..99999999} is judged as written rather than expanded.
const maxBraceWords = 64

// appendFields appends to dst the words bash makes of word before it
// runs, as far as they are known: brace expansion ({rm,-rf,~} is three
// words, r{m,} is r and rm), then word splitting at each unquoted $IFS or
// ${IFS…} (the usual spelling of a space that is not one). static is
// false when a part is computed at run time.
func (w *walker) appendFields(dst []string, word *syntax.Word) ([]string, bool) {
	if word == nil {
		return append(dst, ""), true
	}
	if plainFields(word) {
		v, st := w.wordValue(word)
		return append(dst, v), st
	}
	n := len(dst)
	static := true
	for _, parts := range braces(word) {
		for _, field := range splitIFS(parts) {
			v, st := w.wordValue(&syntax.Word{Parts: field})
			static = static && st
			dst = append(dst, v)
		}
	}
	if len(dst) == n {
		dst = append(dst, "")
	}
	return dst, static
}

// braces expands the brace expressions of word into the words they make,
// each as its parts; a word without any (or with more than maxBraceWords)
// is itself.
func braces(word *syntax.Word) [][]syntax.WordPart {
	whole := [][]syntax.WordPart{word.Parts}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), word.Parts...)}
	if !syntax.SplitBraces(cp) {
		return whole
	}
	out, ok := expandBraces(cp.Parts)
	if !ok {
		return whole
	}
	return out
}

// expandBraces is the cross product of parts' alternatives, or false when
// it would exceed maxBraceWords.
func expandBraces(parts []syntax.WordPart) ([][]syntax.WordPart, bool) {
	acc := [][]syntax.WordPart{nil}
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok || b == nil {
			for i := range acc {
				acc[i] = append(acc[i], p)
			}
			continue
		}
		var alts [][]syntax.WordPart
		if b.Sequence {
			seq, ok := braceSequence(b)
			if !ok {
				return nil, false
			}
			for _, s := range seq {
				alts = append(alts, []syntax.WordPart{&syntax.Lit{Value: s}})
			}
		} else {
			for _, e := range b.Elems {
				if e == nil {
					continue
				}
				sub, ok := expandBraces(e.Parts)
				if !ok {
					return nil, false
				}
				alts = append(alts, sub...)
			}
		}
		if len(alts) == 0 {
			continue
		}
		if len(acc)*len(alts) > maxBraceWords {
			return nil, false
		}
		next := make([][]syntax.WordPart, 0, len(acc)*len(alts))
		for _, a := range acc {
			for _, alt := range alts {
				w := append(append([]syntax.WordPart(nil), a...), alt...)
				next = append(next, w)
			}
		}
		acc = next
	}
	return acc, true
}

// braceSequence expands {x..y[..incr]} of integers or single letters.
func braceSequence(b *syntax.BraceExp) ([]string, bool) {
	lit := func(i int) string {
		if i >= len(b.Elems) || b.Elems[i] == nil || len(b.Elems[i].Parts) != 1 {
			return ""
		}
		l, ok := b.Elems[i].Parts[0].(*syntax.Lit)
		if !ok || l == nil {
			return ""
		}
		return l.Value
	}
	from, to := lit(0), lit(1)
	incr := 1
	if len(b.Elems) > 2 {
		n, err := strconv.Atoi(lit(2))
		if err != nil {
			return nil, false
		}
		incr = max(n, -n)
	}
	if incr == 0 {
		incr = 1
	}
	fi, err1 := strconv.Atoi(from)
	ti, err2 := strconv.Atoi(to)
	letters := false
	if err1 != nil || err2 != nil {
		if utf8.RuneCountInString(from) != 1 || utf8.RuneCountInString(to) != 1 {
			return nil, false
		}
		fr, _ := utf8.DecodeRuneInString(from)
		tr, _ := utf8.DecodeRuneInString(to)
		fi, ti, letters = int(fr), int(tr), true
	}
	n := (max(fi-ti, ti-fi))/incr + 1
	if n > maxBraceWords {
		return nil, false
	}
	step := incr
	if ti < fi {
		step = -incr
	}
	out := make([]string, 0, n)
	for i, v := 0, fi; i < n; i, v = i+1, v+step {
		if letters {
			out = append(out, string(rune(v)))
		} else {
			out = append(out, strconv.Itoa(v))
		}
	}
	return out, true
}

// splitIFS splits parts at each unquoted parameter expansion of IFS: bash
// splits the expanded word there (with the default IFS), so rm${IFS}-rf
// runs rm with -rf. Empty fields are dropped, as bash drops them.
func splitIFS(parts []syntax.WordPart) [][]syntax.WordPart {
	var out [][]syntax.WordPart
	var cur []syntax.WordPart
	split := false
	for _, p := range parts {
		if pe, ok := p.(*syntax.ParamExp); ok && pe != nil && pe.Param != nil && pe.Param.Value == "IFS" && pe.Index == nil && !pe.Length && !pe.Width {
			split = true
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 || !split {
		out = append(out, cur)
	}
	return out
}

// ansiC decodes the body of a $'…' string as bash does: \a \b \e \E \f \n
// \r \t \v \\ \' \" \?, \NNN (octal, up to three digits), \xHH (up to two
// hex digits), \uHHHH and \UHHHHHHHH, and \cX (the control character of
// X). An unknown escape keeps its backslash.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		switch c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j-i-1 < maxDigits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(v))
			} else if v <= utf8.MaxRune {
				b.WriteRune(rune(v))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// plainFields: word has no brace to expand and no $IFS to split at, so
// it is one field (the common case, without the allocations of the
// general one).
func plainFields(word *syntax.Word) bool {
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if p != nil && strings.Contains(p.Value, "{") {
				return false
			}
		case *syntax.ParamExp:
			if p != nil && p.Param != nil && p.Param.Value == "IFS" {
				return false
			}
		}
	}
	return true
}
