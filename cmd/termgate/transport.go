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
type lineTransport struct {
	in      io.Reader
	out     io.Writer
	maxLine int
	log     *slog.Logger
}

// Connect implements [mcp.Transport].
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		out:      t.out,
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		readErr:  make(chan error, 1),
		log:      t.log,
	}
	go c.readLoop(t.in, t.maxLine)
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
}

func (c *lineConn) readLoop(in io.Reader, maxLine int) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r, maxLine)
		if tooLong {
			c.replyError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes", maxLine))
		} else if msg := c.decode(line); msg != nil {
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

// readLine reads one line of at most max bytes; a longer line is discarded
// up to its newline and reported as tooLong.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			tooLong = true
			buf = buf[:0]
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		return buf, false, err
	}
}

// decode turns a line into a message, answering what cannot be one.
func (c *lineConn) decode(line []byte) jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		c.replyError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return nil
	}
	if line[0] == '[' {
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		c.replyError(probe.ID, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	return msg
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
	if c.log != nil {
		c.log.Warn("rejected a malformed JSON-RPC message", "code", code, "reason", msg)
	}
	c.writeLine(b)
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
