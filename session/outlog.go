package session

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"sort"
	"sync"
	"unicode/utf8"
)

// DefaultOutputLogMax is how many bytes of history a session's output log
// keeps when its Spec does not say.
const DefaultOutputLogMax = 64 << 20

// MinOutputLogMax is the smallest output log a session may have.
const MinOutputLogMax = 1 << 20

// Row terminators in the log file. A row's text never holds a control
// character (the screen's cells hold printable characters only), so these
// are unambiguous.
const (
	rowEnd  = '\n' // the row ends its line
	rowWrap = '\r' // the line goes on in the next row (a soft wrap)
)

const (
	logFlushAt   = 32 << 10 // the reader writes buffered rows out past this
	logBufMax    = 4 << 20  // rows buffered past this are kept empty (see elided)
	logCheckRows = 1024     // a checkpoint at least every this many rows
	logCheckSize = 64 << 10 // and every this many bytes
	logReadChunk = 64 << 10
)

// outputLog is a session's whole history as a human reads it: every row that
// scrolls off the top of its main screen, with the screen's absolute row
// numbers, in a file of at most max bytes (a ring: when it is full the oldest
// rows go, and are counted). The rows come from the screen, which is fed the
// redacted stream, so the log never holds what the redactor masked.
//
// The file has no name: it is made with O_TMPFILE in the session's private
// directory (or created and unlinked at once, before the session's program
// starts), so nothing in the session can open, replace or write it, and it
// is gone when the gateway closes it or dies.
//
// Rows arrive under the session's lock and are only buffered then; the file
// is written by whoever next flushes (the reader after a large batch, or a
// read), under the log's own lock, never the session's.
type outputLog struct {
	bufMu   sync.Mutex // guards buf, bufRows and elided; never held across I/O
	buf     []byte
	bufRows int64
	elided  int64 // rows kept empty because too much arrived at once

	mu         sync.Mutex // guards the file and the fields below
	f          *os.File
	max        int64
	start, end int64 // the bytes held, as offsets into everything ever written
	first      int64 // the first row held; rows before it were dropped
	rows       int64 // rows written to the file
	idx        []logCheckpoint
	sinceRows  int64
	sinceBytes int64
	err        error // the first write error; nothing is written after it
	closed     bool
}

// logCheckpoint is where a row starts in the file.
type logCheckpoint struct{ row, off int64 }

// openOutputLog makes an unnamed log file of at most max bytes in dir.
func openOutputLog(dir string, max int64) (*outputLog, error) {
	if max < MinOutputLogMax {
		max = MinOutputLogMax
	}
	f, err := os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		// A file system without O_TMPFILE: make one and unlink it at
		// once. The session's program has not started yet.
		if f, err = os.CreateTemp(dir, "output-*.log"); err != nil {
			return nil, fmt.Errorf("creating the output log: %w", err)
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return nil, fmt.Errorf("unlinking the output log: %w", err)
		}
	}
	return &outputLog{f: f, max: max, idx: []logCheckpoint{{0, 0}}}, nil
}

// appendRow buffers one row. It is called with the session's lock held and
// does no I/O.
func (l *outputLog) appendRow(text string, wrapped bool) {
	l.bufMu.Lock()
	defer l.bufMu.Unlock()
	if len(l.buf) >= logBufMax {
		// One batch of output would not fit in memory before it can be
		// written (a program repeating a long cluster across whole rows):
		// the row keeps its number and place, not its text.
		text = ""
		l.elided++
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c == 0x7f {
			// Cannot happen (cells are printable); never let it
			// corrupt the row structure if it did.
			text = sanitizeRow(text)
			break
		}
	}
	l.buf = append(l.buf, text...)
	if wrapped {
		l.buf = append(l.buf, rowWrap)
	} else {
		l.buf = append(l.buf, rowEnd)
	}
	l.bufRows++
}

func sanitizeRow(t string) string {
	b := []byte(t)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// flushIfLarge writes the buffered rows out when there are many.
func (l *outputLog) flushIfLarge() {
	l.bufMu.Lock()
	large := len(l.buf) >= logFlushAt
	l.bufMu.Unlock()
	if large {
		l.mu.Lock()
		l.flushLocked()
		l.mu.Unlock()
	}
}

// flushLocked writes the buffered rows to the file, dropping the oldest rows
// that no longer fit. l.mu is held.
func (l *outputLog) flushLocked() {
	l.bufMu.Lock()
	data, n := l.buf, l.bufRows
	l.buf, l.bufRows = nil, 0
	l.bufMu.Unlock()
	if len(data) == 0 || l.closed {
		return
	}
	if l.err != nil {
		// The file cannot be written: the rows still count, so that row
		// numbers stay the screen's, but they are gone.
		l.rows += n
		l.first, l.start, l.end = l.rows, 0, 0
		l.idx = []logCheckpoint{{l.rows, 0}}
		return
	}
	// Checkpoints for the new rows, at row starts.
	row := l.rows
	for i, c := range data {
		if c != rowEnd && c != rowWrap {
			continue
		}
		off := l.end + int64(i) + 1
		row++
		l.sinceRows++
		if l.sinceRows >= logCheckRows || off-l.idx[len(l.idx)-1].off >= logCheckSize {
			l.idx = append(l.idx, logCheckpoint{row, off})
			l.sinceRows = 0
		}
	}
	newEnd := l.end + int64(len(data))
	if newEnd-l.start > l.max {
		// Drop the oldest rows: up to the first checkpoint that leaves
		// the rest within max.
		keep := newEnd - l.max
		i := sort.Search(len(l.idx), func(i int) bool { return l.idx[i].off >= keep })
		if i == len(l.idx) {
			i = len(l.idx) - 1 // cannot happen: a batch is far smaller than max
		}
		l.start, l.first = l.idx[i].off, l.idx[i].row
		l.idx = append(l.idx[:0], l.idx[i:]...)
	}
	// Write into the ring.
	for p := data; len(p) > 0; {
		pos := l.end % l.max
		k := min(int64(len(p)), l.max-pos)
		if _, err := l.f.WriteAt(p[:k], pos); err != nil {
			l.err = fmt.Errorf("writing the output log: %w", err)
			l.rows += n
			l.first, l.start, l.end = l.rows, 0, 0
			l.idx = []logCheckpoint{{l.rows, 0}}
			return
		}
		l.end += k
		p = p[k:]
	}
	l.rows += n
}

// rowsLocked returns rows [from, to) with their soft-wrap flags, stopping
// after the row that takes their characters past budget (the caller joins
// and cuts them). Rows before the first one held are skipped. l.mu is held.
func (l *outputLog) rowsLocked(from, to int64, budget int) ([]string, []bool, error) {
	from = max(from, l.first)
	to = min(to, l.rows)
	if from >= to {
		return nil, nil, nil
	}
	i := sort.Search(len(l.idx), func(i int) bool { return l.idx[i].row > from }) - 1
	if i < 0 {
		return nil, nil, nil
	}
	off, row := l.idx[i].off, l.idx[i].row
	var rows []string
	var wraps []bool
	var line []byte
	runes := 0
	chunk := make([]byte, min(logReadChunk, l.end-off))
	for off < l.end && row < to && runes <= budget {
		pos := off % l.max
		k := min(int64(len(chunk)), l.end-off, l.max-pos)
		if _, err := l.f.ReadAt(chunk[:k], pos); err != nil && !errors.Is(err, io.EOF) {
			return rows, wraps, fmt.Errorf("reading the output log: %w", err)
		}
		for _, c := range chunk[:k] {
			if c != rowEnd && c != rowWrap {
				if row >= from {
					line = append(line, c)
				}
				continue
			}
			if row >= from {
				rows, wraps = append(rows, string(line)), append(wraps, c == rowWrap)
				runes += utf8.RuneCount(line) + 1
				line = line[:0]
			}
			row++
			if row >= to || runes > budget {
				break
			}
		}
		off += k
	}
	return rows, wraps, nil
}

// close releases the file, which removes it.
func (l *outputLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.f.Close()
}

// rewriteRow writes a row again with text of the same length (a repair
// masks characters in place), whether it is still buffered or in the
// file already. A row that is gone, or whose length differs (kept empty),
// is left as it is.
func (l *outputLog) rewriteRow(row int64, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.err != nil || row < l.first {
		return
	}
	if row >= l.rows {
		l.bufMu.Lock()
		defer l.bufMu.Unlock()
		off := 0
		for k := row - l.rows; k > 0; k-- {
			j := rowTerm(l.buf[off:])
			if j < 0 {
				return
			}
			off += j + 1
		}
		if j := rowTerm(l.buf[off:]); j == len(text) {
			copy(l.buf[off:], text)
		}
		return
	}
	off, ok := l.rowOffset(row)
	if !ok {
		return
	}
	if off+int64(len(text)) >= l.end {
		return
	}
	old := make([]byte, len(text)+1)
	if err := l.readRing(old, off); err != nil || rowTerm(old) != len(text) {
		return
	}
	for p, at := []byte(text), off; len(p) > 0; {
		pos := at % l.max
		k := min(int64(len(p)), l.max-pos)
		if _, err := l.f.WriteAt(p[:k], pos); err != nil {
			l.err = fmt.Errorf("writing the output log: %w", err)
			return
		}
		p, at = p[k:], at+k
	}
}

// rowOffset returns where row begins in the file. l.mu is held.
func (l *outputLog) rowOffset(row int64) (int64, bool) {
	i := sort.Search(len(l.idx), func(i int) bool { return l.idx[i].row > row }) - 1
	if i < 0 {
		return 0, false
	}
	off, r := l.idx[i].off, l.idx[i].row
	chunk := make([]byte, min(logReadChunk, l.end-off))
	for r < row && off < l.end {
		k := min(int64(len(chunk)), l.end-off)
		if err := l.readRing(chunk[:k], off); err != nil {
			return 0, false
		}
		for j, c := range chunk[:k] {
			if c == rowEnd || c == rowWrap {
				if r++; r == row {
					return off + int64(j) + 1, true
				}
			}
		}
		off += k
	}
	return off, r == row
}

// readRing reads len(p) bytes of the ring at offset off (of everything
// ever written). l.mu is held.
func (l *outputLog) readRing(p []byte, off int64) error {
	for len(p) > 0 {
		pos := off % l.max
		k := min(int64(len(p)), l.max-pos)
		if _, err := l.f.ReadAt(p[:k], pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the output log: %w", err)
		}
		p, off = p[k:], off+k
	}
	return nil
}

// rowTerm returns the index of the first row terminator in b, or -1.
func rowTerm(b []byte) int {
	for i, c := range b {
		if c == rowEnd || c == rowWrap {
			return i
		}
	}
	return -1
}
