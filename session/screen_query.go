package session

import "strings"

// Queries the session layer makes of a Screen, kept apart from the
// emulator itself (screen.go).

// MainResumePos returns where text will continue on the main screen once the
// alternate screen ends: the cursor a full-screen program saved when it
// switched (xterm mode 1049), or the cursor itself when the main screen is
// shown or nothing was saved.
func (s *Screen) MainResumePos() Pos {
	if s.useAlt && s.saved[0].set {
		return Pos{Line: s.absRow(s.saved[0].y), Col: s.saved[0].x}
	}
	return s.CursorPos()
}

// logicalLine is one line of text as a human reads it: soft-wrapped rows
// joined.
type logicalLine struct {
	row  int64 // absolute number of its first row
	text string
}

// logicalLines returns the text between from and to (as Text does) split
// into logical lines, each with the row it starts on.
func (s *Screen) logicalLines(from, to Pos) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	first, open := from.Line, false
	for n := from.Line; n <= to.Line; n++ {
		start, end := Pos{Line: n}, Pos{Line: n, Col: 1 << 30}
		if n == from.Line {
			start.Col = from.Col
		}
		if n == to.Line {
			end.Col = to.Col
		}
		if !open {
			first, open = n, true
			cur.Reset()
		}
		t, _ := s.Text(start, end)
		cur.WriteString(t)
		if n == to.Line {
			break
		}
		// A row soft-wraps when the text across its end has no newline.
		if j, _ := s.Text(Pos{Line: n, Col: 1 << 30}, Pos{Line: n + 1}); j == "\n" {
			out = append(out, logicalLine{row: first, text: cur.String()})
			open = false
		}
	}
	if open && (cur.Len() > 0 || to.Col > 0) {
		out = append(out, logicalLine{row: first, text: cur.String()})
	}
	return out
}

// newBlankScreen returns a 1×1 screen that holds nothing and parses
// nothing: what a closed session keeps in place of its emulator, so that a
// call still in flight finds a screen (see frozen.go). Writing to it is a
// bug.
func newBlankScreen() *Screen {
	return &Screen{rows: 1, cols: 1, main: newGrid(1, 1), alt: newGrid(1, 1), sbCap: 1, autowrap: true}
}
