package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/termgate/termgate/session"
)

// Long output is never lost and never silently cut. A result keeps the head
// and tail of its output within max_output characters (the line that says
// what was cut included), and says exactly how to read the rest: a
// session_read call in mode log, whose offsets are rows of the session's
// history (session.Session.ReadLog). The same call is in the structured
// result (rest) and in the text rendering's status line, so that even a
// cap too small for the marker leaves the way to the rest.

// readCall is a session_read call that returns a run of a session's
// history.
type readCall struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Mode      string `json:"mode" jsonschema:"log"`
	Offset    int64  `json:"offset" jsonschema:"the first line (terminal row) to read"`
	Lines     int64  `json:"lines" jsonschema:"how many lines (terminal rows) to read"`
}

func (c readCall) String() string {
	b, _ := json.Marshal(c)
	return "session_read " + string(b)
}

// logCall is the call that reads rows [from, to) of a session's history.
func logCall(id string, from, to int64) *readCall {
	return &readCall{SessionID: id, Mode: "log", Offset: from, Lines: max(to-from, 1)}
}

// capOutput keeps the head and tail of text within max characters, the
// marker line included, and puts in the middle a line that says what was
// cut. cut is told which lines of text were cut, [a, b) as line indexes (a
// line partly shown counts as cut), and returns how to read them (or ""),
// and its call. It never fails: a max too small for a marker gets a shorter
// one, and a max of a few characters only a "…".
func capOutput(text string, max int, cut func(a, b int) (hint string, call *readCall)) (string, bool, *readCall) {
	if max < 1 {
		max = 1
	}
	n := utf8.RuneCountInString(text)
	if n <= max {
		return text, false, nil
	}
	lines := strings.Count(text, "\n") + 1
	if cut == nil {
		cut = func(int, int) (string, *readCall) { return "", nil }
	}
	// The marker's longest form, for the budget: the counts and offsets
	// can only be smaller.
	longHint, _ := cut(0, lines)
	if h, _ := cut(lines, lines); len(h) > len(longHint) {
		longHint = h
	}
	forms := []func(lines, chars int, hint string) string{
		func(l, c int, h string) string {
			if h == "" {
				return fmt.Sprintf("[... %d lines (%d characters) cut here ...]\n", l, c)
			}
			return fmt.Sprintf("[... %d lines (%d characters) cut here; %s ...]\n", l, c, h)
		},
		func(l, c int, _ string) string { return fmt.Sprintf("[... %d lines cut ...]\n", l) },
		func(int, int, string) string { return "[…]\n" },
	}
	for _, form := range forms {
		room := max - utf8.RuneCountInString(form(lines, n, longHint)) - 1 // and a "\n" after the head
		if room < 2 {
			continue
		}
		headN := room / 3
		head := cutRunes(text, headN, false)
		if i := strings.LastIndexByte(head, '\n'); i > len(head)/2 {
			head = head[:i+1]
		}
		tail := cutRunes(text, room-utf8.RuneCountInString(head), true)
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
			tail = tail[i+1:]
		}
		middle := text[len(head) : len(text)-len(tail)]
		a := strings.Count(head, "\n")
		b := lines - strings.Count(tail, "\n")
		if strings.HasSuffix(middle, "\n") || middle == "" {
			b-- // the tail starts a line of its own
		}
		hint, call := cut(a, b)
		if !strings.HasSuffix(head, "\n") {
			head += "\n"
		}
		cutLines := strings.Count(middle, "\n")
		if !strings.HasSuffix(middle, "\n") {
			cutLines++
		}
		return head + form(cutLines, utf8.RuneCountInString(middle), hint) + tail, true, call
	}
	// No room even for "[…]": the start of the text and an ellipsis.
	_, call := cut(0, lines)
	return cutRunes(text, max-1, false) + "…", true, call
}

// cutRunes returns the first (or last) n runes of s; nothing for n ≤ 0.
func cutRunes(s string, n int, last bool) string {
	if n <= 0 {
		return ""
	}
	if !last {
		i := 0
		for pos := range s {
			if i == n {
				return s[:pos]
			}
			i++
		}
		return s
	}
	i := 0
	for pos := len(s); pos > 0; {
		_, size := utf8.DecodeLastRuneInString(s[:pos])
		pos -= size
		i++
		if i == n {
			return s[pos:]
		}
	}
	return s
}

// capResult caps a session result's output, already redacted, and says how
// to read what was cut: the rows it came from in the session's history.
// When part of the output had scrolled past the scrollback before the
// result was made, the head comes from the output log.
func (g *gateway) capResult(s *session.Session, r session.Result, text string, maxOut int) (string, bool, *readCall) {
	id := s.ID()
	rowsKnown := len(r.Rows) > 0 && len(r.Rows) == strings.Count(text, "\n")+1 && !r.Screen
	rowCut := func(a, b int) (string, *readCall) {
		if !rowsKnown {
			return g.noRowsHint(r), nil
		}
		to := r.RowsEnd
		if b < len(r.Rows) {
			to = r.Rows[b]
		}
		call := logCall(id, r.Rows[min(a, len(r.Rows)-1)], to)
		return "read them with " + call.String(), call
	}
	if r.LostLines > 0 && !rowsKnown {
		// Where the lines after the lost ones begin is not known: say
		// how to read the lost ones, and cap the rest below that.
		call := logCall(id, r.LostFrom, r.LostFrom+r.LostLines)
		note := fmt.Sprintf("[... %d earlier lines scrolled past the scrollback; read them with %s ...]\n", r.LostLines, call)
		if utf8.RuneCountInString(note) >= maxOut {
			note = ""
		}
		out, _, _ := capOutput(text, maxOut-utf8.RuneCountInString(note), rowCut)
		return note + out, true, call
	}
	if r.LostLines == 0 {
		return capOutput(text, maxOut, rowCut)
	}
	// Rows [LostFrom, Rows[0]) left the scrollback before the result was
	// made: they come from the output log. All of them, when the whole
	// output fits.
	textN := utf8.RuneCountInString(text)
	if room := maxOut - textN - 1; room > 0 {
		page, err := s.ReadLog(r.LostFrom, int(r.Rows[0]-r.LostFrom), room)
		if err == nil && page.From == r.LostFrom && page.Next == r.Rows[0] && !page.Cut {
			if head := g.redactIn(s, page.Text); utf8.RuneCountInString(head)+1+textN <= maxOut {
				if page.Wrapped {
					return head + text, false, nil
				}
				return head + "\n" + text, false, nil
			}
		}
	}
	// Else the head is read from the output log, the tail is the end of
	// text, and the rows between are what is cut.
	worst := fmt.Sprintf("[... %d lines cut here (%d earlier lines are gone: the output log keeps the newest %d bytes, the scrollback %d lines); read them with %s ...]\n",
		r.RowsEnd, r.RowsEnd, int64(1)<<40, g.cfg.Scrollback, logCall(id, r.RowsEnd, 2*r.RowsEnd))
	room := maxOut - utf8.RuneCountInString(worst) - 1
	if room < 4 {
		out, _, call := capOutput(text, maxOut, rowCut)
		if call == nil {
			call = logCall(id, r.LostFrom, r.RowsEnd)
		}
		return out, true, call
	}
	page, err := s.ReadLog(r.LostFrom, int(r.Rows[0]-r.LostFrom), room/3)
	if err != nil {
		g.log.Error("reading a session's output log", "session", id, "err", err)
	}
	head := g.redactIn(s, page.Text)
	if utf8.RuneCountInString(head) > room/3 {
		head = cutRunes(head, room/3, false) // a redaction longer than what it masked
	}
	tail := cutRunes(text, room-utf8.RuneCountInString(head), true)
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	b := len(r.Rows) - strings.Count(tail, "\n") - 1
	if len(tail) < len(text) && text[len(text)-len(tail)-1] != '\n' {
		b++ // the tail's first line is partly cut
	}
	to := r.RowsEnd
	if b < len(r.Rows) {
		to = r.Rows[b]
	}
	from := page.Next
	if page.Text == "" || page.Cut {
		from = page.From // nothing shown of it, or only the start of its first row
	}
	call := logCall(id, from, to)
	var gone string
	if page.From > r.LostFrom {
		if page.Logged {
			gone = fmt.Sprintf(" (%d earlier lines are gone: the output log keeps the newest %d bytes)", page.From-r.LostFrom, page.LogMax)
		} else {
			gone = fmt.Sprintf(" (%d earlier lines are gone: the output log is off and the scrollback keeps %d lines)", page.From-r.LostFrom, g.cfg.Scrollback)
		}
	}
	if head != "" && !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	marker := fmt.Sprintf("[... %d lines cut here%s; read them with %s ...]\n", max(to-from, 0), gone, call)
	return head + marker + tail, true, call
}

// noRowsHint says how to see more of an output whose rows are not known
// (a full-screen program's screen).
func (g *gateway) noRowsHint(r session.Result) string {
	if r.Screen {
		return fmt.Sprintf("the screen is whole with a larger max_output (up to %d)", g.cfg.MaxOutputCeiling)
	}
	return fmt.Sprintf("a larger max_output (up to %d) shows more", g.cfg.MaxOutputCeiling)
}

// sessionLog answers session_read in mode log: a page of the session's
// history.
func (g *gateway) sessionLog(s *session.Session, in readIn, maxOut int) (readOut, error) {
	var out readOut
	if in.Lines < 0 || in.Lines > maxLogLines {
		return out, fmt.Errorf("lines must be 0 (as many as fit in max_output) to %d", maxLogLines)
	}
	n := in.Lines
	if n == 0 {
		n = maxLogLines
	}
	page, err := s.ReadLog(in.Offset, n, maxOut)
	if err != nil {
		return out, err
	}
	// What the page does not show, said first, within the cap too: the
	// page is read again to leave room for it.
	var notes []string
	if in.Offset >= 0 && page.From > in.Offset {
		why := fmt.Sprintf("the output log keeps the newest %d bytes", page.LogMax)
		if !page.Logged {
			why = fmt.Sprintf("the output log is off and the scrollback keeps %d lines", g.cfg.Scrollback)
		}
		notes = append(notes, fmt.Sprintf("[... lines %d to %d are gone: %s ...]", in.Offset, page.From-1, why))
	}
	if page.LogErr != "" {
		notes = append(notes, "[... the output log stopped: "+page.LogErr+" ...]")
	}
	if page.Cut {
		notes = append(notes, fmt.Sprintf("[... line %d is longer than max_output and was cut ...]", page.From))
	}
	note := ""
	if len(notes) > 0 {
		note = strings.Join(notes, "\n") + "\n"
		if room := maxOut - utf8.RuneCountInString(note); room < 1 {
			note = "" // the structured result still says it
		} else if utf8.RuneCountInString(page.Text) > room {
			if page, err = s.ReadLog(page.From, n, room); err != nil {
				return out, err
			}
		}
	}
	st := s.Status()
	text := g.redactIn(s, note+page.Text)
	out.ioOut = ioOut{
		SessionID: s.ID(), Output: text, Complete: true, Alive: st.Alive, Program: st.Program,
		Busy: st.Busy, ExitCode: st.ExitCode, EchoOff: st.EchoOff, Truncated: page.Cut,
	}
	out.Log = &logInfo{Offset: page.From, NextOffset: page.Next, TotalLines: page.Total, FirstLine: page.First, OnDisk: page.Logged, Elided: page.Elided}
	if page.Next < page.Total {
		out.Rest = logCall(s.ID(), page.Next, page.Total)
	}
	return out, nil
}

const (
	maxLogLines = 10_000_000
	logNoteRoom = 200 // for the notes a page of the log may start with
)

// logInfo places a page of a session's history.
type logInfo struct {
	Offset     int64 `json:"offset" jsonschema:"the first line (terminal row) in output, counted from 0, the session's first"`
	NextOffset int64 `json:"next_offset" jsonschema:"the line after the last one in output: pass it as offset to read on"`
	TotalLines int64 `json:"total_lines" jsonschema:"lines in the session's history so far"`
	FirstLine  int64 `json:"first_line" jsonschema:"the oldest line still held; earlier ones were dropped (the output log keeps the newest --output-log-max bytes)"`
	OnDisk     bool  `json:"on_disk" jsonschema:"the history is kept in the output log; false: only the scrollback"`
	Elided     int64 `json:"elided_lines,omitempty" jsonschema:"lines whose text was too much to keep at once"`
}

// outputLogMax is a session's output log bound: none when the operator
// turned it off.
func (g *gateway) outputLogMax() int64 {
	if g.cfg.OutputLogMax == 0 {
		return -1
	}
	return g.cfg.OutputLogMax
}
