package redact

import "unicode/utf8"

// MaskByte replaces a character of terminal output masked after it was
// emitted (a repair).
const MaskByte = '*'

// TextMasker masks the text of a run of terminal output fed to it byte by
// byte, from a byte that starts a character: escape sequences, control
// bytes and blanks are kept, so that colours and line ends stay and the
// output keeps its length. A character of several bytes is masked or kept
// whole, so that valid UTF-8 stays valid: every one of its bytes becomes
// MaskByte. The zero value is ready, in the text state.
//
// Recordings, the output logs and exec's results repair with it what a
// session's screen repairs by cell.
type TextMasker struct {
	st   uint8
	cont uint8 // continuation bytes still to come of the current character
	hide bool  // whether the current character is masked
}

const (
	tmText   = iota
	tmEsc    // after ESC
	tmCSI    // ESC [ …
	tmStr    // OSC, DCS, … payload
	tmStrEsc // ESC inside a string: its end, or a new sequence
)

// Mask returns what byte c of the output becomes.
func (m *TextMasker) Mask(c byte) byte {
	if m.cont > 0 {
		if c&0xc0 == 0x80 {
			m.cont--
			if m.hide {
				return MaskByte
			}
			return c
		}
		m.cont = 0 // a character cut short: c starts anew
	}
	if c >= 0xc0 {
		// A multi-byte character's lead byte decides for all of it.
		m.cont = uint8(seqLen(c) - 1)
		out := m.mask(c)
		m.hide = out == MaskByte
		return out
	}
	return m.mask(c)
}

func (m *TextMasker) mask(c byte) byte {
	switch m.st {
	case tmText:
		switch {
		case c == 0x1b:
			m.st = tmEsc
		case c <= 0x20 || c == 0x7f: // controls, and a blank: it tells nothing
		default:
			return MaskByte
		}
	case tmEsc:
		switch {
		case c == '[':
			m.st = tmCSI
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			m.st = tmStr
		case c >= 0x20 && c <= 0x2f:
		case c >= 0x80: // no escape: a character, the text it cut short
			m.st = tmText
			return m.mask(c)
		default:
			m.st = tmText
		}
	case tmCSI:
		if c >= 0x40 && c <= 0x7e {
			m.st = tmText
		}
	case tmStr:
		switch c {
		case 0x07:
			m.st = tmText
		case 0x1b:
			m.st = tmStrEsc
		}
	case tmStrEsc:
		m.st = tmText
		if c != '\\' {
			m.st = tmEsc
			return m.mask(c)
		}
	}
	return c
}

// MaskSpan masks the text of p[a:b] in place, the span widened to whole
// characters (a character one of whose bytes is in it is masked whole).
// It returns the span it masked.
func (m *TextMasker) MaskSpan(p []byte, a, b int) (int, int) {
	a, b = min(max(a, 0), len(p)), min(b, len(p))
	if a >= b {
		return a, a
	}
	a, b = CharSpan(func(i int) byte { return p[i] }, len(p), a, b)
	for i := a; i < b; i++ {
		p[i] = m.Mask(p[i])
	}
	return a, b
}

// CharSpan widens [a, b) of a text of n bytes, read by at, to whole
// characters: a goes back to the start of the character it is in, b on
// past the rest of the character before it. Bytes that are not UTF-8 are
// characters of one byte.
func CharSpan(at func(int) byte, n, a, b int) (int, int) {
	a = charStart(at, n, a)
	if s := charStart(at, n, b); s < b {
		end := min(s+seqLen(at(s)), n)
		for b < end && at(b)&0xc0 == 0x80 {
			b++
		}
	}
	return a, b
}

// charStart returns where the character byte i is in starts.
func charStart(at func(int) byte, n, i int) int {
	if i <= 0 || i >= n || at(i)&0xc0 != 0x80 {
		return i
	}
	for j := i - 1; j >= 0 && j >= i-(utf8.UTFMax-1); j-- {
		c := at(j)
		if c&0xc0 == 0x80 {
			continue
		}
		if c >= 0xc0 && j+seqLen(c) > i {
			return j
		}
		break
	}
	return i
}

// seqLen is the length of the character lead byte c starts.
func seqLen(c byte) int {
	switch {
	case c < 0xe0:
		return 2
	case c < 0xf0:
		return 3
	}
	return utf8.UTFMax
}
