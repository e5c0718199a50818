package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// spool is a bounded on-disk queue of messages (one a line, no newline
// inside) that outlives the process: what the collector has not taken is
// sent after a restart. It is a directory of segment files and a cursor
// file (the segment and offset of the first message not yet sent).
type spool struct {
	dir    string
	max    int64 // bytes the segments may hold in all
	segMax int64 // bytes per segment before the next one starts

	mu      sync.Mutex
	segs    []int64 // segment numbers, oldest first
	size    int64   // bytes in all segments
	w       *os.File
	wSeg    int64
	wOff    int64 // bytes in the writer's segment
	rSeg    int64 // reader: segment and offset of the next message
	rOff    int64
	pending int64 // messages not yet sent
	ready   chan struct{}
}

func openSpool(dir string, limit int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("syslog buffer: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("syslog buffer %s is not a directory", dir)
	}
	s := &spool{dir: dir, max: limit, segMax: max(min(limit/8, 4<<20), 64<<10), ready: make(chan struct{}, 1)}
	names, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	for _, n := range names {
		k, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".seg"), 10, 64)
		if err != nil {
			continue
		}
		s.segs = append(s.segs, k)
	}
	sort.Slice(s.segs, func(i, j int) bool { return s.segs[i] < s.segs[j] })
	if b, err := os.ReadFile(filepath.Join(dir, "cursor")); err == nil {
		fmt.Sscan(string(b), &s.rSeg, &s.rOff)
	}
	// Segments before the cursor were sent.
	for len(s.segs) > 0 && s.segs[0] < s.rSeg {
		os.Remove(s.segPath(s.segs[0]))
		s.segs = s.segs[1:]
	}
	switch {
	case len(s.segs) == 0:
		s.rSeg, s.rOff = 0, 0
	case s.rSeg < s.segs[0]:
		s.rSeg, s.rOff = s.segs[0], 0
	}
	for _, k := range s.segs {
		fi, err := os.Stat(s.segPath(k))
		if err != nil {
			continue
		}
		s.size += fi.Size()
		s.pending += countLines(s.segPath(k), map[bool]int64{true: s.rOff, false: 0}[k == s.rSeg])
	}
	next := int64(1)
	if len(s.segs) > 0 {
		next = s.segs[len(s.segs)-1] + 1
	}
	if s.rSeg == 0 {
		s.rSeg = next
	}
	if err := s.startSegment(next); err != nil {
		return nil, err
	}
	if s.pending > 0 {
		s.ready <- struct{}{}
	}
	return s, nil
}

func countLines(path string, from int64) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0
	}
	var n int64
	r := bufio.NewReader(f)
	for {
		_, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return n
		}
		n++
	}
}

func (s *spool) segPath(k int64) string { return filepath.Join(s.dir, fmt.Sprintf("%012d.seg", k)) }

func (s *spool) startSegment(k int64) error {
	f, err := os.OpenFile(s.segPath(k), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("syslog buffer: %w", err)
	}
	if s.w != nil {
		s.w.Close()
	}
	s.w, s.wSeg, s.wOff = f, k, 0
	s.segs = append(s.segs, k)
	return nil
}

var errSpoolFull = errors.New("the syslog buffer is full")

// push appends a message; it fails when the buffer is full.
func (s *spool) push(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return errors.New("the syslog buffer is closed")
	}
	n := int64(len(msg) + 1)
	if s.size+n > s.max {
		return errSpoolFull
	}
	if s.wOff > 0 && s.wOff+n > s.segMax {
		if err := s.startSegment(s.wSeg + 1); err != nil {
			return err
		}
	}
	line := make([]byte, 0, n)
	line = append(append(line, msg...), '\n')
	if _, err := s.w.Write(line); err != nil {
		return fmt.Errorf("syslog buffer: %w", err)
	}
	s.wOff += n
	s.size += n
	s.pending++
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return nil
}

// peek reads up to max messages from the cursor, without taking them.
func (s *spool) peek(limit int) ([][]byte, error) {
	s.mu.Lock()
	seg, off := s.rSeg, s.rOff
	end := int64(-1) // the writer's segment is read only as far as written
	if seg == s.wSeg {
		end = s.wOff
	}
	s.mu.Unlock()
	if end >= 0 && off >= end {
		return nil, nil
	}
	f, err := os.Open(s.segPath(seg))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	var r io.Reader = f
	if end >= 0 {
		r = io.LimitReader(f, end-off)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var out [][]byte
	for len(out) < limit {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break // a segment's end, or the writer's
		}
		out = append(out, line[:len(line)-1])
	}
	return out, nil
}

// advance takes n messages of total bytes (newlines included) as sent,
// moves to the next segment at a finished one's end, and saves the cursor.
func (s *spool) advance(n int, bytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rOff += bytes
	s.pending -= int64(n)
	for s.rSeg != s.wSeg {
		fi, err := os.Stat(s.segPath(s.rSeg))
		if err == nil && s.rOff < fi.Size() {
			break
		}
		if err == nil {
			s.size -= fi.Size()
		}
		os.Remove(s.segPath(s.rSeg))
		s.segs = s.segs[1:]
		s.rSeg, s.rOff = s.segs[0], 0
	}
	if s.rSeg == s.wSeg && s.rOff == s.wOff && s.wOff > 0 {
		// All sent: start the writer's segment over.
		if err := s.w.Truncate(0); err == nil {
			s.size -= s.wOff
			s.wOff, s.rOff = 0, 0
		}
	}
	return writeFileAtomic(filepath.Join(s.dir, "cursor"), fmt.Appendf(nil, "%d %d\n", s.rSeg, s.rOff))
}

func (s *spool) stats() (pending, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending, s.size
}

func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	s.w = nil
	return err
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
