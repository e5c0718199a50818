package session

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/clipperhouse/displaywidth"
	"github.com/clipperhouse/uax29/v2/graphemes"
)

// Cell values. A cell holds a rune, or one of these.
const (
	// wideTail fills the right half of a double-width character.
	wideTail rune = -1
	// widePad is the blank a double-width character leaves in the last
	// column when it wraps whole to the next row (and what a wrapped row
	// is padded with when the screen widens): it shows as a blank, but it
	// is not text, so rows joined at a soft wrap skip it.
	widePad rune = -2
	// clusterBase and above name a grapheme cluster of several runes
	// (a base with combining marks, a ZWJ sequence, a flag):
	// Screen.clusters[v-clusterBase].
	clusterBase rune = utf8.MaxRune + 1
)

// Bounds on grapheme clusters, so that no stream of marks can make a cell
// or the table of clusters grow without end. A cluster longer than
// maxClusterBytes keeps its first marks; past maxClusters distinct clusters
// on the screen at once, new ones keep their base character only.
const (
	maxClusterBytes = 48
	maxClusters     = 1 << 16
)

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
// A cell holds a grapheme cluster, as terminals that follow Unicode's text
// segmentation do (xterm's mode 2027): a combining mark, a zero-width
// joiner or a variation selector joins the character before the cursor
// (github.com/clipperhouse/uax29 decides, by UAX #29), and the cluster
// takes the columns its first character takes, or two when a variation
// selector asks for emoji presentation and the row has room
// (github.com/clipperhouse/displaywidth, as the parser's own width
// functions).
//
// A row that wrapped (the text ran past the last column) is joined to the
// next one when read, blanks at its end included: they are text. Only a
// hard line end drops a row's trailing blanks.
//
// Screen is not safe for concurrent use; Session guards it with its lock.
//
// Lines have absolute numbers: the first line that ever scrolled off is 0, so
// a position taken before a command ran still names the same line after the
// screen has scrolled, as long as it is within the scrollback. The same
// numbers count the rows of the session's output log.
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

	lastPrint rune // the last cell printed, for REP
	lastWidth int

	// Grapheme clusters of several runes, named by cells ≥ clusterBase.
	clusters  []string
	clusterW  []uint8 // each cluster's width
	clusterID map[string]rune
	clusterGC int    // compact the table when it holds this many
	scratch   []byte // builds clusters and rows

	sb        []sbLine // ring of lines that scrolled off the main screen
	sbStart   int      // index of the oldest line in sb
	sbLen     int
	sbCap     int
	sbDropped int64 // lines dropped off the top of the scrollback

	log *outputLog // every line that scrolls off, on disk; may be nil

	title string
	cwd   string

	marks   []Mark // shell-integration marks, oldest first, bounded
	markKey string // when set, a mark must carry tg=markKey (SetMarkKey)
	bSeen   bool   // an input-start mark ever arrived: the prompt carries marks
	markN   int64  // marks ever seen

	redraw       bool     // a prompt's marks are being drawn again where they were (redrawnMark)
	unjudged     []string // lines the shell refused for want of a ticket, not taken yet (tickets.go)
	unjudgedLost int      // refusals past those

	recovered int // panics recovered while parsing: each one is a bug

	written int64      // bytes written so far
	cur     int64      // the offset of the byte being parsed
	prints  *printRing // where the last prints went, for repairs (repair.go); nil: not kept
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
		clusterID:   map[string]rune{},
		clusterGC:   1024,
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

// Write feeds terminal output to the screen. It never fails, and it never
// loses a byte: every handler is total on any input, and should one still
// panic (a bug), the parser starts afresh after the byte that made it panic
// and the rest of p is read as usual.
func (s *Screen) Write(p []byte) (int, error) {
	for i := 0; i < len(p); {
		i = s.advance(p, i)
	}
	s.written += int64(len(p))
	return len(p), nil
}

// advance feeds p from i on and returns where it stopped: len(p), or just
// past a byte whose handling panicked.
func (s *Screen) advance(p []byte, i int) (next int) {
	defer func() {
		if r := recover(); r != nil {
			s.recovered++
			s.parser.Reset()
			next = i + 1
		}
	}()
	for ; i < len(p); i++ {
		s.cur = s.written + int64(i)
		s.parser.Advance(p[i])
	}
	return i
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

// SetMarkKey makes the screen take only the OSC 133 marks that carry
// tg=key among their parameters: the shell integration termgate generates
// prints the session's key in every mark, and a mark any other program
// prints (a file that holds ESC]133;B, a background job) is ignored, so
// it cannot move where the judged line starts. The key is never shown.
func (s *Screen) SetMarkKey(key string) { s.markKey = key }

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
	return s.rowText(l, !l.wrapped), l.wrapped, true
}

// appendCell appends what a cell shows (nothing for the right half of a
// wide character or a pad).
func (s *Screen) appendCell(b []byte, v rune) []byte {
	switch {
	case v >= 0 && v < utf8.RuneSelf:
		return append(b, byte(v))
	case v >= clusterBase:
		if i := int(v - clusterBase); i < len(s.clusters) {
			return append(b, s.clusters[i]...)
		}
		return b
	case v < 0:
		return b
	}
	return utf8.AppendRune(b, v)
}

// blank reports whether a cell shows nothing.
func blank(v rune) bool { return v == ' ' || v == widePad }

// rowText returns what a row shows: its trailing blanks dropped when trim
// is set (a hard line end), kept otherwise (a soft wrap), and never the
// pads a wide character or a widened screen left.
func (s *Screen) rowText(l *vline, trim bool) string {
	return s.cellsText(l.cells, trim)
}

func (s *Screen) cellsText(cells []rune, trim bool) string {
	end := len(cells)
	if trim {
		for end > 0 && blank(cells[end-1]) {
			end--
		}
	}
	b := s.scratch[:0]
	for _, v := range cells[:end] {
		if v >= 0 && v < utf8.RuneSelf {
			b = append(b, byte(v))
		} else {
			b = s.appendCell(b, v)
		}
	}
	s.scratch = b
	return string(b)
}

// rowBlank reports whether a row shows nothing.
func rowBlank(l *vline) bool {
	for _, v := range l.cells {
		if !blank(v) {
			return false
		}
	}
	return true
}

// Text returns the text between two absolute positions as a human would read
// it: soft-wrapped lines joined (blanks at the wrap kept), trailing blanks of
// a line trimmed where it ends, lines separated by "\n". Lines no longer held
// are skipped; lost reports how many.
func (s *Screen) Text(from, to Pos) (text string, lost int64) {
	if to.Before(from) {
		return "", 0
	}
	if from.Line < s.sbDropped {
		lost = s.sbDropped - from.Line
		from = Pos{Line: s.sbDropped}
	}
	var b []byte
	lineStart := 0
	for n := from.Line; n <= to.Line; n++ {
		c0, c1 := 0, -1
		if n == from.Line {
			c0 = from.Col
		}
		if n == to.Line {
			c1 = to.Col
		}
		seg, wrapped, whole, ok := s.segment(n, c0, c1)
		if !ok {
			break
		}
		b = append(b, seg...)
		if !wrapped && whole {
			// The line ends here: blanks before its end, on rows it
			// wrapped from, are not text.
			b = trimBlanks(b, lineStart)
		}
		if n < to.Line && !wrapped {
			b = append(b, '\n')
			lineStart = len(b)
		}
	}
	return string(b), lost
}

// LogicalLine returns where the logical line holding p starts and ends:
// from the first row of the rows it soft-wraps over to the end of the last
// one. A line editor's input wraps so; its whole input is read, not the
// cursor's row only.
func (s *Screen) LogicalLine(p Pos) (from, to Pos) {
	first, last := p.Line, p.Line
	for i := 0; i < 4096 && first > s.sbDropped; i++ {
		if _, wrapped, ok := s.lineAt(first - 1); !ok || !wrapped {
			break
		}
		first--
	}
	for i := 0; i < 4096; i++ {
		_, wrapped, ok := s.lineAt(last)
		if !ok || !wrapped {
			break
		}
		last++
	}
	return Pos{Line: first}, Pos{Line: last, Col: 1 << 30}
}

// trimBlanks drops the spaces at the end of b, back to from at most.
func trimBlanks(b []byte, from int) []byte {
	for len(b) > from && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// segment returns the text of columns [c0, c1) of an absolute line (c1 < 0:
// to its end), its soft-wrap flag, whether the segment reaches the end of
// what the line shows, and whether the line is held. A column inside a wide
// character or a cluster belongs to it: the character is in the segment
// when its first column is.
func (s *Screen) segment(n int64, c0, c1 int) (seg string, wrapped, whole, ok bool) {
	if n < s.sbDropped {
		return "", false, false, false
	}
	i := n - s.sbDropped
	if i < int64(s.sbLen) {
		l := s.sb[(s.sbStart+int(i))%len(s.sb)]
		t := l.text
		if c0 <= 0 && c1 < 0 {
			return t, l.wrapped, true, true
		}
		start, end := colIndex(t, c0), len(t)
		if c1 >= 0 {
			end = colIndex(t, c1)
		}
		whole = end == len(t)
		if start >= end {
			return "", l.wrapped, whole, true
		}
		return t[start:end], l.wrapped, whole, true
	}
	y := int(i - int64(s.sbLen))
	if y >= s.rows {
		return "", false, false, false
	}
	// On the screen the cells say exactly where each character starts.
	l := s.grid()[y]
	cells := l.cells
	end := len(cells)
	if !l.wrapped {
		for end > 0 && blank(cells[end-1]) {
			end--
		}
	}
	whole = true
	if c1 >= 0 && c1 < end {
		end, whole = c1, false
	}
	c0 = max(c0, 0)
	if c0 >= end {
		return "", l.wrapped, whole, true
	}
	return s.cellsText(cells[c0:end], false), l.wrapped, whole, true
}

// colIndex maps a screen column to a byte index in a line's text: the start
// of the first character whose first column is at or after col. It measures
// as the screen places characters: by grapheme cluster, one or two columns
// each.
func colIndex(t string, col int) int {
	w := 0
	for i := 0; i < len(t); {
		if w >= col {
			return i
		}
		if t[i] < utf8.RuneSelf && (i+1 == len(t) || t[i+1] < utf8.RuneSelf) {
			w++
			i++
			continue
		}
		g := graphemes.FromString(t[i:])
		g.Next()
		c := g.Value()
		w += clusterWidth(c)
		i += len(c)
	}
	return len(t)
}

// runeWidth is how many columns a character takes by itself: 0, 1 or 2.
func runeWidth(r rune) int {
	if r >= 0x20 && r < 0x7f {
		return 1
	}
	return displaywidth.Rune(r)
}

// clusterWidth is how many columns a grapheme cluster takes: 1 or 2.
func clusterWidth(c string) int {
	return min(max(displaywidth.String(c), 1), 2)
}

// LineText returns the text of the cursor's line up to the cursor: what a
// prompt looks like while a program waits for input.
func (s *Screen) LineText() string {
	l := s.grid()[s.y]
	end := min(s.x, len(l.cells))
	return s.cellsText(l.cells[:end], false)
}

// Render returns the visible screen, one line per row, trailing blanks
// trimmed and trailing empty rows dropped (Cursor tells where the cursor is).
func (s *Screen) Render() string {
	g := s.grid()
	lines := make([]string, len(g))
	last := -1
	for i, l := range g {
		lines[i] = s.rowText(l, true)
		if lines[i] != "" {
			last = i
		}
	}
	return strings.Join(lines[:last+1], "\n")
}

// Scrollback returns the last n lines of the main screen's history and the
// visible main screen, soft wraps joined.
func (s *Screen) Scrollback(n int) string {
	text, _, _ := s.ScrollbackRows(n)
	return text
}

// ScrollbackRows is Scrollback with the row each line begins on, and the row
// after the last one.
func (s *Screen) ScrollbackRows(n int) (string, []int64, int64) {
	end := s.sbDropped + int64(s.sbLen) + int64(s.rows) - 1
	// Drop trailing blank rows of the main screen.
	for end > s.sbDropped+int64(s.sbLen) {
		if y := int(end - s.sbDropped - int64(s.sbLen)); !rowBlank(s.main[y]) {
			break
		}
		end--
	}
	var lines []string
	var rows []int64
	for l := end; l >= s.sbDropped && len(lines) < n; l-- {
		t, _, _ := s.mainLineAt(l)
		_, prevWrapped, ok := s.mainLineAt(l - 1)
		for ok && prevWrapped && l-1 >= s.sbDropped {
			l--
			pt, _, _ := s.mainLineAt(l)
			t = pt + t
			_, prevWrapped, ok = s.mainLineAt(l - 1)
		}
		lines = append(lines, strings.TrimRight(t, " "))
		rows = append(rows, l)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
		rows[i], rows[j] = rows[j], rows[i]
	}
	return strings.Join(lines, "\n"), rows, end + 1
}

func (s *Screen) mainLineAt(n int64) (string, bool, bool) {
	if s.useAlt && n >= s.sbDropped+int64(s.sbLen) {
		y := int(n - s.sbDropped - int64(s.sbLen))
		if y < 0 || y >= s.rows {
			return "", false, false
		}
		l := s.main[y]
		return s.rowText(l, !l.wrapped), l.wrapped, true
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
			if n := len(l.cells); n < cols {
				// A wrapped row grows with pads, not blanks: it still
				// joins the next one where it did.
				fill := ' '
				if l.wrapped {
					fill = widePad
				}
				for len(l.cells) < cols {
					l.cells = append(l.cells, fill)
				}
			} else if n > cols {
				if cols > 0 && l.cells[cols] == wideTail {
					l.cells[cols-1] = ' ' // a wide character cut in half
				}
				l.cells = l.cells[:cols]
			}
		}
		for len(g) > rows {
			// Drop a blank row below the cursor first, else push the top.
			if last := len(g) - 1; last > s.y && rowBlank(g[last]) {
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
	sl := sbLine{text: s.rowText(l, !l.wrapped), wrapped: l.wrapped}
	if s.log != nil {
		s.log.appendRow(sl.text, sl.wrapped)
	}
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

// ---- grapheme clusters ----

// intern returns the cell value that names the cluster in b, and its
// width; 0 when the table is full.
func (s *Screen) intern(b []byte) (rune, int) {
	if v, ok := s.clusterID[string(b)]; ok {
		return v, int(s.clusterW[v-clusterBase])
	}
	if len(s.clusters) >= s.clusterGC {
		s.compactClusters()
		if len(s.clusters) >= maxClusters {
			return 0, 0
		}
	}
	c := string(b)
	w := clusterWidth(c)
	v := clusterBase + rune(len(s.clusters))
	s.clusters = append(s.clusters, c)
	s.clusterW = append(s.clusterW, uint8(w))
	s.clusterID[c] = v
	return v, w
}

// compactClusters drops the clusters no cell names any more. The scrollback
// holds text, not cells, so only the two grids (and REP's last character)
// are looked at. The next compaction comes when the table has doubled, so
// the cost per cluster printed stays constant.
func (s *Screen) compactClusters() {
	kept := make([]string, 0, len(s.clusters)/2)
	keptW := make([]uint8, 0, len(s.clusters)/2)
	id := make(map[string]rune, len(s.clusters)/2)
	renamed := map[rune]rune{}
	rename := func(v rune) rune {
		if v < clusterBase {
			return v
		}
		if nv, ok := renamed[v]; ok {
			return nv
		}
		c := s.clusters[v-clusterBase]
		nv := clusterBase + rune(len(kept))
		kept = append(kept, c)
		keptW = append(keptW, s.clusterW[v-clusterBase])
		id[c] = nv
		renamed[v] = nv
		return nv
	}
	for _, g := range [][]*vline{s.main, s.alt} {
		for _, l := range g {
			for i, v := range l.cells {
				if v >= clusterBase {
					l.cells[i] = rename(v)
				}
			}
		}
	}
	s.lastPrint = rename(s.lastPrint)
	s.clusters, s.clusterW, s.clusterID = kept, keptW, id
	s.clusterGC = min(2*len(kept)+1024, maxClusters)
}

// simpleRune reports whether r is a character that Unicode's segmentation
// rules always start a new cluster with, unless the character before it
// is a prepended mark, a joiner or a Hangul leading consonant; and that,
// as the character before another, never holds on to what follows it.
// Latin, Greek, Cyrillic and the CJK scripts take this fast path.
func simpleRune(r rune) bool {
	switch {
	case r < 0x300:
		return true
	case r >= 0x370 && r <= 0x482: // Greek and Cyrillic letters
		return true
	case r >= 0x3000 && r <= 0x3029, r >= 0x3041 && r <= 0x3096, r >= 0x30a1 && r <= 0x30fa:
		return true // CJK punctuation, hiragana, katakana
	case r >= 0x3400 && r <= 0x4dbf, r >= 0x4e00 && r <= 0x9fff, r >= 0xac00 && r <= 0xd7a3, r >= 0xff01 && r <= 0xff60:
		return true // ideographs, Hangul syllables, full-width forms
	}
	return false
}

// alwaysExtends reports whether r continues any cluster before it (UAX #29
// GB9: marks and joiners never begin one; the cells before it never hold
// the controls that would end one): combining diacritical marks, the
// zero-width joiner, variation selectors, emoji skin-tone modifiers.
func alwaysExtends(r rune) bool {
	switch {
	case r >= 0x300 && r <= 0x36f, r == 0x200d, r >= 0xfe00 && r <= 0xfe0f:
		return true
	case r >= 0x1dc0 && r <= 0x1dff, r >= 0x20d0 && r <= 0x20f0:
		return true
	case r >= 0x1f3fb && r <= 0x1f3ff:
		return true
	}
	return false
}

// prevCell returns the cell a character printed now could join: the one
// before the cursor (or under it, when a wrap is pending).
func (s *Screen) prevCell() (*vline, int, bool) {
	col := s.x - 1
	if s.pendingWrap {
		col = s.x
	}
	if col < 0 {
		return nil, 0, false
	}
	l := s.grid()[s.y]
	if l.cells[col] == wideTail {
		col--
	}
	if col < 0 || l.cells[col] < 0 {
		return nil, 0, false
	}
	return l, col, true
}

// extend adds r to the cluster before the cursor when Unicode's rules say
// it continues it, and reports whether it did (or dropped r, a mark past
// the bounds).
func (s *Screen) extend(r rune) bool {
	l, col, ok := s.prevCell()
	if !ok {
		return false
	}
	v := l.cells[col]
	if simpleRune(r) && (v < 0x600 || simpleRune(v)) {
		return false // the common case: a new cluster, for certain
	}
	b := s.appendCell(s.scratch[:0], v)
	b = utf8.AppendRune(b, r)
	s.scratch = b
	if !alwaysExtends(r) {
		g := graphemes.FromBytes(b)
		g.Next()
		if len(g.Value()) != len(b) {
			return false // r begins a cluster of its own
		}
	}
	if len(b) > maxClusterBytes {
		return runeWidth(r) == 0 // a mark past the bound is dropped
	}
	nv, w := s.intern(b)
	if nv == 0 {
		return runeWidth(r) == 0
	}
	if w == 2 && (col+1 >= s.cols || l.cells[col+1] != wideTail) {
		// Emoji presentation widens the cluster, when the cursor is
		// just after it and the row has room; else it stays narrow.
		if !s.pendingWrap && s.x == col+1 && col+1 < s.cols {
			s.clearWideAt(l, col+1)
			l.cells[col+1] = wideTail
			s.x++
			if s.x >= s.cols {
				s.x = s.cols - 1
				s.pendingWrap = true
			}
		}
	}
	l.cells[col] = nv
	s.lastPrint, s.lastWidth = nv, 1
	if col+1 < s.cols && l.cells[col+1] == wideTail {
		s.lastWidth = 2
	}
	return true
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
	if r >= 0x20 && r < 0x7f {
		// ASCII starts a cluster of its own unless the cell before it
		// holds a prepended mark or a cluster (never, in practice).
		l := s.grid()[s.y]
		col := s.x - 1
		if s.pendingWrap {
			col = s.x
		}
		if col < 0 || l.cells[col] < 0x600 {
			s.put(r, 1)
			return
		}
	}
	if s.extend(r) {
		return
	}
	w := runeWidth(r)
	if w == 0 {
		return // a zero-width character with nothing to join
	}
	s.put(r, w)
}

// put writes a cell of width w at the cursor and moves the cursor past it,
// wrapping first when the previous print reached the last column.
func (s *Screen) put(v rune, w int) {
	if s.pendingWrap || (w == 2 && s.x == s.cols-1) {
		if s.autowrap {
			l := s.grid()[s.y]
			if !s.pendingWrap {
				// A wide character that does not fit in the last
				// column goes whole to the next row.
				s.clearWideAt(l, s.x)
				l.cells[s.x] = widePad
			}
			l.wrapped = true
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
	l.cells[s.x] = v
	s.track(v)
	if w == 2 && s.x+1 < s.cols {
		s.clearWideAt(l, s.x+1)
		l.cells[s.x+1] = wideTail
	}
	s.lastPrint, s.lastWidth = v, w
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

// insertChars shifts the cursor's row right by n blanks from the cursor;
// what passes the last column is lost.
func (s *Screen) insertChars(n int) {
	l := s.grid()[s.y]
	if s.x >= s.cols || n <= 0 {
		return
	}
	n = min(n, s.cols-s.x)
	s.clearWideAt(l, s.x) // a wide character split at the cursor
	if last := s.cols - n; last < s.cols && l.cells[last] == wideTail {
		l.cells[last-1] = ' ' // a wide character the shift would split at the edge
	}
	copy(l.cells[s.x+n:], l.cells[s.x:s.cols-n])
	for i := s.x; i < s.x+n; i++ {
		l.cells[i] = ' '
	}
}

// deleteChars shifts the cursor's row left by n from the cursor, blanks
// entering at the right.
func (s *Screen) deleteChars(n int) {
	l := s.grid()[s.y]
	if s.x >= s.cols || n <= 0 {
		return
	}
	n = min(n, s.cols-s.x)
	s.clearWideAt(l, s.x)
	if s.x+n < s.cols && l.cells[s.x+n] == wideTail {
		l.cells[s.x+n] = ' ' // the right half of a deleted wide character
	}
	copy(l.cells[s.x:], l.cells[s.x+n:])
	for i := s.cols - n; i < s.cols; i++ {
		l.cells[i] = ' '
	}
}

// eraseCells blanks columns [from, to) of a row, and the other half of a
// wide character the range cuts.
func (s *Screen) eraseCells(l *vline, from, to int) {
	from, to = max(from, 0), min(to, len(l.cells))
	if from >= to {
		return
	}
	if l.cells[from] == wideTail && from > 0 {
		l.cells[from-1] = ' '
	}
	if to < len(l.cells) && l.cells[to] == wideTail {
		l.cells[to] = ' '
	}
	for i := from; i < to; i++ {
		l.cells[i] = ' '
	}
}

func (s *Screen) setCursor(row, col int) {
	s.y = min(max(row, 0), s.rows-1)
	s.x = min(max(col, 0), s.cols-1)
	s.pendingWrap = false
}

// maxParam bounds a sequence's numeric parameters: the parser adds digits
// without bound, so a long number overflows to anything, negative too.
const maxParam = 1 << 16

// param returns parameter i, def when it is missing or 0 (where 0 is not a
// value of its own), within [0, maxParam].
func param(p ansi.Params, i, def int) int {
	v, _, _ := p.Param(i, def)
	if v < 0 || v > maxParam {
		v = maxParam
	}
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
				s.privateMode(param(p, i, 0), on)
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
					if !rowBlank(l) {
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
		s.deleteChars(param(p, 0, 1))
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
				s.put(s.lastPrint, s.lastWidth)
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

// osc handles an operating system command. data is what followed OSC: the
// command's number, then ";" and its argument. A sequence whose number is
// not written plainly is not the command the parser took it for, and is
// ignored.
func (s *Screen) osc(cmd int, data []byte) {
	num, rest, _ := bytes.Cut(data, []byte{';'})
	if string(num) != strconv.Itoa(cmd) {
		return
	}
	switch cmd {
	case 0, 2:
		s.title = sanitizeTitle(string(rest))
	case 7:
		s.cwd = sanitizeTitle(string(rest))
	case 133:
		s.shellMark(rest)
	}
}

// sanitizeTitle keeps the first 256 bytes of t, without control characters
// or a rune cut in half.
func sanitizeTitle(t string) string {
	if len(t) > 256 {
		t = t[:256]
		for len(t) > 0 && !utf8.ValidString(t[max(0, len(t)-utf8.UTFMax):]) {
			t = t[:len(t)-1]
		}
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, t)
}

// maxMarkExtra bounds the parameters kept with a mark.
const maxMarkExtra = 256

// shellMark records an OSC 133 mark: its kind is one letter, then
// ";"-separated parameters (the exit code for D). Anything else is ignored,
// and so is a mark without the screen's key when it has one (SetMarkKey);
// the key is not kept among the mark's parameters.
func (s *Screen) shellMark(data []byte) {
	kindField, params, _ := bytes.Cut(data, []byte{';'})
	if len(kindField) != 1 {
		return
	}
	kind := MarkKind(kindField[0])
	switch kind {
	case MarkPromptStart, MarkInputStart, MarkOutputStart, MarkCommandEnded:
	case MarkUnjudged:
		// Only ever from the shell integration, which has a key.
		if s.markKey == "" {
			return
		}
	default:
		return
	}
	if s.markKey != "" {
		var ok bool
		if params, ok = withoutKey(params, s.markKey); !ok {
			return
		}
	}
	if kind == MarkUnjudged {
		s.unjudgedMark(params)
		return
	}
	if s.redrawnMark(kind, string(params)) {
		return
	}
	s.markN++
	if kind == MarkInputStart {
		s.bSeen = true
	}
	m := Mark{Seq: s.markN, Kind: kind, Pos: s.CursorPos(), OnAlt: s.useAlt}
	if len(params) > 0 {
		if kind == MarkCommandEnded {
			code, _, _ := bytes.Cut(params, []byte{';'})
			if n, err := strconv.Atoi(string(code)); err == nil {
				m.ExitCode, m.HasCode = n, true
			}
		} else if len(params) <= maxMarkExtra {
			m.Extra = string(params)
		}
	}
	if len(s.marks) >= maxMarks {
		s.marks = append(s.marks[:0], s.marks[len(s.marks)-maxMarks/2:]...)
	}
	s.marks = append(s.marks, m)
}

// withoutKey finds the parameter tg=key among a mark's ";"-separated
// parameters and returns the others; ok is false when it is not there.
func withoutKey(params []byte, key string) (rest []byte, ok bool) {
	fields := bytes.Split(params, []byte{';'})
	kept := fields[:0]
	for _, f := range fields {
		if v, found := bytes.CutPrefix(f, []byte("tg=")); found {
			if string(v) == key {
				ok = true
			}
			continue
		}
		kept = append(kept, f)
	}
	if !ok {
		return nil, false
	}
	return bytes.Join(kept, []byte{';'}), true
}

func (s *Screen) send(reply string) {
	if s.reply != nil {
		s.reply([]byte(reply))
	}
}

// PushedLines returns how many lines have ever scrolled off the top of the
// main screen: the absolute number of its first visible row.
func (s *Screen) PushedLines() int64 { return s.sbDropped + int64(s.sbLen) }

// MainRows returns the rows of the main screen from its first row to its
// last one that shows anything (or the cursor's, when the main screen is
// shown and the cursor is lower), with their soft-wrap flags: the part of a
// session's history that has not scrolled off yet.
func (s *Screen) MainRows() (texts []string, wrapped []bool) {
	last := -1
	for y, l := range s.main {
		if !rowBlank(l) {
			last = y
		}
	}
	if !s.useAlt {
		last = max(last, s.y)
	}
	for y := 0; y <= last; y++ {
		l := s.main[y]
		texts = append(texts, s.rowText(l, !l.wrapped))
		wrapped = append(wrapped, l.wrapped)
	}
	return texts, wrapped
}

// LineRows places the lines of a text this screen gave: Text(from, to)
// split at "\n" has lines; for lines [skip, skip+n) of it, LineRows returns
// the absolute row each one begins on, and the row after the last one.
// Lines of the text that begin before the first row held (lost) are not
// counted: the text skipped them too.
func (s *Screen) LineRows(from, to Pos, skip, n int) (rows []int64, end int64) {
	first := max(from.Line, s.sbDropped)
	line := 0
	start := first
	rows = make([]int64, 0, min(n, 1<<16))
	for r := first; r <= to.Line; r++ {
		_, wrapped, ok := s.lineAt(r)
		if !ok {
			break
		}
		if r == to.Line || !wrapped {
			// Row r ends line number line (the text's last line ends at
			// to whatever the flag says).
			if line >= skip && line < skip+n {
				rows = append(rows, start)
			}
			line++
			start = r + 1
			if line >= skip+n {
				return rows, r + 1
			}
		}
	}
	return rows, to.Line + 1
}
