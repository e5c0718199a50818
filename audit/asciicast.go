package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/termgate/termgate/redact"
)

// Recording writes one session as an asciicast v2 file (what the
// asciinema CLI plays): a header, then [seconds, code, data] events, "o"
// output, "i" input, "r" resize. The caller hands it redacted bytes only.
type Recording struct {
	mu    sync.Mutex
	f     *os.File
	w     *bufio.Writer
	start time.Time
	path  string
	pend  [2][]byte // an incomplete UTF-8 sequence of output, of input, kept for the next event
	err   error

	// For Repair: how many output bytes came (Output), the bytes written
	// to the file, and the last output events.
	outN    int64
	written int64
	recent  []castEvent
	recentN int // their data's bytes
}

// castEvent is an output event written, kept for Repair.
type castEvent struct {
	from    int64  // the output offset of data[0]
	data    []byte // as recorded
	at      json.Number
	fileOff int64 // where its line begins in the file
	lineLen int   // without the newline
}

// Bounds on the output events kept for Repair: a repair reaches back a few
// lines at most.
const (
	repairEvents = 4096
	repairBytes  = 64 << 10
)

// Header is the asciicast v2 header.
type Header struct {
	Width, Height int
	Command       string
	Title         string
	Env           map[string]string // TERM, SHELL
}

// NewRecording creates path (0600) and writes the header.
func NewRecording(path string, h Header) (*Recording, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r := &Recording{f: f, w: bufio.NewWriterSize(f, 32<<10), start: time.Now(), path: path}
	hdr := map[string]any{"version": 2, "width": h.Width, "height": h.Height, "timestamp": r.start.Unix()}
	if h.Command != "" {
		hdr["command"] = h.Command
	}
	if h.Title != "" {
		hdr["title"] = h.Title
	}
	if len(h.Env) > 0 {
		hdr["env"] = h.Env
	}
	b, _ := json.Marshal(hdr)
	r.w.Write(append(b, '\n'))
	r.written = int64(len(b) + 1)
	return r, nil
}

// Path is the file.
func (r *Recording) Path() string { return r.path }

// Output records output bytes.
func (r *Recording) Output(b []byte) { r.event("o", b) }

// Input records input bytes.
func (r *Recording) Input(b []byte) { r.event("i", b) }

// Resize records a new terminal size.
func (r *Recording) Resize(cols, rows int) { r.event("r", fmt.Appendf(nil, "%dx%d", cols, rows)) }

func (r *Recording) event(code string, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil || r.err != nil {
		return
	}
	data := b
	from := r.outN
	if code != "r" {
		// JSON strings are UTF-8: a rune split across writes waits for
		// its end.
		k := 0
		if code == "i" {
			k = 1
		}
		pend := r.pend[k]
		if code == "o" {
			from -= int64(len(pend))
			r.outN += int64(len(b))
		}
		data = append(pend, b...)
		cut := len(data)
		for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
			if utf8.RuneStart(data[i]) {
				if !utf8.FullRune(data[i:]) {
					cut = i
				}
				break
			}
		}
		r.pend[k] = append([]byte(nil), data[cut:]...)
		data = data[:cut]
		if len(data) == 0 {
			return
		}
	}
	at := json.Number(fmt.Sprintf("%.6f", time.Since(r.start).Seconds()))
	line, err := json.Marshal([]any{at, code, string(data)})
	if err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(append(line, '\n')); err != nil {
		r.err = err
		return
	}
	if code == "o" {
		r.keep(castEvent{from: from, data: append([]byte(nil), data...), at: at, fileOff: r.written, lineLen: len(line)})
	}
	r.written += int64(len(line) + 1)
}

// keep remembers an output event for Repair, within the bounds.
func (r *Recording) keep(ev castEvent) {
	r.recent = append(r.recent, ev)
	r.recentN += len(ev.data)
	drop := 0
	for len(r.recent)-drop > repairEvents || r.recentN > repairBytes && len(r.recent)-drop > 1 {
		r.recentN -= len(r.recent[drop].data)
		drop++
	}
	if drop > 0 {
		r.recent = append(r.recent[:0], r.recent[drop:]...)
	}
}

// Repair masks output already recorded that turned out to hold the head of
// a secret: the text of bytes [start, end) of the output (counted over
// every Output call), widened to whole characters, becomes '*', escape
// sequences and control bytes kept (redact.TextMasker).
// Each event's line is written again in place, as long as it was or
// padded with blanks, so the file stays a valid asciicast. Output older
// than the last events kept is not repaired.
func (r *Recording) Repair(start, end int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil || r.err != nil || start >= end {
		return
	}
	var m redact.TextMasker
	flushed := false
	for i := range r.recent {
		ev := &r.recent[i]
		a, b := max(start-ev.from, 0), min(end-ev.from, int64(len(ev.data)))
		if a >= b {
			continue
		}
		data := append([]byte(nil), ev.data...)
		m.MaskSpan(data, int(a), int(b))
		line, err := json.Marshal([]any{ev.at, "o", string(data)})
		if err != nil || len(line) > ev.lineLen {
			continue // cannot be: a mask is one byte, in JSON too
		}
		if !flushed {
			if err := r.w.Flush(); err != nil {
				r.err = err
				return
			}
			flushed = true
		}
		for len(line) < ev.lineLen {
			line = append(line, ' ')
		}
		if _, err := r.f.WriteAt(line, ev.fileOff); err != nil {
			r.err = err
			return
		}
		ev.data = data
	}
}

// Flush writes what is buffered to the file.
func (r *Recording) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.err
	}
	if err := r.w.Flush(); err != nil {
		return err
	}
	return r.err
}

// Close flushes and closes the file.
func (r *Recording) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	return err
}
