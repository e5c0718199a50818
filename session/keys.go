package session

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxKeyRepeat bounds a key's repeat count.
const MaxKeyRepeat = 500

// A Key is one named key, pressed Repeat times.
type Key struct {
	Name    string
	Repeat  int
	Literal bool // Name is a character typed as is
}

// ParseKey parses "name" or "name*N" (for example "down*5"). Names are
// case-insensitive; modifiers are written "ctrl+", "alt+" and "shift+".
func ParseKey(s string) (Key, error) {
	name, count, hasCount := strings.Cut(strings.TrimSpace(s), "*")
	k := Key{Name: strings.ToLower(strings.TrimSpace(name)), Repeat: 1}
	if hasCount {
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 1 || n > MaxKeyRepeat {
			return Key{}, fmt.Errorf("key %q: repeat count must be 1 to %d", s, MaxKeyRepeat)
		}
		k.Repeat = n
	}
	if _, err := keyBytes(k.Name, false, false); err != nil {
		return Key{}, err
	}
	return k, nil
}

// KeyModes are the terminal modes that change what a key sends.
type KeyModes struct {
	AppCursor bool // DECCKM, set by vim, less and most full-screen programs
	AppKeypad bool
}

// Bytes returns what pressing k sends to a terminal in the given modes.
func (k Key) Bytes(m KeyModes) []byte {
	if k.Literal {
		return []byte(strings.Repeat(k.Name, k.Repeat))
	}
	b, _ := keyBytes(k.Name, m.AppCursor, m.AppKeypad)
	return []byte(strings.Repeat(b, k.Repeat))
}

var namedKeys = map[string]string{
	"enter": "\r", "return": "\r", "tab": "\t", "shift+tab": "\x1b[Z",
	"esc": "\x1b", "escape": "\x1b", "backspace": "\x7f", "space": " ",
	"delete": "\x1b[3~", "del": "\x1b[3~", "insert": "\x1b[2~",
	"pgup": "\x1b[5~", "pageup": "\x1b[5~", "pgdn": "\x1b[6~", "pagedown": "\x1b[6~",
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

// cursorKeys are the keys whose sequence depends on DECCKM: CSI x normally,
// SS3 x in application mode.
var cursorKeys = map[string]byte{
	"up": 'A', "down": 'B', "right": 'C', "left": 'D', "home": 'H', "end": 'F',
}

// modifierCode is xterm's modifier parameter: 1 + shift(1) + alt(2) + ctrl(4).
var modifierCode = map[string]int{"shift": 2, "alt": 3, "shift+alt": 4, "ctrl": 5, "ctrl+shift": 6, "ctrl+alt": 7}

func keyBytes(name string, appCursor, appKeypad bool) (string, error) {
	if b, ok := namedKeys[name]; ok {
		return b, nil
	}
	if c, ok := cursorKeys[name]; ok {
		if appCursor {
			return "\x1bO" + string(c), nil
		}
		return "\x1b[" + string(c), nil
	}
	mods, base := splitMods(name)
	if mods == "" {
		return "", unknownKey(name)
	}
	// Modified cursor keys: CSI 1;m x.
	if c, ok := cursorKeys[base]; ok {
		if code, ok := modifierCode[mods]; ok {
			return fmt.Sprintf("\x1b[1;%d%c", code, c), nil
		}
	}
	switch mods {
	case "ctrl":
		if len(base) == 1 {
			c := base[0]
			switch {
			case c >= 'a' && c <= 'z':
				return string(rune(c - 'a' + 1)), nil
			case c == '@' || c == ' ' || c == '2':
				return "\x00", nil
			case c == '[' || c == '3':
				return "\x1b", nil
			case c == '\\' || c == '4':
				return "\x1c", nil
			case c == ']' || c == '5':
				return "\x1d", nil
			case c == '^' || c == '6':
				return "\x1e", nil
			case c == '_' || c == '7' || c == '/':
				return "\x1f", nil
			case c == '?' || c == '8':
				return "\x7f", nil
			}
		}
		if base == "space" {
			return "\x00", nil
		}
	case "alt":
		if len(base) == 1 && base[0] >= 0x20 && base[0] < 0x7f {
			return "\x1b" + base, nil
		}
		if b, ok := namedKeys[base]; ok {
			return "\x1b" + b, nil
		}
	}
	return "", unknownKey(name)
}

func splitMods(name string) (mods, base string) {
	parts := strings.Split(name, "+")
	if len(parts) < 2 {
		return "", name
	}
	base = parts[len(parts)-1]
	if base == "" && strings.HasSuffix(name, "++") { // "ctrl++"
		base = "+"
		parts = parts[:len(parts)-1]
	}
	ms := parts[:len(parts)-1]
	sort.Slice(ms, func(i, j int) bool { return order(ms[i]) < order(ms[j]) })
	return strings.Join(ms, "+"), base
}

func order(m string) int {
	switch m {
	case "ctrl":
		return 0
	case "shift":
		return 1
	case "alt":
		return 2
	}
	return 3
}

func unknownKey(name string) error {
	return fmt.Errorf("unknown key %q: use enter, tab, shift+tab, esc, backspace, delete, insert, space, up, down, left, right, home, end, pgup, pgdn, f1-f12, ctrl+<letter>, alt+<key>, or <name>*N to repeat", name)
}
