package main

import (
	"encoding/json"
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

// A secret the shell or an interpreter decodes from a spelling the
// redactor does not read as one (gh'p_'…, $'\x67hp_…', "gh" "p_…") is
// masked in the audit record of the line (hiddenSecretText), but the
// terminal echoes the line as typed: the session's views showed the
// spelling, which holds all of the secret but a few bytes. So when a line
// is allowed on a session, the secrets its policy document shows and its
// text hides are held by the session's Taint before the line is typed:
// every piece of 8 bytes or more of each is masked in every view,
// wherever the echo breaks it. If the Taint holds all it may, the value
// and the pieces the text shows are remembered as found values instead.
//
// Not covered: a secret built while the line runs
// ($(printf 'gh%s' 'p_…')) is in neither the text nor the document; it
// is masked once it is printed whole.

// teachHidden holds, in the Taint of in's session, the secrets the
// policy's document of an allowed input shows and its text hides.
func (g *gateway) teachHidden(in GateInput, d Decision) {
	if in.Session == nil || in.Secret || d.Policy == nil || d.Policy.Input == nil || g.redactor == nil {
		return
	}
	t := g.taintOf(in.Session.ID)
	if t == nil {
		return
	}
	for _, h := range hiddenSecrets(d.Policy.Input, in.Text, g.redactor) {
		if t.Hold(h.value) == nil {
			continue
		}
		t.Add(h.value, h.rule)
		for _, p := range literalPieces(h.value, in.Text, 8) {
			t.Add(p, h.rule)
		}
	}
}

type hiddenSecret struct{ value, rule string }

// maxHidden bounds the secrets one document teaches, and the length of
// each that literalPieces reads.
const (
	maxHidden      = 16
	maxHiddenValue = 1024
)

// hiddenSecrets are the secrets in the strings of doc (values and object
// keys) that text does not hold whole.
func hiddenSecrets(doc any, text string, red *redact.Engine) []hiddenSecret {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	var out []hiddenSecret
	seen := map[string]bool{}
	var walk func(any)
	check := func(s string) {
		for _, sp := range red.Find(s, nil) {
			val := s[sp.Start:sp.End]
			if len(out) == maxHidden || seen[val] || strings.Contains(text, val) {
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
// that text holds as they are, in the order they start in value.
func literalPieces(value, text string, least int) []string {
	value = value[:min(len(value), maxHiddenValue)]
	var out []string
	end := 0 // where the last piece ended: a piece inside it adds nothing
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
		if lo > end {
			out = append(out, value[i:lo])
			end = lo
		}
	}
	return out
}
