package session

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// wideTail fills the right half of a double-width character.
const wideTail rune = -1

// DefaultScrollback is the number of lines a screen keeps above its visible
// rows when the caller does not choose.
const DefaultScrollback = 10000

// A Screen is a headless VT100/xterm screen: the visible grid, the alternate
// screen, a bounded scrollback and the terminal modes that change what keys
// send. It answers the queries programs make of a terminal (primary and
// secondary device attributes, cursor position and status reports, window
// size) through the reply function so that they never stall waiting for a
// terminal that is not there.
//
// Screen is not safe for concurrent use; Session guards it with its lock.
//
// Lines have absolute numbers: the first line that ever scrolled off is 0, so
// a position taken before a command ran still names the same line after the
// screen has scrolled, as long as it is within the scrollback.
type Screen struct {
	rows, cols int
	parser     *ansi.Parser
	reply      func([]byte)

	main, alt []*vline
	useAlt    bool

	x, y        int
	pendingWrap bool
	saved       [2]cursorState // main, alt

	top, bottom int // scroll region, inclusive

	// Modes.
	appCursor   bool // DECCKM: arrows send ESC O x
	appKeypad   bool
	autowrap    bool
	cursorShown bool
	bracketed   bool
	insertMode  bool
	lineDrawing bool // G0 is DEC special graphics

	lastPrint rune

	sb        []sbLine // ring of lines that scrolled off the main screen
	sbStart   int      // index of the oldest line in sb
	sbLen     int
	sbCap     int
	sbDropped int64 // lines dropped off the top of the scrollback

	title string
	cwd   string

	marks []Mark // shell-integration marks, oldest first, bounded
	bSeen bool   // an input-start mark ever arrived: the prompt carries marks
	markN int64  // marks ever seen
}

type vline struct {
	cells   []rune
	wrapped bool // the line continues on the next one (soft wrap)
}

type sbLine struct {
	text    string
	wrapped bool
}

type cursorState struct {
	x, y        int
	lineDrawing bool
	set         bool
}

// Pos is an absolute position on a screen: Line counts from the first line
// that ever entered the scrollback.
type Pos struct {
	Line int64
	Col  int
}

// Before reports whether p comes before q.
func (p Pos) Before(q Pos) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Col < q.Col
}

// MarkKind is the letter of an OSC 133 shell-integration mark.
type MarkKind byte

// The OSC 133 marks (FinalTerm semantic prompts).
const (
	MarkPromptStart  MarkKind = 'A' // the prompt is about to be drawn
	MarkInputStart   MarkKind = 'B' // the prompt ended; typed input follows
	MarkOutputStart  MarkKind = 'C' // the command line was accepted; output follows
	MarkCommandEnded MarkKind = 'D' // the command finished; ExitCode is set
)

// A Mark is one OSC 133 mark with where the cursor was when it arrived.
type Mark struct {
	Seq      int64 // 1 for the first mark a screen ever saw
	Kind     MarkKind
	Pos      Pos
	ExitCode int    // for MarkCommandEnded
	HasCode  bool   // the mark carried an exit code
	OnAlt    bool   // arrived while the alternate screen was shown
	Extra    string // the mark's other parameters, e.g. "k=s" for a secondary prompt
}

const maxMarks = 256

// NewScreen returns a screen of rows × cols with the given scrollback
// capacity (DefaultScrollback when ≤ 0). reply receives the answers to
// terminal queries; it may be nil.
func NewScreen(rows, cols, scrollback int, reply func([]byte)) *Screen {
	if scrollback <= 0 {
		scrollback = DefaultScrollback
	}
	s := &Screen{
		rows: rows, cols: cols,
		reply:       reply,
		autowrap:    true,
		cursorShown: true,
		sb:          make([]sbLine, 0, min(scrollback, 256)),
		sbCap:       scrollback,
	}
	s.main = newGrid(rows, cols)
	s.alt = newGrid(rows, cols)
	s.top, s.bottom = 0, rows-1
	s.parser = ansi.NewParser()
	s.parser.SetHandler(ansi.Handler{
		Print:     s.print,
		Execute:   s.execute,
		HandleCsi: s.csi,
		HandleEsc: s.esc,
		HandleOsc: s.osc,
	})
	return s
}

func newGrid(rows, cols int) []*vline {
	g := make([]*vline, rows)
	for i := range g {
		g[i] = newLine(cols)
	}
	return g
}

func newLine(cols int) *vline {
	c := make([]rune, cols)
	for i := range c {
		c[i] = ' '
	}
	return &vline{cells: c}
}

// Write feeds terminal output to the screen. It never fails.
func (s *Screen) Write(p []byte) (int, error) {
	defer func() {
		if r := recover(); r != nil {
			// The parser guards an invariant with a panic; a hostile byte
			// stream must not take the server down. Start parsing afresh.
			s.parser.Reset()
		}
	}()
	s.parser.Parse(p)
	return len(p), nil
}

// Size returns the screen's rows and columns.
func (s *Screen) Size() (rows, cols int) { return s.rows, s.cols }

// AltScreen reports whether the alternate screen is shown (vim, less, top).
func (s *Screen) AltScreen() bool { return s.useAlt }

// AppCursor reports whether the terminal is in application cursor-key mode.
func (s *Screen) AppCursor() bool { return s.appCursor }

// AppKeypad reports whether the keypad is in application mode.
func (s *Screen) AppKeypad() bool { return s.appKeypad }

// BracketedPaste reports whether the program asked for bracketed paste.
func (s *Screen) BracketedPaste() bool { return s.bracketed }

// Title returns the last window title the program set.
func (s *Screen) Title() string { return s.title }

// Cursor returns the cursor's row and column on the visible screen.
func (s *Screen) Cursor() (row, col int) { return s.y, s.x }

// CursorPos returns the cursor's absolute position.
func (s *Screen) CursorPos() Pos { return Pos{Line: s.absRow(s.y), Col: s.x} }

// Marks returns the shell-integration marks with Seq > after.
func (s *Screen) Marks(after int64) []Mark {
	var out []Mark
	for _, m := range s.marks {
		if m.Seq > after {
			out = append(out, m)
		}
	}
	return out
}

// PromptMarks reports whether the prompt has ever carried an input-start
// mark, so that one can be waited for after each command.
func (s *Screen) PromptMarks() bool { return s.bSeen }

// MarkSeq returns the sequence number of the newest mark.
func (s *Screen) MarkSeq() int64 { return s.markN }

func (s *Screen) grid() []*vline {
	if s.useAlt {
		return s.alt
	}
	return s.main
}

// absRow turns a visible row into an absolute line number. The alternate
// screen has no scrollback; its rows are numbered as if it sat where the
// main screen is.
func (s *Screen) absRow(y int) int64 { return s.sbDropped + int64(s.sbLen) + int64(y) }

// FirstLine returns the absolute number of the oldest line still held.
func (s *Screen) FirstLine() int64 { return s.sbDropped }

// EndPos returns the position just past the last non-blank cell of the
// screen, or the cursor when it is further down.
func (s *Screen) EndPos() Pos { return s.CursorPos() }

// lineAt returns the text and soft-wrap flag of an absolute line of the main
// screen (or the visible alternate screen), and whether it is still held.
func (s *Screen) lineAt(n int64) (string, bool, bool) {
	if n < s.sbDropped {
		return "", false, false
	}
	i := n - s.sbDropped
	if i < int64(s.sbLen) {
		l := s.sb[(s.sbStart+int(i))%len(s.sb)]
		return l.text, l.wrapped, true
	}
	y := int(i - int64(s.sbLen))
	if y >= s.rows {
		return "", false, false
	}
	l := s.grid()[y]
	return cellsText(l.cells), l.wrapped, true
}

func cellsText(cells []rune) string {
	var b strings.Builder
	for _, r := range cells {
		if r == wideTail {
			continue
		}
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), " ")
}

// Text returns the text between two absolute positions as a human would read
// it: soft-wrapped lines joined, trailing blanks trimmed, lines separated by
// "\n". Lines no longer held are skipped; lost reports how many.
func (s *Screen) Text(from, to Pos) (text string, lost int64) {
	if to.Before(from) {
		return "", 0
	}
	if from.Line < s.sbDropped {
		lost = s.sbDropped - from.Line
		from = Pos{Line: s.sbDropped}
	}
	var b strings.Builder
	for n := from.Line; n <= to.Line; n++ {
		t, wrapped, ok := s.lineAt(n)
		if !ok {
			break
		}
		rs := []rune(t)
		startCol, endCol := 0, len(rs)
		if n == from.Line {
			startCol = colToIndex(t, from.Col)
		}
		if n == to.Line {
			endCol = colToIndex(t, to.Col)
		}
		if startCol < endCol {
			b.WriteString(string(rs[startCol:endCol]))
		}
		if n < to.Line && !wrapped {
			b.WriteByte('\n')
		}
	}
	return b.String(), lost
}

// colToIndex maps a screen column to a rune index in a line's text, counting
// wide characters as two columns.
func colToIndex(t string, col int) int {
	w, i := 0, 0
	for _, r := range t {
		if w >= col {
			return i
		}
		w += runewidth.RuneWidth(r)
		i++
	}
	return i
}

// LineText returns the text of the cursor's line up to the cursor: what a
// prompt looks like while a program waits for input.
func (s *Screen) LineText() string {
	l := s.grid()[s.y]
	end := min(s.x, len(l.cells))
	var b strings.Builder
	for _, r := range l.cells[:end] {
		if r != wideTail {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Render returns the visible screen, one line per row, trailing blanks
// trimmed and trailing empty rows dropped (Cursor tells where the cursor is).
func (s *Screen) Render() string {
	g := s.grid()
	lines := make([]string, len(g))
	last := -1
	for i, l := range g {
		lines[i] = cellsText(l.cells)
		if lines[i] != "" {
			last = i
		}
	}
	return strings.Join(lines[:last+1], "\n")
}

// Scrollback returns the last n lines of the main screen's history and the
// visible main screen, soft wraps joined.
func (s *Screen) Scrollback(n int) string {
	end := s.sbDropped + int64(s.sbLen) + int64(s.rows) - 1
	// Drop trailing blank rows of the main screen.
	for end > s.sbDropped+int64(s.sbLen) {
		t, _, _ := s.mainLineAt(end)
		if t != "" {
			break
		}
		end--
	}
	var lines []string
	var cur strings.Builder
	for l := end; l >= s.sbDropped && len(lines) < n; l-- {
		t, _, _ := s.mainLineAt(l)
		_, prevWrapped, ok := s.mainLineAt(l - 1)
		cur.Reset()
		cur.WriteString(t)
		for ok && prevWrapped && l-1 >= s.sbDropped {
			l--
			pt, _, _ := s.mainLineAt(l)
			cur.Reset()
			cur.WriteString(pt + t)
			t = pt + t
			_, prevWrapped, ok = s.mainLineAt(l - 1)
		}
		lines = append(lines, cur.String())
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return strings.Join(lines, "\n")
}

func (s *Screen) mainLineAt(n int64) (string, bool, bool) {
	if s.useAlt && n >= s.sbDropped+int64(s.sbLen) {
		y := int(n - s.sbDropped - int64(s.sbLen))
		if y < 0 || y >= s.rows {
			return "", false, false
		}
		return cellsText(s.main[y].cells), s.main[y].wrapped, true
	}
	return s.lineAt(n)
}

// Resize changes the screen's size. Content is kept where it fits; rows cut
// from the top of the main screen go to the scrollback.
func (s *Screen) Resize(rows, cols int) {
	if rows == s.rows && cols == s.cols {
		return
	}
	resizeGrid := func(g []*vline, push bool) []*vline {
		for _, l := range g {
			if len(l.cells) < cols {
				for len(l.cells) < cols {
					l.cells = append(l.cells, ' ')
				}
			} else {
				l.cells = l.cells[:cols]
				if cols > 0 && l.cells[cols-1] != wideTail && cols >= 2 && runewidth.RuneWidth(l.cells[cols-1]) == 2 {
					l.cells[cols-1] = ' '
				}
			}
		}
		for len(g) > rows {
			// Drop a blank row below the cursor first, else push the top.
			if last := len(g) - 1; last > s.y && cellsText(g[last].cells) == "" {
				g = g[:last]
				continue
			}
			if push {
				s.pushScrollback(g[0])
			}
			g = g[1:]
			if s.y > 0 {
				s.y--
			}
		}
		for len(g) < rows {
			g = append(g, newLine(cols))
		}
		return g
	}
	y := s.y
	s.main = resizeGrid(s.main, true)
	if s.useAlt {
		s.y = y
	}
	s.alt = resizeGrid(s.alt, false)
	s.rows, s.cols = rows, cols
	s.top, s.bottom = 0, rows-1
	s.x = min(s.x, cols-1)
	s.y = min(max(s.y, 0), rows-1)
	s.pendingWrap = false
}

func (s *Screen) pushScrollback(l *vline) {
	sl := sbLine{text: cellsText(l.cells), wrapped: l.wrapped}
	if s.sbLen < s.sbCap {
		if len(s.sb) < s.sbCap && s.sbLen == len(s.sb) {
			s.sb = append(s.sb, sl)
			s.sbLen++
			return
		}
		s.sb[(s.sbStart+s.sbLen)%len(s.sb)] = sl
		s.sbLen++
		return
	}
	s.sb[s.sbStart] = sl
	s.sbStart = (s.sbStart + 1) % len(s.sb)
	s.sbDropped++
}

// ---- parser callbacks ----

var decGraphics = map[rune]rune{
	'j': '┘', 'k': '┐', 'l': '┌', 'm': '└', 'n': '┼', 'q': '─', 't': '├',
	'u': '┤', 'v': '┴', 'w': '┬', 'x': '│', 'a': '▒', '`': '◆', 'f': '°',
	'g': '±', '~': '·', 'o': '⎺', 's': '⎽', 'y': '≤', 'z': '≥', '{': 'π',
	'|': '≠', '}': '£',
}

func (s *Screen) print(r rune) {
	if s.lineDrawing {
		if g, ok := decGraphics[r]; ok {
			r = g
		}
	}
	w := runewidth.RuneWidth(r)
	if w == 0 {
		return // combining marks and zero-width characters are not kept
	}
	if s.pendingWrap || (w == 2 && s.x == s.cols-1) {
		if s.autowrap {
			s.grid()[s.y].wrapped = true
			s.x = 0
			s.lineFeed()
		}
		s.pendingWrap = false
	}
	if s.insertMode {
		s.insertChars(w)
	}
	l := s.grid()[s.y]
	s.clearWideAt(l, s.x)
	l.cells[s.x] = r
	if w == 2 && s.x+1 < s.cols {
		s.clearWideAt(l, s.x+1)
		l.cells[s.x+1] = wideTail
	}
	s.lastPrint = r
	s.x += w
	if s.x >= s.cols {
		s.x = s.cols - 1
		s.pendingWrap = true
	}
}

// clearWideAt blanks the other half of a wide character that a write at col
// is about to split.
func (s *Screen) clearWideAt(l *vline, col int) {
	if col < 0 || col >= len(l.cells) {
		return
	}
	if l.cells[col] == wideTail && col > 0 {
		l.cells[col-1] = ' '
	} else if col+1 < len(l.cells) && l.cells[col+1] == wideTail {
		l.cells[col+1] = ' '
	}
}

func (s *Screen) execute(b byte) {
	switch b {
	case '\r':
		s.x = 0
		s.pendingWrap = false
	case '\n', '\v', '\f':
		s.lineFeed()
	case '\b':
		if s.pendingWrap {
			s.pendingWrap = false
		} else if s.x > 0 {
			s.x--
		}
	case '\t':
		s.x = min((s.x/8+1)*8, s.cols-1)
	case 0x0e: // SO: G1, treat as line drawing
	case 0x0f: // SI
	}
}

// lineFeed moves the cursor down, scrolling the region at its bottom.
func (s *Screen) lineFeed() {
	s.pendingWrap = false
	if s.y == s.bottom {
		s.scrollUp(1)
		return
	}
	if s.y < s.rows-1 {
		s.y++
	}
}

func (s *Screen) scrollUp(n int) { s.scroll(n, true) }

// scroll moves the scroll region up n lines; lines leaving the top of the
// main screen enter the scrollback when keep is set.
func (s *Screen) scroll(n int, keep bool) {
	g := s.grid()
	for range n {
		first := g[s.top]
		if keep && !s.useAlt && s.top == 0 {
			s.pushScrollback(first)
		}
		copy(g[s.top:s.bottom], g[s.top+1:s.bottom+1])
		// Reuse the dropped line's storage for the new blank line.
		first.wrapped = false
		for i := range first.cells {
			first.cells[i] = ' '
		}
		g[s.bottom] = first
	}
}

func (s *Screen) scrollDown(n int) {
	g := s.grid()
	for range n {
		last := g[s.bottom]
		copy(g[s.top+1:s.bottom+1], g[s.top:s.bottom])
		last.wrapped = false
		for i := range last.cells {
			last.cells[i] = ' '
		}
		g[s.top] = last
	}
}

func (s *Screen) insertChars(n int) {
	l := s.grid()[s.y]
	if s.x >= s.cols {
		return
	}
	n = min(n, s.cols-s.x)
	copy(l.cells[s.x+n:], l.cells[s.x:s.cols-n])
	for i := s.x; i < s.x+n; i++ {
		l.cells[i] = ' '
	}
}

func (s *Screen) eraseCells(l *vline, from, to int) {
	from, to = max(from, 0), min(to, len(l.cells))
	for i := from; i < to; i++ {
		l.cells[i] = ' '
	}
	if from > 0 && from < len(l.cells) && l.cells[from-1] != wideTail && runewidth.RuneWidth(l.cells[from-1]) == 2 {
		l.cells[from-1] = ' '
	}
}

func (s *Screen) setCursor(row, col int) {
	s.y = min(max(row, 0), s.rows-1)
	s.x = min(max(col, 0), s.cols-1)
	s.pendingWrap = false
}

func param(p ansi.Params, i, def int) int {
	v, _, _ := p.Param(i, def)
	if v == 0 && def != 0 {
		return def
	}
	return v
}

func (s *Screen) csi(cmd ansi.Cmd, p ansi.Params) {
	g := s.grid()
	switch cmd.Prefix() {
	case '?':
		switch cmd.Final() {
		case 'h', 'l':
			on := cmd.Final() == 'h'
			for i := range p {
				s.privateMode(p[i].Param(0), on)
			}
		case 'n':
			if param(p, 0, 0) == 6 {
				s.send(fmt.Sprintf("\x1b[?%d;%dR", s.y+1, s.x+1))
			}
		}
		return
	case '>':
		if cmd.Final() == 'c' {
			s.send("\x1b[>1;95;0c") // secondary DA: a VT220-class xterm
		}
		return
	case '=', '<':
		return
	}
	if cmd.Intermediate() != 0 {
		return // DECSCUSR (" q"), DECSTR ("!p") and friends change nothing we show
	}
	switch cmd.Final() {
	case 'A':
		s.setCursor(max(s.y-param(p, 0, 1), min(s.top, s.y)), s.x)
	case 'B', 'e':
		s.setCursor(min(s.y+param(p, 0, 1), max(s.bottom, s.y)), s.x)
	case 'C', 'a':
		s.setCursor(s.y, s.x+param(p, 0, 1))
	case 'D':
		s.setCursor(s.y, s.x-param(p, 0, 1))
	case 'E':
		s.setCursor(s.y+param(p, 0, 1), 0)
	case 'F':
		s.setCursor(s.y-param(p, 0, 1), 0)
	case 'G', '`':
		s.setCursor(s.y, param(p, 0, 1)-1)
	case 'H', 'f':
		s.setCursor(param(p, 0, 1)-1, param(p, 1, 1)-1)
	case 'd':
		s.setCursor(param(p, 0, 1)-1, s.x)
	case 'J':
		switch param(p, 0, 0) {
		case 0:
			s.eraseCells(g[s.y], s.x, s.cols)
			for i := s.y + 1; i < s.rows; i++ {
				s.eraseCells(g[i], 0, s.cols)
				g[i].wrapped = false
			}
		case 1:
			for i := 0; i < s.y; i++ {
				s.eraseCells(g[i], 0, s.cols)
			}
			s.eraseCells(g[s.y], 0, s.x+1)
		case 2:
			// Keep what a clear wipes from view: push the used rows to the
			// scrollback as xterm's scrollback-on-clear does.
			if !s.useAlt {
				last := -1
				for i, l := range g {
					if cellsText(l.cells) != "" {
						last = i
					}
				}
				for i := 0; i <= last; i++ {
					s.pushScrollback(g[i])
				}
			}
			for _, l := range g {
				s.eraseCells(l, 0, s.cols)
				l.wrapped = false
			}
		case 3:
			// Erase saved lines: keep them; the scrollback is the record the
			// agent reads, and a program should not be able to hide output.
		}
	case 'K':
		switch param(p, 0, 0) {
		case 0:
			s.eraseCells(g[s.y], s.x, s.cols)
			g[s.y].wrapped = false
		case 1:
			s.eraseCells(g[s.y], 0, s.x+1)
		case 2:
			s.eraseCells(g[s.y], 0, s.cols)
			g[s.y].wrapped = false
		}
	case 'L':
		if s.y >= s.top && s.y <= s.bottom {
			top := s.top
			s.top = s.y
			s.scrollDown(min(param(p, 0, 1), s.bottom-s.y+1))
			s.top = top
		}
	case 'M':
		if s.y >= s.top && s.y <= s.bottom {
			top := s.top
			s.top = s.y
			// Deleted lines never enter the scrollback.
			s.scroll(min(param(p, 0, 1), s.bottom-s.y+1), false)
			s.top = top
		}
	case 'P':
		l := g[s.y]
		n := min(param(p, 0, 1), s.cols-s.x)
		copy(l.cells[s.x:], l.cells[s.x+n:])
		for i := s.cols - n; i < s.cols; i++ {
			l.cells[i] = ' '
		}
	case '@':
		s.insertChars(param(p, 0, 1))
	case 'X':
		s.eraseCells(g[s.y], s.x, s.x+param(p, 0, 1))
	case 'S':
		s.scrollUp(min(param(p, 0, 1), s.rows))
	case 'T':
		s.scrollDown(min(param(p, 0, 1), s.rows))
	case 'b':
		if s.lastPrint != 0 {
			for range min(param(p, 0, 1), s.cols*s.rows) {
				s.print(s.lastPrint)
			}
		}
	case 'r':
		top, bottom := param(p, 0, 1)-1, param(p, 1, s.rows)-1
		if top < bottom && bottom < s.rows {
			s.top, s.bottom = top, bottom
			s.setCursor(0, 0)
		}
	case 's':
		s.saveCursor()
	case 'u':
		s.restoreCursor()
	case 'h', 'l':
		if param(p, 0, 0) == 4 {
			s.insertMode = cmd.Final() == 'h'
		}
	case 'n':
		switch param(p, 0, 0) {
		case 5:
			s.send("\x1b[0n")
		case 6:
			s.send(fmt.Sprintf("\x1b[%d;%dR", s.y+1, s.x+1))
		}
	case 'c':
		if param(p, 0, 0) == 0 {
			s.send("\x1b[?62;22c") // primary DA: VT220 with ANSI colour
		}
	case 't':
		switch param(p, 0, 0) {
		case 18:
			s.send(fmt.Sprintf("\x1b[8;%d;%dt", s.rows, s.cols))
		case 14:
			s.send(fmt.Sprintf("\x1b[4;%d;%dt", s.rows*16, s.cols*8))
		}
	}
}

func (s *Screen) privateMode(mode int, on bool) {
	switch mode {
	case 1:
		s.appCursor = on
	case 7:
		s.autowrap = on
	case 25:
		s.cursorShown = on
	case 2004:
		s.bracketed = on
	case 47, 1047:
		s.switchAlt(on, false)
	case 1049:
		s.switchAlt(on, true)
	case 1048:
		if on {
			s.saveCursor()
		} else {
			s.restoreCursor()
		}
	}
}

func (s *Screen) switchAlt(on, saveCursor bool) {
	if on == s.useAlt {
		return
	}
	if on {
		if saveCursor {
			s.saveCursor()
		}
		s.useAlt = true
		for _, l := range s.alt {
			s.eraseCells(l, 0, s.cols)
			l.wrapped = false
		}
		if saveCursor {
			s.setCursor(0, 0)
		}
		return
	}
	s.useAlt = false
	if saveCursor {
		s.restoreCursor()
	}
	s.top, s.bottom = 0, s.rows-1
}

func (s *Screen) saveCursor() {
	i := 0
	if s.useAlt {
		i = 1
	}
	s.saved[i] = cursorState{x: s.x, y: s.y, lineDrawing: s.lineDrawing, set: true}
}

func (s *Screen) restoreCursor() {
	i := 0
	if s.useAlt {
		i = 1
	}
	c := s.saved[i]
	if !c.set {
		s.setCursor(0, 0)
		return
	}
	s.setCursor(c.y, c.x)
	s.lineDrawing = c.lineDrawing
}

func (s *Screen) esc(cmd ansi.Cmd) {
	if cmd.Intermediate() == '(' {
		s.lineDrawing = cmd.Final() == '0'
		return
	}
	if cmd.Intermediate() != 0 {
		return
	}
	switch cmd.Final() {
	case '7':
		s.saveCursor()
	case '8':
		s.restoreCursor()
	case 'D':
		s.lineFeed()
	case 'E':
		s.x = 0
		s.lineFeed()
	case 'M':
		if s.y == s.top {
			s.scrollDown(1)
		} else if s.y > 0 {
			s.y--
		}
		s.pendingWrap = false
	case '=':
		s.appKeypad = true
	case '>':
		s.appKeypad = false
	case 'c':
		s.reset()
	}
}

func (s *Screen) reset() {
	s.useAlt = false
	for _, l := range s.main {
		s.eraseCells(l, 0, s.cols)
		l.wrapped = false
	}
	s.setCursor(0, 0)
	s.top, s.bottom = 0, s.rows-1
	s.appCursor, s.appKeypad, s.bracketed, s.insertMode, s.lineDrawing = false, false, false, false, false
	s.autowrap, s.cursorShown = true, true
}

func (s *Screen) osc(cmd int, data []byte) {
	_, rest, _ := bytes.Cut(data, []byte{';'})
	switch cmd {
	case 0, 2:
		s.title = sanitizeTitle(string(rest))
	case 7:
		s.cwd = string(rest)
	case 133:
		s.shellMark(rest)
	}
}

func sanitizeTitle(t string) string {
	if len(t) > 256 {
		t = t[:256]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, t)
}

func (s *Screen) shellMark(data []byte) {
	if len(data) == 0 {
		return
	}
	fields := strings.Split(string(data), ";")
	kind := MarkKind(fields[0][0])
	switch kind {
	case MarkPromptStart, MarkInputStart, MarkOutputStart, MarkCommandEnded:
	default:
		return
	}
	s.markN++
	if kind == MarkInputStart {
		s.bSeen = true
	}
	m := Mark{Seq: s.markN, Kind: kind, Pos: s.CursorPos(), OnAlt: s.useAlt}
	if kind == MarkCommandEnded && len(fields) > 1 {
		if code, err := strconv.Atoi(fields[1]); err == nil {
			m.ExitCode, m.HasCode = code, true
		}
	} else if len(fields) > 1 {
		m.Extra = strings.Join(fields[1:], ";")
	}
	if len(s.marks) >= maxMarks {
		s.marks = append(s.marks[:0], s.marks[len(s.marks)-maxMarks/2:]...)
	}
	s.marks = append(s.marks, m)
}

func (s *Screen) send(reply string) {
	if s.reply != nil {
		s.reply([]byte(reply))
	}
}
