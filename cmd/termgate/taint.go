package main

import (
	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/session"
)

// Every view of a session leaves the gateway redacted with the session's
// Taint (session.Session.Redact): a secret found once in its output — by
// the stream, or only on a rendered screen where cursor moves put its
// halves side by side — is masked in every later copy, in results,
// screens, scrollback, the output log, progress notes and the session's
// audit records, and so is every piece of 8 bytes or more of a secret
// typed into it. The Taint is the session's: bounded, and let go when the
// session closes.

// redactIn redacts text of session s (nil: text of no session).
func (g *gateway) redactIn(s *session.Session, text string) string {
	if g.stages.Redactor == nil || text == "" {
		return text
	}
	if s != nil && s.Taint() != nil {
		return s.Redact(text)
	}
	return g.stages.redact(text)
}

// redactorOf is how the pipeline redacts what session s shows: with its
// Taint (nil: the engine's rules, as for text of no session).
func (g *gateway) redactorOf(s *session.Session) func(string) string {
	return func(text string) string { return g.redactIn(s, text) }
}

// taintOf returns the Taint of the session with this id, or nil.
func (g *gateway) taintOf(id string) *redact.Taint {
	if id == "" || g.mgr == nil {
		return nil
	}
	s, err := g.mgr.Get(id)
	if err != nil || s.ID() != id {
		return nil
	}
	return s.Taint()
}
