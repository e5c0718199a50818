package session

import (
	"strings"
	"testing"
)

// FuzzRepair: whatever a program prints, and whatever span a stream says
// to repair, the screen, its scrollback and the output log (buffered and
// on disk) never panic, keep their shape (rows, lengths), and change
// nothing but into the mask.
func FuzzRepair(f *testing.F) {
	f.Add([]byte("key ghp_abcdefgh\r\nnext line\r\n"), int64(4), int64(16), uint8(3))
	f.Add([]byte("\x1b[2J\x1b[1;5Habc\x1b[?1049hALT\x1b[?1049l\r\n\r\n\r\n"), int64(0), int64(40), uint8(1))
	f.Add([]byte("日本語 wide é\u0301 \x1b]0;title\x07x\r\n"), int64(2), int64(30), uint8(7))
	f.Fuzz(func(t *testing.T, out []byte, start, end int64, flushAt uint8) {
		log, err := openOutputLog(t.TempDir(), MinOutputLogMax)
		if err != nil {
			t.Fatal(err)
		}
		defer log.close()
		sc := NewScreen(4, 12, 8, nil)
		sc.log = log
		sc.trackPrints()
		cut := min(int(flushAt), len(out))
		sc.Write(out[:cut])
		log.mu.Lock()
		log.flushLocked()
		log.mu.Unlock()
		sc.Write(out[cut:])
		before := sc.Render()
		sbBefore := sc.Scrollback(100)
		for _, r := range sc.repair(start, end) {
			log.rewriteRow(r.row, r.text)
		}
		after := sc.Render()
		// What is not a mask is what was there, in order; a wide
		// character masked shows as two masks, a blank masked shows
		// (a row that was blank is not any more).
		same := func(a, b string) bool {
			a, b = strings.ReplaceAll(a, "\n", ""), strings.ReplaceAll(b, "\n", "")
			ra := []rune(a)
			i := 0
			for _, r := range b {
				if r == repairMask {
					continue
				}
				for i < len(ra) && ra[i] != r {
					i++
				}
				if i == len(ra) {
					return false
				}
				i++
			}
			return true
		}
		if !same(before, after) {
			t.Fatalf("the screen changed other than into masks:\n%q\n%q", before, after)
		}
		if sbAfter := sc.Scrollback(100); !same(sbBefore, sbAfter) {
			t.Fatalf("the scrollback changed other than into masks:\n%q\n%q", sbBefore, sbAfter)
		}
		log.mu.Lock()
		rows, _, err := log.rowsLocked(0, 1<<20, 1<<20)
		log.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if strings.ContainsAny(r, "\n\r") {
				t.Fatalf("a log row holds a row end: %q", r)
			}
		}
	})
}
