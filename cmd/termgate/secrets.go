package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/termgate/termgate/redact"
)

// oneOffSecrets registers the one-off secrets agents type (session_send
// secret) for masking. Per session, capped in size and in number: each
// value costs every later redaction a comparison, and a registry without
// bounds would let an agent mask any text out of sight. A value is
// registered only once the gate allowed the input and it was typed (see
// sendSecret); the audit log's record of the agent's input is never masked
// by these values (ecsAuditor.input).
//
// The redaction engine's registry is global and cannot forget a value:
// what a session registered stays masked for the gateway's life, and the
// counts below are what bounds it. The interface is what a per-session
// registry in package redact will replace.
type oneOffSecrets interface {
	// Check says whether a value could be registered for a session,
	// without registering it.
	Check(session, value string) error
	// Register registers a value for a session.
	Register(session, value string) error
	// Forget drops a closed session's count.
	Forget(session string)
}

// Bounds of the one-off secrets.
const (
	maxOneOffPerSession = 16
	maxOneOffTotal      = 1024
	maxOneOffBytes      = 4096
	minOneOffBytes      = 8
)

// engineSecrets is oneOffSecrets over the redaction engine.
type engineSecrets struct {
	e *redact.Engine

	mu      sync.Mutex
	session map[string]map[string]bool
	total   int
}

func newEngineSecrets(e *redact.Engine) *engineSecrets {
	return &engineSecrets{e: e, session: map[string]map[string]bool{}}
}

func (r *engineSecrets) Check(session, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkLocked(session, value)
}

func (r *engineSecrets) checkLocked(session, value string) error {
	switch {
	case len(value) < minOneOffBytes:
		return fmt.Errorf("a one-off secret of %d bytes is too short to mask safely (at least %d)", len(value), minOneOffBytes)
	case len(value) > maxOneOffBytes:
		return fmt.Errorf("a one-off secret is at most %d bytes", maxOneOffBytes)
	case strings.TrimSpace(value) != value:
		return errors.New("a one-off secret must not begin or end with blanks")
	case r.session[session][value]:
		return nil
	case len(r.session[session]) >= maxOneOffPerSession:
		return fmt.Errorf("this session already registered %d one-off secrets; hold the value in the gateway (--secret) and use secret_ref", maxOneOffPerSession)
	case r.total >= maxOneOffTotal:
		return fmt.Errorf("the gateway already holds %d one-off secrets", maxOneOffTotal)
	}
	return nil
}

func (r *engineSecrets) Register(session, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(session, value); err != nil {
		return err
	}
	if r.session[session][value] {
		return nil
	}
	if err := r.e.AddSecret(value); err != nil {
		return err
	}
	if r.session[session] == nil {
		r.session[session] = map[string]bool{}
	}
	r.session[session][value] = true
	r.total++
	return nil
}

func (r *engineSecrets) Forget(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.session, session)
}

// incompleteShell reports whether a shell line is unfinished: a trailing
// backslash, an open quote, an open if/for/while or here-document. A
// shell then waits for the rest, and the next line continues it.
func incompleteShell(text string) bool {
	p := syntax.NewParser()
	inc := false
	err := p.Interactive(strings.NewReader(text+"\n"), func([]*syntax.Stmt) bool {
		inc = p.Incomplete()
		return true
	})
	return inc || err != nil && syntax.IsIncomplete(err)
}
