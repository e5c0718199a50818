package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is newline-delimited JSON-RPC over a reader and a writer,
// like the SDK's stdio transport, except that a malformed line gets a
// JSON-RPC error response and the server keeps serving: the SDK's transport
// ends the connection on the first line it cannot decode, which would let
// one bad byte from a client end every terminal session.
//
// A message is read whole up to maxLine bytes (16 MiB by default). A longer
// one is never held in memory: it is skipped to its newline while a small
// scanner picks its id and method out of the stream, and it is answered
// with an error carrying that id, so that the client's call fails instead
// of waiting forever (and a client that cannot match an error to no id,
// as the go-sdk's cannot, keeps its connection).
type lineTransport struct {
	in       io.Reader
	out      io.Writer
	maxLine  int // longest message read whole
	maxInput int // --max-input, named in the answer to a longer tool call
	log      *slog.Logger
}

// maxMessage is the longest JSON-RPC message read whole: 16 MiB, or more
// when --max-input allows inputs that could not fit in that.
func maxMessage(maxInput int) int { return max(16<<20, 4*maxInput) }

// Connect implements [mcp.Transport].
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		out:      t.out,
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		readErr:  make(chan error, 1),
		log:      t.log,
		maxLine:  t.maxLine,
		maxInput: t.maxInput,
	}
	go c.readLoop(t.in)
	return c, nil
}

type lineConn struct {
	wmu sync.Mutex
	out io.Writer

	incoming chan jsonrpc.Message
	readErr  chan error
	closed   chan struct{}
	once     sync.Once
	log      *slog.Logger
	maxLine  int
	maxInput int
}

func (c *lineConn) readLoop(in io.Reader) {
	lr := newLineReader(in, c.maxLine, 64<<10)
	for {
		line, over, err := lr.next()
		var msg jsonrpc.Message
		if over != nil {
			c.replyOversize(over)
		} else {
			msg = c.decode(line)
		}
		if msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			c.readErr <- err
			return
		}
	}
}

// lineReader splits a stream into lines of at most max bytes. It holds at
// most one line of max bytes (and the bufio buffer): a longer line is
// reported by its size, id and method, never kept.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max, bufSize int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, bufSize), max: max}
}

// oversize describes a line longer than the reader's max.
type oversize struct {
	size   int64
	id     json.RawMessage // the top-level "id" member, when it is a valid id
	method string          // the top-level "method" member, when it is a string
}

// next returns the next line with its newline, or an oversize description
// of it; err is the read error that ended it (io.EOF for a last line
// without a newline).
func (lr *lineReader) next() (line []byte, over *oversize, err error) {
	var (
		buf  []byte
		scan *headScanner
		size int64
	)
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += int64(len(chunk))
		if scan == nil && len(buf)+len(chunk) > lr.max {
			scan = &headScanner{}
			scan.feed(buf)
			buf = nil
		}
		if scan != nil {
			scan.feed(chunk)
		} else {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if scan != nil {
			id, method := scan.result()
			return nil, &oversize{size: size, id: id, method: method}, err
		}
		return buf, nil, err
	}
}

// maxHeadValue bounds what the head scanner keeps of one member's key or
// value; ids and method names are short.
const maxHeadValue = 256

// headScanner follows a JSON text as it streams past, keeping nothing but
// the raw values of its top-level object's last "id" and "method" members
// (each up to maxHeadValue bytes). It never fails: on text that is not
// JSON it reports what it could make out.
type headScanner struct {
	depth     int  // 0: outside the top-level value; 1: in the top-level value
	obj       bool // the top-level value is an object
	done      bool // the top-level value ended
	inString  bool
	escaped   bool
	expectKey bool // the next string at depth 1 is a member's key
	afterKey  bool // a key was read; its value comes after the colon
	valueNext bool // the colon was read; the next token is the value

	inKey    bool
	key      []byte
	capture  bool // collecting a value of interest at depth 1
	prim     bool // ... and it is a number or literal, ended by a delimiter
	want     string
	val      []byte
	overlong bool

	id, method []byte
}

func (s *headScanner) feed(b []byte) {
	for _, c := range b {
		if s.done {
			return
		}
		s.step(c)
	}
}

func (s *headScanner) step(c byte) {
	top := s.depth == 1 && s.obj
	if s.inString {
		if s.inKey {
			s.keep(&s.key, c)
		} else if s.capture {
			s.keep(&s.val, c)
		}
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.inKey {
				s.endKey()
			} else if s.capture {
				s.endValue()
			}
		}
		return
	}
	if s.prim {
		switch c {
		case ' ', '\t', '\r', '\n', ',', '}', ']', ':', '"', '{', '[':
			s.endValue()
		default:
			s.keep(&s.val, c)
			return
		}
	}
	switch c {
	case ' ', '\t', '\r', '\n':
	case '"':
		s.inString = true
		switch {
		case top && s.expectKey:
			s.expectKey, s.inKey, s.key, s.overlong = false, true, append(s.key[:0], c), false
		case top && s.valueNext:
			s.startValue(c, false)
		}
	case '{', '[':
		if top && s.valueNext {
			s.valueNext, s.want = false, "" // an object or array: not an id
		}
		s.depth++
		if s.depth == 1 {
			s.obj = c == '{'
			s.expectKey = s.obj
		}
	case '}', ']':
		s.depth--
		if s.depth <= 0 {
			s.done = true
		}
	case ':':
		if top && s.afterKey {
			s.afterKey, s.valueNext = false, true
		}
	case ',':
		if top {
			s.expectKey, s.afterKey, s.valueNext = true, false, false
		}
	default:
		switch {
		case s.depth == 0:
			s.done = true // the top-level value is not an object
		case top && s.valueNext:
			s.startValue(c, true)
		}
	}
}

func (s *headScanner) keep(dst *[]byte, c byte) {
	if len(*dst) >= maxHeadValue {
		s.overlong = true
		return
	}
	*dst = append(*dst, c)
}

func (s *headScanner) endKey() {
	s.inKey, s.afterKey, s.want = false, true, ""
	var k string
	if !s.overlong && json.Unmarshal(s.key, &k) == nil {
		switch k {
		case "id":
			s.want, s.id = k, nil // the last member wins, whatever its value
		case "method":
			s.want, s.method = k, nil
		}
	}
}

func (s *headScanner) startValue(c byte, prim bool) {
	s.valueNext = false
	if s.want == "" {
		return
	}
	s.capture, s.prim, s.overlong, s.val = true, prim, false, append(s.val[:0], c)
}

// endValue records a complete value of interest; the last member with a
// key wins, as with encoding/json, and an over-long one clears it.
func (s *headScanner) endValue() {
	v := bytes.Clone(s.val)
	if s.overlong {
		v = nil
	}
	if s.want == "id" {
		s.id = v
	} else {
		s.method = v
	}
	s.capture, s.prim, s.want = false, false, ""
}

// result returns the id (only when it is a valid JSON-RPC id: a string or
// a number) and the method name (when it is a string).
func (s *headScanner) result() (json.RawMessage, string) {
	if s.prim {
		s.endValue() // a number that ran to the end of the text
	}
	var id json.RawMessage
	if validID(s.id) {
		id = s.id
	}
	var method string
	if s.method != nil {
		_ = json.Unmarshal(s.method, &method)
	}
	return id, method
}

// replyOversize answers a message that was too long to read: a request
// gets an error with its id; a notification (a method and no id) gets
// nothing, as JSON-RPC wants; a message that is neither gets an error with
// a null id.
func (c *lineConn) replyOversize(o *oversize) {
	if o.id == nil && o.method != "" {
		c.logf("skipped an over-long notification", "method", o.method, "bytes", o.size, "limit", c.maxLine)
		return
	}
	code := int(jsonrpc.CodeInvalidRequest)
	msg := fmt.Sprintf("the message is %d bytes, over the limit of %d bytes for one JSON-RPC message; it was not read, and nothing of it was sent", o.size, c.maxLine)
	if o.method == "tools/call" {
		code = int(jsonrpc.CodeInvalidParams)
		msg += fmt.Sprintf(". A tool's input is limited to %d bytes (--max-input)", c.maxInput)
	}
	c.replyError(o.id, code, msg)
}

func (c *lineConn) logf(msg string, args ...any) {
	if c.log != nil {
		c.log.Warn(msg, args...)
	}
}

// decode turns a line into a message, answering what cannot be one.
func (c *lineConn) decode(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		c.replyError(headID(line), jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return nil
	}
	if line[0] == '[' {
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.replyError(headID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	return msg
}

// headID is the id of a line that could not be decoded, when one can be
// made out.
func headID(line []byte) json.RawMessage {
	var s headScanner
	s.feed(line)
	id, _ := s.result()
	return id
}

func (c *lineConn) replyError(id json.RawMessage, code int, msg string) {
	if len(id) == 0 || !validID(id) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	c.logf("rejected a malformed JSON-RPC message", "code", code, "reason", msg)
	_ = c.writeLine(b)
}

func validID(id json.RawMessage) bool {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

func (c *lineConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Read implements [mcp.Connection].
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m, nil
	case err := <-c.readErr:
		c.readErr <- err // later reads see it too
		return nil, err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements [mcp.Connection].
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	return c.writeLine(b)
}

// Close implements [mcp.Connection].
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements [mcp.Connection].
func (c *lineConn) SessionID() string { return "" }
