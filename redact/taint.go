package redact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Taint is one owner's set of secret values (a session's, typically): the
// values its output was found to hold, and the values it was given to type
// (held secrets). Every stream and every RedactWith call that is handed the
// same Taint masks
//
//   - every later copy of a found value, wherever it appears, also inside a
//     longer token and on the same line as the match that found it, with
//     the placeholder of the rule that found it;
//   - every piece of 8 or more bytes of a held value, and a held value
//     shorter than 8 bytes whole, as known-secret.
//
// A Taint is bounded (TaintLimits): found values beyond the bound push out
// the oldest; a held value beyond it is refused, so that the caller can
// refuse to type it. It is safe for concurrent use; readers never wait for
// a writer. There is no registry: a Taint lives as long as its owner keeps
// it.
type Taint struct {
	lim TaintLimits

	mu         sync.Mutex
	found      []foundValue // oldest first
	foundBytes int
	held       [][]byte
	heldBytes  int
	snap       atomic.Pointer[taintSnap]
}

// TaintLimits bound a Taint. Zero fields take the defaults.
type TaintLimits struct {
	// Found values kept (default 256) and their total size (default 64 KiB).
	Found, FoundBytes int
	// Held values (default 64) and their total size (default 64 KiB).
	Held, HeldBytes int
	// MaxValue is the longest value taken (default 4 KiB): a longer found
	// value is masked where it matched but not remembered; a longer held
	// value is refused.
	MaxValue int
}

func (l TaintLimits) withDefaults() TaintLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Found, 256)
	def(&l.FoundBytes, 64<<10)
	def(&l.Held, 64)
	def(&l.HeldBytes, 64<<10)
	def(&l.MaxValue, 4<<10)
	return l
}

// Shortest values a Taint takes: a held value of fewer than minHeld bytes
// would mask ordinary text; a found value is remembered from minFound
// bytes (shorter ones, like a 3-letter password, are masked where a rule
// finds them, but a bare copy of them is not a secret anyone can tell).
const (
	minHeld  = 4
	minFound = 8
	gramLen  = 8
)

// ErrTaintFull is returned by Hold when a value would go over the limits.
var ErrTaintFull = errors.New("the set of held secrets is full")

// NewTaint returns an empty set bounded by l.
func NewTaint(l TaintLimits) *Taint {
	t := &Taint{lim: l.withDefaults()}
	t.snap.Store(&taintSnap{})
	return t
}

type foundValue struct {
	value []byte
	rule  string
}

// Add remembers a value a rule found (rule is its id, for the placeholder
// of later copies). Values shorter than 8 bytes or longer than MaxValue
// are not remembered; Add reports whether the value is in the set.
func (t *Taint) Add(value, rule string) bool {
	if t == nil || len(value) < minFound || len(value) > t.lim.MaxValue {
		return false
	}
	s := t.snap.Load()
	if s.hasFound([]byte(value)) {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.found {
		if string(f.value) == value {
			return true
		}
	}
	t.found = append(t.found, foundValue{[]byte(value), rule})
	t.foundBytes += len(value)
	for len(t.found) > t.lim.Found || t.foundBytes > t.lim.FoundBytes {
		t.foundBytes -= len(t.found[0].value)
		t.found = t.found[1:]
	}
	t.publish(false)
	return true
}

// Hold registers a value the owner holds (a secret it will type): every
// piece of it of 8 or more bytes is masked from now on, and a value
// shorter than 8 bytes is masked whole. Lines of a multi-line value are
// taken one by one; the armour lines of a PEM block (-----BEGIN …-----)
// are public and left out. Hold refuses a value shorter than 4 bytes,
// longer than MaxValue, or one that would go over the limits.
func (t *Taint) Hold(value string) error {
	if len(value) < minHeld {
		return fmt.Errorf("a secret of %d bytes is too short to mask safely", len(value))
	}
	if len(value) > t.lim.MaxValue {
		return fmt.Errorf("a secret of %d bytes is longer than the %d bytes a held secret may have", len(value), t.lim.MaxValue)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.held {
		if string(h) == value {
			return nil
		}
	}
	if len(t.held)+1 > t.lim.Held || t.heldBytes+len(value) > t.lim.HeldBytes {
		return fmt.Errorf("%w (%d secrets, %d bytes)", ErrTaintFull, len(t.held), t.heldBytes)
	}
	t.held = append(t.held, []byte(value))
	t.heldBytes += len(value)
	t.publish(true)
	return nil
}

// Len reports how many found and held values the set has.
func (t *Taint) Len() (found, held int) {
	if t == nil {
		return 0, 0
	}
	s := t.snap.Load()
	return len(s.found), len(s.heldVals)
}

// publish builds a new snapshot; t.mu is held. The held part is rebuilt
// only when the held values changed.
func (t *Taint) publish(heldChanged bool) {
	old := t.snap.Load()
	s := &taintSnap{held: old.held, heldVals: old.heldVals}
	if heldChanged {
		s.heldVals = slices.Clone(t.held)
		s.held = newHeldIndex(s.heldVals)
	}
	s.found = slices.Clone(t.found)
	s.set = newValueSet(s.found)
	s.prefix4 = map[uint32][]int32{}
	for i, f := range s.found {
		k4 := binary.LittleEndian.Uint32(f.value)
		s.prefix4[k4] = append(s.prefix4[k4], int32(i))
		s.maxFound = max(s.maxFound, len(f.value))
	}
	t.snap.Store(s)
}

// load returns the current snapshot (nil for a nil Taint).
func (t *Taint) load() *taintSnap {
	if t == nil {
		return nil
	}
	return t.snap.Load()
}

// taintSnap is an immutable picture of a Taint.
type taintSnap struct {
	found    []foundValue
	set      *valueSet          // finds them
	prefix4  map[uint32][]int32 // first 4 bytes → indexes
	maxFound int
	held     *heldIndex
	heldVals [][]byte
}

func (s *taintSnap) empty() bool {
	return s == nil || len(s.found) == 0 && (s.held == nil || s.held.empty())
}

func (s *taintSnap) hasFound(v []byte) bool {
	return slices.ContainsFunc(s.found, func(f foundValue) bool { return bytes.Equal(f.value, v) })
}

// heldIndex finds the pieces of held values. A text is read at every
// fourth position for 4 bytes of a held value (any piece of 8 bytes or
// more holds such 4 bytes at one of them); around a position that has
// some, every 8-byte piece that covers them is looked up.
type heldIndex struct {
	grams   []uint64 // every 8-byte piece, sorted
	filter  filter
	short   [][]byte // values (or lines) of 4 to 7 bytes, matched whole
	grams4  map[uint32]struct{}
	filter4 filter
}

func (h *heldIndex) empty() bool { return h == nil || len(h.grams) == 0 && len(h.short) == 0 }

func newHeldIndex(values [][]byte) *heldIndex {
	h := &heldIndex{grams4: map[uint32]struct{}{}}
	for _, v := range values {
		for _, line := range bytes.Split(v, []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			if bytes.HasPrefix(line, []byte("-----BEGIN ")) || bytes.HasPrefix(line, []byte("-----END ")) {
				continue
			}
			switch {
			case len(line) >= gramLen:
				for i := 0; i+gramLen <= len(line); i++ {
					if !repeated(line[i : i+gramLen]) {
						h.grams = append(h.grams, binary.LittleEndian.Uint64(line[i:]))
					}
				}
			case len(line) >= minHeld:
				h.short = append(h.short, line)
			}
			for i := 0; i+4 <= len(line); i++ {
				h.grams4[binary.LittleEndian.Uint32(line[i:])] = struct{}{}
			}
		}
	}
	slices.Sort(h.grams)
	h.grams = slices.Compact(h.grams)
	h.filter = newFilter(len(h.grams))
	for _, g := range h.grams {
		h.filter.set(g)
	}
	h.filter4 = newFilter(len(h.grams4))
	for g := range h.grams4 {
		h.filter4.set(uint64(g))
	}
	return h
}

// repeated: one byte, over and over ("--------", spaces): such a piece
// says nothing of the value and is common in ordinary output.
func repeated(b []byte) bool {
	for _, c := range b[1:] {
		if c != b[0] {
			return false
		}
	}
	return true
}

func (h *heldIndex) has(g uint64) bool {
	_, ok := slices.BinarySearch(h.grams, g)
	return ok
}

// filter is a one-hash bit set over 8-byte pieces: a clear bit means the
// piece is not in the set.
type filter struct {
	bits  []uint64
	shift uint
}

func newFilter(n int) filter {
	size := uint(12) // 4096 bits at least
	for 1<<size < 16*n && size < 24 {
		size++
	}
	return filter{bits: make([]uint64, 1<<size/64), shift: 64 - size}
}

const gramHash = 0x9E3779B97F4A7C15

func (f filter) set(g uint64) {
	h := (g * gramHash) >> f.shift
	f.bits[h>>6] |= 1 << (h & 63)
}

func (f filter) maybe(g uint64) bool {
	if f.bits == nil {
		return false
	}
	h := (g * gramHash) >> f.shift
	return f.bits[h>>6]&(1<<(h&63)) != 0
}

// scan reports, for text, the copies of found values (with their rule) and
// the pieces of held values (as known-secret).
func (s *taintSnap) scan(text []byte, add func(start, end int, rule string)) {
	if s.empty() {
		return
	}
	if s.set != nil {
		s.set.scan(text, add)
	}
	h := s.held
	if h.empty() {
		return
	}
	runStart, runEnd := -1, -1
	next := 0 // the first position whose 8 bytes are not looked up yet
	for i := 0; i+4 <= len(text); i += 4 {
		if !h.filter4.maybe(uint64(binary.LittleEndian.Uint32(text[i:]))) {
			continue
		}
		// Every piece that covers text[i:i+4].
		for p := max(next, i-gramLen+4); p <= i && p+gramLen <= len(text); p++ {
			g := binary.LittleEndian.Uint64(text[p:])
			if h.filter.maybe(g) && h.has(g) {
				if p > runEnd {
					if runStart >= 0 {
						add(runStart, runEnd, "known-secret")
					}
					runStart = p
				}
				runEnd = p + gramLen
			}
		}
		next = i + 1
	}
	if runStart >= 0 {
		add(runStart, runEnd, "known-secret")
	}
	for _, v := range h.short {
		k := rarest(v)
		for off := 0; ; {
			j := indexAt(text, v, k, off)
			if j < 0 {
				break
			}
			add(j, j+len(v), "known-secret")
			off = j + 1
		}
	}
}

// valueSet finds exact values (found secrets) in a text. One or two are
// looked for one by one, by their rarest byte; more, in one pass that
// reads every fourth position: each value is indexed by the 4 bytes at
// each of its first four offsets, so that any copy of it has one of them
// at a position that pass reads.
type valueSet struct {
	values []foundValue
	grams  map[uint32][]valueAt
	filter filter
	few    bool
}

type valueAt struct{ value, off int32 }

const (
	stride    = 4
	fewValues = 2
)

func newValueSet(values []foundValue) *valueSet {
	vs := &valueSet{values: values, few: len(values) <= fewValues}
	if vs.few {
		return vs
	}
	vs.grams = map[uint32][]valueAt{}
	for i, f := range values {
		for j := range stride {
			g := binary.LittleEndian.Uint32(f.value[j:]) // values have 8 bytes or more
			vs.grams[g] = append(vs.grams[g], valueAt{int32(i), int32(j)})
		}
	}
	vs.filter = newFilter(len(vs.grams))
	for g := range vs.grams {
		vs.filter.set(uint64(g))
	}
	return vs
}

func (vs *valueSet) scan(text []byte, add func(start, end int, rule string)) {
	if vs.few {
		for _, f := range vs.values {
			k := rarest(f.value)
			for off := 0; ; {
				j := indexAt(text, f.value, k, off)
				if j < 0 {
					break
				}
				add(j, j+len(f.value), f.rule)
				off = j + 1
			}
		}
		return
	}
	bits, shift, mask := vs.filter.bits, vs.filter.shift, uint64(len(vs.filter.bits)-1)
	for i := 0; i+4 <= len(text); i += stride {
		g := binary.LittleEndian.Uint32(text[i : i+4])
		h := (uint64(g) * gramHash) >> shift
		if bits[(h>>6)&mask]&(1<<(h&63)) == 0 {
			continue
		}
		for _, at := range vs.grams[g] {
			v := vs.values[at.value].value
			if p := i - int(at.off); p >= 0 && p+len(v) <= len(text) && bytes.Equal(text[p:p+len(v)], v) {
				add(p, p+len(v), vs.values[at.value].rule)
			}
		}
	}
}

// tail returns where the longest suffix of text begins that could still
// grow into something scan masks, and the rule it would be masked as: a
// proper prefix, of 4 bytes or more, of a found value, or a piece of 4 to
// 7 bytes of a held value. -1: none.
func (s *taintSnap) tail(text []byte) (int, string) {
	if s.empty() {
		return -1, ""
	}
	if len(s.found) > 0 {
		for i := max(0, len(text)-min(s.maxFound, 1<<12)); i+4 <= len(text); i++ {
			for _, k := range s.prefix4[binary.LittleEndian.Uint32(text[i:])] {
				v := s.found[k].value
				if len(text)-i < len(v) && bytes.HasPrefix(v, text[i:]) {
					return i, s.found[k].rule // the earliest start wins
				}
			}
		}
	}
	if h := s.held; h != nil && len(h.grams4) > 0 {
		for i := max(0, len(text)-(gramLen-1)); i+4 <= len(text); i++ {
			if _, ok := h.grams4[binary.LittleEndian.Uint32(text[i:])]; !ok {
				continue
			}
			for _, v := range s.heldVals {
				if bytes.Contains(v, text[i:]) {
					return i, "known-secret"
				}
			}
		}
	}
	return -1, ""
}
