package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Report is what Verify found.
type Report struct {
	Records   int      // records whose seal is valid
	Files     []string // in chain order
	FirstSeq  int64
	LastSeq   int64
	Problems  []string // tampering: edits, deletions, insertions, reordering
	Truncated string   // a last line cut short: a crash while writing, not tampering
	CleanStop bool     // the chain ends with the gateway's own closing checkpoint
}

// OK reports whether the chain is intact (a truncated tail is not a
// problem: it is what a crash leaves).
func (r Report) OK() bool { return len(r.Problems) == 0 && r.Records > 0 }

type line struct {
	file string
	no   int
	rec  Record
	ok   bool // the seal is valid
	raw  []byte
}

// Verify checks files of one chain: every record's keyed seal, the
// sequence, and every link to the record before. The files may be given in
// any order; they are put in chain order by their first sequence number.
func Verify(key []byte, files ...string) (Report, error) {
	var rep Report
	type fileLines struct {
		name  string
		lines []line
	}
	var all []fileLines
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return rep, err
		}
		fl := fileLines{name: name}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		n := 0
		complete := len(b) == 0 || b[len(b)-1] == '\n'
		total := bytes.Count(b, []byte{'\n'})
		if !complete {
			total++
		}
		for sc.Scan() {
			n++
			raw := append([]byte(nil), sc.Bytes()...)
			rec, err := parse(raw)
			if err != nil {
				if n == total && !complete {
					rep.Truncated = fmt.Sprintf("%s: the last line (%d) is cut short: the gateway stopped while writing it (a crash), or the file was truncated", name, n)
					continue
				}
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s:%d: not a record (edited or corrupted)", name, n))
				continue
			}
			fl.lines = append(fl.lines, line{file: name, no: n, rec: rec, ok: sealed(key, rec), raw: raw})
		}
		if err := sc.Err(); err != nil {
			return rep, fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, fl)
	}
	sort.SliceStable(all, func(i, j int) bool {
		return firstSeq(all[i].lines) < firstSeq(all[j].lines)
	})
	var chain []line
	for _, fl := range all {
		rep.Files = append(rep.Files, fl.name)
		chain = append(chain, fl.lines...)
	}
	var prev *line
	for i := range chain {
		l := &chain[i]
		where := fmt.Sprintf("%s:%d", l.file, l.no)
		seq := seqOf(l.rec)
		if !l.ok {
			// Not sealed with the key: inserted if the chain goes on
			// around it, edited if it stands in the chain's place.
			var next *line
			if i+1 < len(chain) {
				next = &chain[i+1]
			}
			if prev != nil && next != nil && next.ok && prevOf(next.rec) == hashOf(prev.rec) {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: record inserted (it is not sealed, and the chain goes on around it)", where))
			} else {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: record %d was edited (its seal does not match its content)", where, seq))
			}
			continue
		}
		rep.Records++
		if prev == nil {
			rep.FirstSeq = seq
			if seq != 1 && prevOf(l.rec) == "" {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: the chain starts at record %d with no link before it", where, seq))
			}
		} else {
			want := seqOf(prev.rec) + 1
			switch {
			case seq > want && prevOf(l.rec) != hashOf(prev.rec):
				if want == seq-1 {
					rep.Problems = append(rep.Problems, fmt.Sprintf("%s: record %d was deleted before record %d", where, want, seq))
				} else {
					rep.Problems = append(rep.Problems, fmt.Sprintf("%s: records %d-%d were deleted before record %d", where, want, seq-1, seq))
				}
			case seq < want || seq > want:
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: record %d is out of order (expected %d): records were reordered", where, seq, want))
			case prevOf(l.rec) != hashOf(prev.rec):
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: record %d does not link to record %d: records were reordered or replaced", where, seq, want-1))
			}
		}
		rep.LastSeq = seq
		prev = l
	}
	if prev != nil {
		a, _ := prev.rec.Get("event.action")
		why, _ := prev.rec.Get("termgate.checkpoint.reason")
		rep.CleanStop = a == "audit-checkpoint" && why == "close"
	}
	return rep, nil
}

func firstSeq(ls []line) int64 {
	for _, l := range ls {
		if l.ok {
			return seqOf(l.rec)
		}
	}
	return 1 << 62
}

// sealed checks a record's seal: the keyed hash of the record without it.
func sealed(key []byte, r Record) bool {
	h := hashOf(r)
	if h == "" {
		return false
	}
	c := chainOf(r)
	delete(c, "hash")
	canon, err := json.Marshal(r)
	c["hash"] = h
	if err != nil {
		return false
	}
	return seal(key, canon) == h
}
