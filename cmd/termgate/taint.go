package main

import (
	"strings"

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

// A secret the shell decodes from a spelling the redactor does not read
// as one (gh'p_'…, $'\x67hp_…', "gh""p_…") is masked in the audit
// record of the line (hiddenSecretText), but the terminal echoes the line
// as typed: the session's views showed the spelling, which holds all of
// the secret but a few bytes. So when a line is allowed on a session, the
// secrets its policy document shows and its text hides are remembered by
// the session's Taint before the line is typed, as found values: the
// secret itself, and each piece of it of 8 bytes or more that the text
// shows as it is. The echo's copies of those pieces are masked in every
// view; the screen joins a row the terminal wrapped before it is masked.
//
// Found values, not held ones: a held value masks every 8-byte piece of
// itself wherever it appears, the agent's later input in the audit log
// included, so a token the agent made up (gh'p_'evilhostXXXX…) would let
// it blind the log to a word of its choice. A found value masks only
// copies of itself, which printing the same token already does. Found
// values are bounded by the Taint, oldest out first; none is refused.
//
// Not covered: a secret built while the line runs
// ($(printf 'gh%s' 'p_…')) is in neither the text nor the document (it is
// masked once it is printed whole); and code typed into an interpreter
// ('gh' 'p_…' in Python, '\x67hp_…' inside a Python string): the document
// holds a code string only where a call the analysis judges uses it.

// teachHidden has the Taint of in's session remember the secrets the
// policy's document of an allowed input shows and its text hides. Only
// typed text is echoed: an exec's or a connection's check (one per
// execve, on the exec gate's path) has nothing to teach.
func (g *gateway) teachHidden(in GateInput, d Decision) {
	if in.Action != ActionInput && in.Action != ActionKeys {
		return
	}
	if in.Session == nil || in.Secret || d.Policy == nil || d.Policy.Input == nil || g.redactor == nil {
		return
	}
	t := g.taintOf(in.Session.ID)
	if t == nil {
		return
	}
	for _, h := range hiddenSecrets(d.Policy.Input, in.Text, g.redactor) {
		t.Add(h.value, h.rule)
		for _, p := range literalPieces(h.value, in.Text, 8) {
			t.Add(p, h.rule)
		}
	}
}

type hiddenSecret struct{ value, rule string }

// maxHiddenValue bounds the length of a secret literalPieces reads.
const maxHiddenValue = 1024

// hiddenSecrets are the secrets in the strings of doc (values and object
// keys) that text does not hold whole.
func hiddenSecrets(doc any, text string, red *redact.Engine) []hiddenSecret {
	v, err := decodedDoc(doc)
	if err != nil {
		return nil
	}
	var out []hiddenSecret
	seen := map[string]bool{}
	var walk func(any)
	check := func(s string) {
		for _, sp := range red.Find(s, nil) {
			val := s[sp.Start:sp.End]
			if seen[val] || strings.Contains(text, val) {
				continue
			}
			seen[val] = true
			out = append(out, hiddenSecret{val, sp.Rule})
		}
	}
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			check(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				check(k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// literalPieces are the longest pieces of value, of least bytes or more,
// that text holds as they are, in the order they start in value; every
// byte of value inside such a piece is in one of them.
func literalPieces(value, text string, least int) []string {
	value = value[:min(len(value), maxHiddenValue)]
	var out []string
	for i := 0; i+least <= len(value); i++ {
		if !strings.Contains(text, value[i:i+least]) {
			continue
		}
		// The longest value[i:j] in text: holding is monotone in j.
		lo, hi := i+least, len(value)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if strings.Contains(text, value[i:mid]) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		out = append(out, value[i:lo])
		if lo == len(value) {
			break
		}
		// A piece that reaches past this one holds its last least bytes
		// from lo-least+1 on: start there.
		i = max(i, lo-least)
	}
	return out
}
