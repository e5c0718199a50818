package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// Landlock's own denials, named. Where the kernel audits (auditctl -e 1:
// the operator's choice, never the gateway's) and the gateway may read
// its records (root: CAP_AUDIT_READ), each session's Landlock denials
// come from the kernel (sandbox.LandlockAudit), matched to the session by
// the pid that made its domain, which is the session's process. A call
// gathers those of its session like the files inferred from a program's
// errors (fileRefusals), with source "landlock", and a file named by both
// is listed once, as Landlock's. The records arrive asynchronously: a
// call whose output reports a refusal waits (at most syncWait) until the
// kernel's queue has passed a mark of the gateway's, so that its
// program's denials are in. Where the kernel does not audit, nothing
// changes: the inference stays. The exec tool's launches are not watched
// (their pid is not known to the gateway before they run): its results
// keep the inference.

// syncWait bounds how long a call waits for the kernel's records.
const syncWait = 2 * time.Second

// landlockGate is the gateway's reader of Landlock's audit records.
type landlockGate struct {
	g      *gateway
	reader *sandbox.LandlockAudit

	mu       sync.Mutex
	sessions map[string]*sysRefusals // by session id
}

// newLandlockGate opens the reader where it can be (nil where the
// gateway confines nothing or may not read the kernel's audit log).
func newLandlockGate(g *gateway) *landlockGate {
	if g.cfg.Sandbox == "off" {
		return nil
	}
	r, err := sandbox.OpenLandlockAudit()
	if err != nil {
		g.log.Debug("Landlock's denials are inferred from programs' errors: the kernel's audit records cannot be read", "err", err)
		return nil
	}
	return &landlockGate{g: g, reader: r, sessions: map[string]*sysRefusals{}}
}

func (l *landlockGate) close() {
	if l != nil {
		l.reader.Close()
	}
}

// watch gathers the denials of session s until it ends (the returned
// function).
func (l *landlockGate) watch(s *session.Session) func() {
	if l == nil {
		return func() {}
	}
	acc := &sysRefusals{}
	id, profile := s.ID(), s.Sandbox().Profile
	l.mu.Lock()
	l.sessions[id] = acc
	l.mu.Unlock()
	cancel := l.reader.Watch(s.Status().Pid, func(d sandbox.LandlockDenial) {
		acc.add(l.refusal(s, profile, d))
	})
	return func() {
		cancel()
		l.mu.Lock()
		delete(l.sessions, id)
		l.mu.Unlock()
	}
}

// refusal is a denial as a call's result lists it.
func (l *landlockGate) refusal(s *session.Session, profile string, d sandbox.LandlockDenial) Refusal {
	r := Refusal{Access: d.Access(), Profile: profile, Source: "landlock"}
	missing := "Landlock refused " + strings.Join(d.Blockers, ",")
	switch {
	case d.Access() == "connect" || d.Access() == "bind":
		r.Rule = "sandbox.network"
		r.Destination = fmt.Sprintf("%s:%d", d.Address, d.Port)
		r.Reason = "the profile does not allow this TCP port (" + missing + ")"
	case d.Path != "":
		r.Rule = "sandbox.file"
		r.Path = l.g.redactIn(s, d.Path)
		if d.Access() == "write" {
			r.Reason = "the profile does not let sessions write here (" + missing + ")"
		} else {
			r.Reason = "the profile does not grant it (" + missing + ")"
		}
	default:
		r.Rule = "sandbox.scope"
		r.Reason = missing
	}
	// The syscall column holds nothing for Landlock: merging is by path.
	r.Syscall = ""
	return r
}

// refusals returns what Landlock refused to session s since its last
// call, waiting for the kernel's records first when the call's output
// reports a refusal (refusing: the inferred ones, or a permission error).
func (l *landlockGate) refusals(ctx context.Context, s *session.Session, refusing bool) []Refusal {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	acc := l.sessions[s.ID()]
	l.mu.Unlock()
	if acc == nil {
		return nil
	}
	if refusing {
		sctx, cancel := context.WithTimeout(ctx, syncWait)
		if err := l.reader.Sync(sctx); err != nil {
			l.g.log.Debug("Landlock's records: no sync", "session", s.ID(), "err", err)
		}
		cancel()
	}
	return acc.take()
}

// sandboxRefusals is what the sandbox refused during a call on s whose
// output (redacted) is output: Landlock's own records where the kernel
// audits, the files inferred from the output (less those Landlock
// named), and the calls seccomp refused.
func (g *gateway) sandboxRefusals(ctx context.Context, s *session.Session, output string) []Refusal {
	inferred := g.fileRefusals(s, output)
	refusing := len(inferred) > 0 || strings.Contains(output, "ermission denied") || strings.Contains(output, "not permitted")
	named := g.landlock.refusals(ctx, s, refusing)
	inferred = slices.DeleteFunc(inferred, func(f Refusal) bool {
		return slices.ContainsFunc(named, func(n Refusal) bool { return n.Path == f.Path })
	})
	out := append(named, inferred...)
	return append(out, g.seccompRefusals(ctx, s, s.Sandbox().Profile)...)
}
