package session

import (
	"strings"
	"unicode/utf8"
)

// A session's history is everything its main screen showed, one row at a
// time, as a human reads it: the rows that scrolled off the top (in the
// output log on disk, or only the scrollback when the log is off) and then
// the main screen's rows as they are now. Rows are numbered from 0, the
// first row the session ever printed, with the screen's absolute line
// numbers, so that a position in a result is a position in the history.

// OutputRows places a result's Output in the session's history.
type OutputRows struct {
	// Rows holds the row each line of Output begins on.
	Rows []int64
	// RowsEnd is the row after the one Output's last line ends on.
	RowsEnd int64
	// LostFrom is, when LostLines is not 0, the first of the rows of the
	// output that had left the scrollback before the result was made:
	// rows [LostFrom, LostFrom+LostLines) come before Output, and the
	// output log may still hold them.
	LostFrom int64
}

// outputRowsLocked places output, which is Text(from, to) less the lines in
// skipped at its start (echo) and whatever its end lost (a prompt, blank
// lines). s.mu is held.
func (s *Session) outputRowsLocked(from, to Pos, lost int64, skipped, output string) OutputRows {
	var o OutputRows
	if lost > 0 {
		o.LostFrom = from.Line
	}
	n := strings.Count(output, "\n") + 1
	o.Rows, o.RowsEnd = s.screen.LineRows(from, to, strings.Count(skipped, "\n"), n)
	return o
}

// ScrollbackRows returns the last n lines of history and screen, as
// Scrollback does, and where they sit in the history.
func (s *Session) ScrollbackRows(n int) (string, OutputRows) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, rows, end := s.screen.ScrollbackRows(n)
	return text, OutputRows{Rows: rows, RowsEnd: end}
}

// openOutputLog gives the session its output log, unless its spec says
// none. The file is made before the program starts.
func (s *Session) openOutputLog() error {
	max := s.spec.OutputLogMax
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = DefaultOutputLogMax
	}
	l, err := openOutputLog(s.privDir, max)
	if err != nil {
		return err
	}
	s.outlog = l
	s.screen.log = l
	return nil
}

// flushOutputLog writes out the rows the screen buffered, when there are
// many. It runs on the reader's schedule, without s.mu.
func (s *Session) flushOutputLog() {
	if s.outlog != nil {
		s.outlog.flushIfLarge()
	}
}

// closeOutputLog removes the output log.
func (s *Session) closeOutputLog() {
	if s.outlog != nil {
		_ = s.outlog.close()
	}
}

// LogPage is a run of rows of a session's history.
type LogPage struct {
	Text    string // the rows as a human reads them: soft wraps joined, "\n" at line ends
	From    int64  // the first row in Text
	Next    int64  // the row after the last one in Text: where the next page starts
	Wrapped bool   // the last row in Text runs on into the next one (a soft wrap)
	Total   int64  // rows in the history so far
	First   int64  // the oldest row still held; rows before it were dropped
	Cut     bool   // the first row alone was over the budget, and Text holds its start
	Logged  bool   // the history is kept on disk (the output log); else only the scrollback
	LogMax  int64  // the output log's bound in bytes
	Elided  int64  // rows whose text the log could not keep (too much output at once)
	LogErr  string // why the output log stopped, if it did
	Dropped int64  // bytes of history the log has dropped to stay within LogMax
}

// ReadLog returns up to n rows of the session's history from row from (a
// negative from counts back from the end: -100 is the last hundred rows),
// as many as fit in budget characters. It reads the session's output log
// when it has one, else its scrollback, and then the main screen. Paging
// with Next from the start reads every row the session printed that is
// still held, exactly once.
func (s *Session) ReadLog(from int64, n, budget int) (LogPage, error) {
	budget = max(budget, 1)
	n = max(n, 0)
	s.mu.Lock()
	pushed := s.screen.PushedLines()
	screenRows, screenWraps := s.screen.MainRows()
	page := LogPage{Total: pushed + int64(len(screenRows)), First: s.screen.FirstLine()}
	if from < 0 {
		from = max(page.Total+from, 0)
	}
	// Without a log, the scrollback's rows, copied while the lock is held
	// (strings: only their headers are copied).
	var ringRows []string
	var ringWraps []bool
	if s.outlog == nil {
		start := max(from, page.First)
		for r := start; r < pushed && r < start+int64(n) && len(ringRows) < budget+1; r++ {
			t, w, _ := s.screen.lineAt(r)
			ringRows, ringWraps = append(ringRows, t), append(ringWraps, w)
		}
	}
	s.mu.Unlock()

	var rows []string
	var wraps []bool
	start := from
	if l := s.outlog; l != nil {
		l.mu.Lock()
		l.flushLocked()
		page.Logged, page.LogMax, page.First, page.Dropped = true, l.max, l.first, l.start
		if l.err != nil {
			page.LogErr = l.err.Error()
		}
		l.bufMu.Lock()
		page.Elided = l.elided
		l.bufMu.Unlock()
		start = max(from, page.First)
		if start < pushed {
			t, w, err := l.rowsLocked(start, min(start+int64(n), pushed), budget)
			if err != nil {
				l.mu.Unlock()
				return page, err
			}
			rows, wraps = t, w
		}
		l.mu.Unlock()
	} else {
		start = max(from, page.First)
		rows, wraps = ringRows, ringWraps
	}
	// Then the main screen, for rows not yet scrolled off.
	if next := start + int64(len(rows)); next >= pushed {
		for r := next; r < page.Total && r < start+int64(n); r++ {
			rows = append(rows, screenRows[r-pushed])
			wraps = append(wraps, screenWraps[r-pushed])
		}
	}
	text, used, cut := joinRows(rows, wraps, budget)
	page.Text, page.From, page.Next, page.Cut = text, start, start+int64(used), cut
	if used > 0 {
		page.Wrapped = wraps[used-1]
	}
	if start >= page.Total {
		page.From, page.Next = page.Total, page.Total
	}
	return page, nil
}

// joinRows joins rows as a human reads them: a row that wrapped runs on
// into the next, a row that ends its line is followed by "\n" (not the last
// one), and blanks before a line's end are dropped. It stops before the row
// that would take the text past budget characters, and returns how many
// rows it used; a first row longer than budget is cut to it.
func joinRows(rows []string, wraps []bool, budget int) (string, int, bool) {
	var b []byte
	lineStart, runes := 0, 0
	for i, r := range rows {
		sep := 0
		if i > 0 && !wraps[i-1] {
			sep = 1
		}
		n := utf8.RuneCountInString(r)
		if runes+sep+n > budget {
			if i == 0 {
				b = append(b, cutString(r, budget)...)
				return string(b), 1, true
			}
			return string(b), i, false
		}
		if sep == 1 {
			b = append(b, '\n')
			lineStart = len(b)
		}
		b = append(b, r...)
		runes += sep + n
		if !wraps[i] {
			b = trimBlanks(b, lineStart)
		}
	}
	return string(b), len(rows), false
}

// cutString returns the first n runes of s.
func cutString(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
