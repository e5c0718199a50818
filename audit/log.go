package audit

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record is one event, as nested JSON objects under ECS field names.
type Record map[string]any

// Set puts v at a dotted path: r.Set("event.kind", "event") makes
// {"event": {"kind": "event"}}. It returns r.
func (r Record) Set(path string, v any) Record {
	m, key, _ := r.parent(path, true)
	m[key] = v
	return r
}

// Get returns the value at a dotted path.
func (r Record) Get(path string) (any, bool) {
	m, key, ok := r.parent(path, false)
	if !ok {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

// parent walks a dotted path ("@timestamp" is one name) to the object
// that holds its last name, making the objects on the way when create is
// set, and returns it with that name.
func (r Record) parent(path string, create bool) (map[string]any, string, bool) {
	m := map[string]any(r)
	if strings.HasPrefix(path, "@") {
		return m, path, true
	}
	for {
		name, rest, more := strings.Cut(path, ".")
		if !more {
			return m, path, true
		}
		next, ok := m[name].(map[string]any)
		if !ok {
			if !create {
				return nil, "", false
			}
			next = map[string]any{}
			m[name] = next
		}
		m, path = next, rest
	}
}

// Options configure a Log.
type Options struct {
	Path      string        // the active file; rotated files sit beside it as Path.000001, …
	Key       []byte        // keys the chain's HMAC
	MaxSize   int64         // rotate when the active file passes this many bytes (0: never)
	SyncEvery time.Duration // fsync this often when records wait unsynced (default 1s)
	// Checkpoint writes a checkpoint record after every so many records
	// (default 1000); a checkpoint is also written at rotation and close.
	Checkpoint int
	Forward    Forwarder // also sends every line here (syslog), if set
	// MaxRecord bounds a record's line in bytes (default DefaultMaxRecord):
	// longer string fields are cut, with a marker giving their length and
	// sha256, so that a record reaches a collector whole.
	MaxRecord int
}

// DefaultMaxRecord is the default bound of a record's line: rsyslog's
// default message size (8 KiB) less room for the syslog header.
const DefaultMaxRecord = 7680

// Forwarder receives every line written, best effort.
type Forwarder interface {
	Send(line []byte)
	Close() error
}

// Log is an append-only, hash-chained JSON-lines audit log.
type Log struct {
	opt Options

	mu      sync.Mutex
	f       *os.File
	size    int64
	seq     int64
	prev    string
	dirty   bool // written, not yet synced
	since   int  // records since the last checkpoint
	closed  bool
	stop    chan struct{}
	stopped chan struct{}
}

// Open opens (or creates, 0600) the log and continues its chain: the
// sequence and the previous hash come from the last record of the active
// file, or of the newest rotated one. An active file whose last line was
// cut short by a crash is rotated aside as it is, so that nothing is ever
// appended to a torn record.
func Open(o Options) (*Log, error) {
	if len(o.Key) < 16 {
		return nil, errors.New("audit: the chain key must be at least 16 bytes")
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = time.Second
	}
	if o.Checkpoint <= 0 {
		o.Checkpoint = 1000
	}
	if o.MaxRecord <= 0 {
		o.MaxRecord = DefaultMaxRecord
	}
	if o.MaxRecord < 2048 {
		return nil, errors.New("audit: a record must be allowed at least 2048 bytes")
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if fi, err := os.Stat(o.Path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit: %s is not a regular file", o.Path)
	}
	l := &Log{opt: o, stop: make(chan struct{}), stopped: make(chan struct{})}
	last, torn, err := lastRecord(o.Path)
	if err != nil {
		return nil, err
	}
	if torn {
		if _, err := l.rotateName(); err != nil {
			return nil, err
		}
	}
	if last == nil {
		if rotated := l.rotated(); len(rotated) > 0 {
			if last, _, err = lastRecord(rotated[len(rotated)-1]); err != nil {
				return nil, err
			}
		}
	}
	if last != nil {
		l.seq, l.prev = seqOf(last), hashOf(last)
	}
	if err := l.openFile(); err != nil {
		return nil, err
	}
	go l.syncLoop()
	return l, nil
}

func (l *Log) openFile() error {
	f, err := os.OpenFile(l.opt.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// rotated lists the rotated files, oldest first.
func (l *Log) rotated() []string {
	matches, _ := filepath.Glob(l.opt.Path + ".[0-9]*")
	sort.Strings(matches) // fixed-width numbers sort in order
	return matches
}

// rotateName moves the active file aside to the next rotated name.
func (l *Log) rotateName() (string, error) {
	n := 1
	if r := l.rotated(); len(r) > 0 {
		last := r[len(r)-1]
		k, err := strconv.Atoi(last[strings.LastIndexByte(last, '.')+1:])
		if err == nil {
			n = k + 1
		}
	}
	name := fmt.Sprintf("%s.%06d", l.opt.Path, n)
	if err := os.Rename(l.opt.Path, name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("audit: rotating: %w", err)
	}
	return name, nil
}

// Write appends a record to the chain. sync makes it durable before
// returning (security events); other records are synced within
// SyncEvery. An error means the record is not in the log.
func (l *Log) Write(r Record, sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit: the log is closed")
	}
	if err := l.writeLocked(r, sync); err != nil {
		return err
	}
	l.since++
	if l.since >= l.opt.Checkpoint {
		if err := l.checkpointLocked("periodic"); err != nil {
			return err
		}
	}
	if l.opt.MaxSize > 0 && l.size >= l.opt.MaxSize {
		return l.rotateLocked()
	}
	return nil
}

func (l *Log) writeLocked(r Record, sync bool) error {
	if _, ok := r.Get("@timestamp"); !ok {
		r.Set("@timestamp", time.Now().UTC().Format(TimeFormat))
	}
	r.Set("event.sequence", l.seq+1)
	r.Set("termgate.chain.prev", l.prev)
	delete(chainOf(r), "hash")
	canon, err := canonical(r)
	if err != nil {
		return fmt.Errorf("audit: encoding a record: %w", err)
	}
	// The seal adds `"hash":"<64 hex>",` and the newline: 76 bytes.
	if len(canon)+76 > l.opt.MaxRecord {
		if canon, err = fit(r, l.opt.MaxRecord-76); err != nil {
			return fmt.Errorf("audit: encoding a record: %w", err)
		}
	}
	h := seal(l.opt.Key, canon)
	r.Set("termgate.chain.hash", h)
	// The line is the canonical form with the seal put in its sorted
	// place ("hash" sorts before "prev"), without encoding it all again.
	// Inside JSON strings quotes are escaped, so the first raw
	// `"chain":{"prev":` is the chain object itself.
	i := bytes.Index(canon, []byte(`"chain":{"prev":`))
	if i < 0 {
		return errors.New("audit: the record has no chain object")
	}
	i += len(`"chain":{`)
	line := make([]byte, 0, len(canon)+len(h)+12)
	line = append(line, canon[:i]...)
	line = append(line, `"hash":"`...)
	line = append(line, h...)
	line = append(line, `",`...)
	line = append(line, canon[i:]...)
	line = append(line, '\n')
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("audit: writing %s: %w", l.opt.Path, err)
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("audit: syncing %s: %w", l.opt.Path, err)
		}
		l.dirty = false
	} else {
		l.dirty = true
	}
	l.seq++
	l.prev = h
	l.size += int64(len(line))
	if l.opt.Forward != nil {
		l.opt.Forward.Send(line[:len(line)-1])
	}
	return nil
}

func chainOf(r Record) map[string]any {
	tg, _ := r["termgate"].(map[string]any)
	c, _ := tg["chain"].(map[string]any)
	return c
}

// seal is the chain's keyed hash of a record's canonical JSON (the record
// without its hash; it holds its sequence and the previous hash).
func seal(key, canon []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(canon)
	return hex.EncodeToString(m.Sum(nil))
}

func (l *Log) checkpointLocked(why string) error {
	l.since = 0
	r := Record{}
	r.Set("event.kind", "event").Set("event.category", []string{"configuration"}).Set("event.type", []string{"info"}).
		Set("event.action", "audit-checkpoint").Set("event.outcome", "success").
		Set("termgate.checkpoint.reason", why).Set("termgate.checkpoint.records", l.seq+1)
	return l.writeLocked(r, true)
}

// rotateLocked ends the active file with a checkpoint, moves it aside and
// starts a new one; the chain goes on across the files.
func (l *Log) rotateLocked() error {
	if err := l.checkpointLocked("rotation"); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if _, err := l.rotateName(); err != nil {
		return err
	}
	return l.openFile()
}

func (l *Log) syncLoop() {
	defer close(l.stopped)
	t := time.NewTicker(l.opt.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if l.dirty && !l.closed {
				if err := l.f.Sync(); err == nil {
					l.dirty = false
				}
			}
			l.mu.Unlock()
		}
	}
}

// Close writes a final checkpoint, syncs and closes the file, and stops
// the forwarder.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	err := l.checkpointLocked("close")
	l.closed = true
	close(l.stop)
	err = errors.Join(err, l.f.Sync(), l.f.Close())
	l.mu.Unlock()
	<-l.stopped
	if l.opt.Forward != nil {
		err = errors.Join(err, l.opt.Forward.Close())
	}
	return err
}

// Path returns the active file.
func (l *Log) Path() string { return l.opt.Path }

// lastRecord reads the last complete record of a file; torn reports a last
// line cut short (no newline, or not JSON).
func lastRecord(path string) (Record, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	// The tail is enough: records are small.
	const tail = 1 << 20
	off := max(0, fi.Size()-tail)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, false, err
	}
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, false, err
	}
	if len(b) == 0 {
		return nil, false, nil
	}
	torn := b[len(b)-1] != '\n'
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		r, err := parse(lines[i])
		if err == nil {
			return r, torn, nil
		}
		if i == len(lines)-1 {
			torn = true
		}
	}
	return nil, torn, nil
}

func parse(line []byte) (Record, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var r Record
	if err := d.Decode(&r); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data")
	}
	return r, nil
}

func seqOf(r Record) int64 {
	v, _ := r.Get("event.sequence")
	switch n := v.(type) {
	case json.Number:
		i, _ := n.Int64()
		return i
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

func hashOf(r Record) string {
	s, _ := chainOf(r)["hash"].(string)
	return s
}

func prevOf(r Record) string {
	s, _ := chainOf(r)["prev"].(string)
	return s
}
