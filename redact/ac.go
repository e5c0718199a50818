package redact

// matcher is an Aho-Corasick automaton over bytes, compiled to a dense
// DFA, that folds ASCII case: keywords are stored lower-case and the input
// is read as if lower-cased, without copying it. One table lookup per input
// byte; no allocation while scanning.
type matcher struct {
	next [][256]int32 // state × byte → state, while building only
	flat []int32      // the DFA: see newMatcher
	out  [][]int32    // state → keyword ids ending here (its own and its suffixes')
	lens []int        // keyword id → length
}

func newMatcher(keywords []string) *matcher {
	m := &matcher{next: make([][256]int32, 1), out: make([][]int32, 1)}
	fail := []int32{0}
	// Trie.
	for id, kw := range keywords {
		m.lens = append(m.lens, len(kw))
		s := int32(0)
		for i := 0; i < len(kw); i++ {
			c := lower(kw[i])
			if m.next[s][c] == 0 {
				m.next = append(m.next, [256]int32{})
				m.out = append(m.out, nil)
				fail = append(fail, 0)
				m.next[s][c] = int32(len(m.next) - 1)
			}
			s = m.next[s][c]
		}
		m.out[s] = append(m.out[s], int32(id))
	}
	// Failure links, breadth first, folded into the transition table.
	queue := make([]int32, 0, len(m.next))
	for c := 0; c < 256; c++ {
		if t := m.next[0][c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.out[s] = append(m.out[s], m.out[fail[s]]...)
		for c := 0; c < 256; c++ {
			t := m.next[s][c]
			if t != 0 {
				fail[t] = m.next[fail[s]][c]
				queue = append(queue, t)
			} else {
				m.next[s][c] = m.next[fail[s]][c]
			}
		}
	}
	// Upper-case input bytes go where their lower-case twins go.
	for s := range m.next {
		for c := 'A'; c <= 'Z'; c++ {
			m.next[s][c] = m.next[s][c+'a'-'A']
		}
	}
	// The flat table holds, for state s at s*256, the next state's row
	// offset; a transition into a state where keywords end carries the
	// sign bit, so scanning looks for output only there.
	m.flat = make([]int32, len(m.next)*256)
	for s := range m.next {
		for c := range 256 {
			t := m.next[s][c]
			v := t << 8
			if len(m.out[t]) > 0 {
				v |= outFlag
			}
			m.flat[s<<8|c] = v
		}
	}
	m.next = nil
	return m
}

const outFlag = -1 << 31

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scan calls hit with the keyword id and the offset just past it for every
// keyword occurrence in text.
func (m *matcher) scan(text []byte, hit func(id int32, end int)) {
	flat := m.flat
	row := int32(0)
	for i, c := range text {
		row = flat[row&^outFlag|int32(c)]
		if row < 0 {
			for _, id := range m.out[(row&^outFlag)>>8] {
				hit(id, i+1)
			}
		}
	}
}
