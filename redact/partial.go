package redact

import (
	"regexp/syntax"
	"unicode/utf8"
)

// A partial matcher answers the question a stream asks before it lets the
// end of an unfinished line go: could a match of this rule, one that would
// still grow if more text came, have begun its secret already? Go's regexp
// cannot say (it has no notion of a match cut short by the end of the
// input), so the rule's program is run here, the Pike way, over the text,
// with every assertion about the unknown next character taken as possibly
// true. A thread still wanting input at the end is a match not yet
// decided; the start of its secret group is where holding must begin.

// pvm is one rule's compiled program for partial matching.
type pvm struct {
	prog *syntax.Prog
	// secret[g]: capture group g may be the secret (the rule's secret
	// group; with none, any group, as gitleaks takes the first non-empty
	// one; with no groups, the whole match: whole).
	secret []bool
	whole  bool
}

func newPVM(re *syntax.Regexp, secretGroup int) (*pvm, error) {
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	n := re.MaxCap()
	v := &pvm{prog: prog, secret: make([]bool, n+1)}
	switch {
	case secretGroup > 0 && secretGroup <= n:
		v.secret[secretGroup] = true
	case n == 0:
		v.whole = true
	default:
		for g := 1; g <= n; g++ {
			v.secret[g] = true
		}
	}
	return v, nil
}

// thread is one path through the program: where its match began and where
// its secret began (-1: not yet).
type thread struct {
	pc         uint32
	start, sec int32
}

// threadList is a sparse set of threads by pc: the first thread to reach
// a pc keeps it.
type threadList struct {
	sparse []uint32
	dense  []thread
}

func (l *threadList) init(n int) {
	if cap(l.sparse) < n {
		l.sparse = make([]uint32, n)
		l.dense = make([]thread, 0, n)
	}
	l.sparse = l.sparse[:n]
	l.dense = l.dense[:0]
}

func (l *threadList) has(pc uint32) bool {
	i := l.sparse[pc]
	return int(i) < len(l.dense) && l.dense[i].pc == pc
}

func (l *threadList) put(t thread) {
	l.sparse[t.pc] = uint32(len(l.dense))
	l.dense = append(l.dense, t)
}

// pvmScratch is reused across runs.
type pvmScratch struct {
	a, b  threadList
	stack []pitem
}

type pitem struct {
	t         thread
	uncertain bool // reached through an assertion about the unknown next rune
}

// holdFrom runs the program over text[from:] (text[:from] is context for
// assertions only), starting a thread at every position (anchored: at from
// only), and returns the smallest secret start among the threads that
// could still go on past the end of text, or -1 when there is none.
func (v *pvm) holdFrom(text []byte, from int, anchored bool, sc *pvmScratch) int {
	n := len(v.prog.Inst)
	sc.a.init(n)
	sc.b.init(n)
	cur, next := &sc.a, &sc.b
	best := -1
	note := func(sec int32) {
		if sec >= 0 && (best < 0 || int(sec) < best) {
			best = int(sec)
		}
	}
	decode := func(i int) (rune, int) {
		if i >= len(text) {
			return -1, 0
		}
		if c := text[i]; c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeRune(text[i:])
	}
	prev := rune(-1)
	if from > 0 {
		prev, _ = utf8.DecodeLastRune(text[:from])
	}
	pos := from
	r, w := decode(pos)
	for {
		atEnd := pos >= len(text)
		// A new thread at every position (unanchored search), after the
		// threads already under way.
		if pos == from || !anchored {
			t := thread{pc: uint32(v.prog.Start), start: int32(pos), sec: -1}
			if v.whole {
				t.sec = int32(pos)
			}
			v.add(cur, t, pos, prev, r, atEnd, sc, note)
		}
		if anchored && len(cur.dense) == 0 && pos > from {
			return best
		}
		if atEnd {
			// Threads waiting for input are matches not yet decided.
			for _, t := range cur.dense {
				switch v.prog.Inst[t.pc].Op {
				case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
					note(t.sec)
				}
			}
			return best
		}
		rn, wn := decode(pos + w)
		nextEnd := pos+w >= len(text)
		next.dense = next.dense[:0]
		for _, t := range cur.dense {
			in := &v.prog.Inst[t.pc]
			switch in.Op {
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				if in.MatchRune(r) {
					t.pc = in.Out
					v.add(next, t, pos+w, r, rn, nextEnd, sc, note)
				}
			}
		}
		cur, next = next, cur
		prev, pos, r, w = r, pos+w, rn, wn
	}
}

// add follows the empty transitions from t at pos (between the runes prev
// and r) into l. At the end of the text every assertion might hold, and a
// thread that reaches a match only through one is a match not yet decided.
func (v *pvm) add(l *threadList, t thread, pos int, prev, r rune, atEnd bool, sc *pvmScratch, note func(int32)) {
	stack := append(sc.stack[:0], pitem{t: t})
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		t := it.t
		if l.has(t.pc) {
			continue
		}
		l.put(t)
		in := &v.prog.Inst[t.pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, pitem{thread{in.Arg, t.start, t.sec}, it.uncertain}, pitem{thread{in.Out, t.start, t.sec}, it.uncertain})
		case syntax.InstNop:
			stack = append(stack, pitem{thread{in.Out, t.start, t.sec}, it.uncertain})
		case syntax.InstCapture:
			sec := t.sec
			if g := int(in.Arg / 2); in.Arg%2 == 0 && g < len(v.secret) && v.secret[g] && sec < 0 {
				sec = int32(pos)
			}
			stack = append(stack, pitem{thread{in.Out, t.start, sec}, it.uncertain})
		case syntax.InstEmptyWidth:
			if atEnd {
				stack = append(stack, pitem{thread{in.Out, t.start, t.sec}, true})
			} else if syntax.EmptyOp(in.Arg)&^syntax.EmptyOpContext(prev, r) == 0 {
				stack = append(stack, pitem{thread{in.Out, t.start, t.sec}, it.uncertain})
			}
		case syntax.InstMatch:
			if atEnd && it.uncertain {
				note(t.sec)
			}
		}
	}
	sc.stack = stack
}
