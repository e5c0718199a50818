package redact

import "bytes"

// undecided is a secret that may have begun at the end of a stream's text
// but cannot be judged until more text comes: where it begins and the
// rule that would mask it.
type undecided struct {
	at   int // -1: none
	rule string
}

func (u *undecided) consider(at int, rule string) {
	if at >= 0 && (u.at < 0 || at < u.at) {
		u.at, u.rule = at, rule
	}
}

// undecidedIn finds the earliest secret at the end of text that is not
// decided yet:
//
//   - a match of a rule that would still grow if more text came, whose
//     secret has begun (ghp_12…, password=hun…, AKIA…, a value on the line
//     after its <xToken>): the rules asked are those whose keyword, or the
//     literal prefix of whose matches, appears close enough to the end for
//     their window to reach it, and each is run as a partial matcher;
//   - the beginning (4 bytes or more) of a value the taint or the engine
//     holds.
//
// A keyword and an assignment without a value yet (password=) hold
// nothing: only a secret's own bytes are held.
func (e *Engine) undecidedIn(text []byte, hits []kwHit, t *Taint, sc *pvmScratch) undecided {
	u := undecided{at: -1}
	if len(text) == 0 {
		return u
	}
	from := max(0, len(text)-e.reach)
	region := text[from:]
	// Newlines near the end: a window spans a bounded number of lines.
	var nls []int // offsets in text, last first
	for i := len(region); len(nls) <= maxWindowLines; {
		j := bytes.LastIndexByte(region[:i], '\n')
		if j < 0 {
			break
		}
		nls = append(nls, from+j)
		i = j
	}
	linesAfter := func(pos int) int { // newlines in text[pos:]
		n := 0
		for n < len(nls) && nls[n] >= pos {
			n++
		}
		return n
	}
	type ask struct{ rule, start int }
	var asks []ask
	for _, h := range hits {
		id, end := h.id, h.end
		if end <= from {
			continue
		}
		kwStart := end - e.m.lens[id]
		for _, ri := range e.holdRules[id] {
			r := e.rules[ri]
			if end+min(r.facts.maxLen, windowAfter) < len(text) || linesAfter(end) > e.linesAfter(r, text, end) {
				continue // its window ends before the text does
			}
			ls := bytes.LastIndexByte(text[:kwStart], '\n') + 1
			start := max(ls, kwStart-windowBefore)
			if r.ident {
				start = identStart(text, ls, kwStart)
			}
			// One run of a rule's program from the earliest start, which
			// covers the later ones; but a rule run anchored (at a name)
			// runs from each name.
			found := false
			for k := range asks {
				if asks[k].rule == int(ri) && (!r.ident || asks[k].start == start) {
					asks[k].start = min(asks[k].start, start)
					found = true
				}
			}
			if !found {
				asks = append(asks, ask{int(ri), start})
			}
		}
	}
	for _, ri := range e.always {
		asks = append(asks, ask{int(ri), from})
	}
	for _, a := range asks {
		r := e.rules[a.rule]
		v := r.partial()
		if v == nil {
			continue
		}
		u.consider(v.holdFrom(text, a.start, r.ident, sc), r.ID)
	}
	u.consider(t.load().tail(text))
	u.consider(e.known.load().tail(text))
	return u
}
