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
	pend  []byte // an incomplete UTF-8 sequence, kept for the next event
	err   error
}

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
	if code != "r" {
		// JSON strings are UTF-8: a rune split across writes waits for
		// its end.
		data = append(r.pend, b...)
		cut := len(data)
		for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
			if utf8.RuneStart(data[i]) {
				if !utf8.FullRune(data[i:]) {
					cut = i
				}
				break
			}
		}
		r.pend = append(r.pend[:0], data[cut:]...)
		data = data[:cut]
		if len(data) == 0 {
			return
		}
	}
	t := time.Since(r.start).Seconds()
	line, err := json.Marshal([]any{json.Number(fmt.Sprintf("%.6f", t)), code, string(data)})
	if err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(append(line, '\n')); err != nil {
		r.err = err
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
