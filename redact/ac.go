package redact

import "unsafe"

// matcher is an Aho-Corasick automaton over bytes, compiled to a dense DFA
// over byte classes, that folds ASCII case: keywords are stored lower-case
// and the input is read as if lower-cased, without copying it. Bytes that
// occur in no keyword share one class, so a state's row is a few dozen
// entries and the hot part of the table stays in the first-level cache.
// Two table lookups per input byte; no allocation while scanning.
type matcher struct {
	class  [256]uint8
	nclass uint32
	// trans holds, for state s at s*nclass, the next state's row offset;
	// a transition into a state where keywords end carries outFlag, so
	// scanning looks for output only there.
	trans  []uint32
	out    [][]int32 // state → keyword ids ending here (its own and its suffixes')
	lens   []int     // keyword id → length
	maxLen int       // the longest keyword
}

const outFlag = 1 << 31

func newMatcher(keywords []string) *matcher {
	m := &matcher{}
	// Byte classes: one per distinct (folded) keyword byte, and class 0
	// for every other byte.
	n := uint8(1)
	for _, kw := range keywords {
		for i := 0; i < len(kw); i++ {
			c := lower(kw[i])
			if m.class[c] == 0 {
				m.class[c] = n
				n++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		m.class[c] = m.class[c+'a'-'A']
	}
	m.nclass = uint32(n)
	nc := int(n)
	next := [][]int32{make([]int32, nc)}
	m.out = [][]int32{nil}
	fail := []int32{0}
	// Trie.
	for id, kw := range keywords {
		m.lens = append(m.lens, len(kw))
		m.maxLen = max(m.maxLen, len(kw))
		s := int32(0)
		for i := 0; i < len(kw); i++ {
			c := m.class[lower(kw[i])]
			if next[s][c] == 0 {
				next = append(next, make([]int32, nc))
				m.out = append(m.out, nil)
				fail = append(fail, 0)
				next[s][c] = int32(len(next) - 1)
			}
			s = next[s][c]
		}
		m.out[s] = append(m.out[s], int32(id))
	}
	// Failure links, breadth first, folded into the transition table.
	// Class 0 never starts or continues a keyword: it always goes home.
	queue := make([]int32, 0, len(next))
	for c := 1; c < nc; c++ {
		if t := next[0][c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.out[s] = append(m.out[s], m.out[fail[s]]...)
		for c := 1; c < nc; c++ {
			t := next[s][c]
			if t != 0 {
				fail[t] = next[fail[s]][c]
				queue = append(queue, t)
			} else {
				next[s][c] = next[fail[s]][c]
			}
		}
	}
	m.trans = make([]uint32, len(next)*nc)
	for s := range next {
		for c := range nc {
			t := next[s][c]
			v := uint32(t) * m.nclass
			if len(m.out[t]) > 0 {
				v |= outFlag
			}
			m.trans[s*nc+c] = v
		}
	}
	return m
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scan calls hit with the keyword id and the offset just past it for every
// keyword occurrence in text, in order. A long text is read as four
// parts at once: each byte costs two dependent loads, and four independent
// chains of them run side by side in the processor.
func (m *matcher) scan(text []byte, hit func(id int32, end int)) {
	const parts = 4
	if len(text) < 4096 {
		m.scanPart(text, 0, hit)
		return
	}
	overlap := m.maxLen - 1
	q := len(text) / parts
	// Part j reads text[from[j]:to[j]]; from[j] is overlap before where it
	// reports from, so that a keyword across a boundary is seen whole.
	var from, to, report [parts]int
	for j := range parts {
		report[j] = j * q
		from[j] = max(0, report[j]-overlap)
		to[j] = (j + 1) * q
	}
	to[parts-1] = len(text)
	n := q                  // every part has at least q bytes from its start
	var hits [parts][]int64 // id<<32 | end
	trans, class := m.trans, &m.class
	t0, t1, t2, t3 := text[from[0]:from[0]+n], text[from[1]:from[1]+n], text[from[2]:from[2]+n], text[from[3]:from[3]+n]
	t1, t2, t3 = t1[:len(t0)], t2[:len(t0)], t3[:len(t0)] // one length: one bounds check
	s0, s1, s2, s3 := uint32(0), uint32(0), uint32(0), uint32(0)
	tp := unsafe.Pointer(unsafe.SliceData(trans))
	for i := range t0 {
		// Every value in trans is the offset of a row in trans, and a
		// class is below nclass: the loads stay inside it.
		s0 = *(*uint32)(unsafe.Add(tp, 4*uintptr(s0+uint32(class[t0[i]]))))
		s1 = *(*uint32)(unsafe.Add(tp, 4*uintptr(s1+uint32(class[t1[i]]))))
		s2 = *(*uint32)(unsafe.Add(tp, 4*uintptr(s2+uint32(class[t2[i]]))))
		s3 = *(*uint32)(unsafe.Add(tp, 4*uintptr(s3+uint32(class[t3[i]]))))
		if (s0|s1|s2|s3)&outFlag != 0 {
			s0 = m.report(&hits[0], s0, from[0]+i+1)
			s1 = m.report(&hits[1], s1, from[1]+i+1)
			s2 = m.report(&hits[2], s2, from[2]+i+1)
			s3 = m.report(&hits[3], s3, from[3]+i+1)
		}
	}
	st := [parts]uint32{s0, s1, s2, s3}
	for j := range parts {
		// The rest of the part, on its own.
		s := st[j]
		for i := from[j] + n; i < to[j]; i++ {
			s = trans[s+uint32(class[text[i]])]
			if s&outFlag != 0 {
				s &^= outFlag
				for _, id := range m.out[s/m.nclass] {
					hits[j] = append(hits[j], int64(id)<<32|int64(i+1))
				}
			}
		}
		for _, h := range hits[j] {
			if end := int(h & (1<<32 - 1)); end > report[j] || j == 0 {
				hit(int32(h>>32), end)
			}
		}
	}
}

// report records the keywords that end in state s, if any, and returns s
// without its output flag.
func (m *matcher) report(hits *[]int64, s uint32, end int) uint32 {
	if s&outFlag == 0 {
		return s
	}
	s &^= outFlag
	for _, id := range m.out[s/m.nclass] {
		*hits = append(*hits, int64(id)<<32|int64(end))
	}
	return s
}

func (m *matcher) scanPart(text []byte, base int, hit func(id int32, end int)) {
	trans, class := m.trans, &m.class
	s := uint32(0)
	for i, c := range text {
		s = trans[s+uint32(class[c])]
		if s&outFlag != 0 {
			s &^= outFlag
			for _, id := range m.out[s/m.nclass] {
				hit(id, base+i+1)
			}
		}
	}
}
