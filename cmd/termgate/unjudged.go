package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Lines a session's shell refused because the gateway typed and judged no
// such line (no ticket let it run: session/tickets.go) — keys a program
// pushed into the terminal, a line typed ahead that reached the shell
// while the gateway thought another program read it. Each is audited at
// once as a denied input (rule shell.unjudged_line, event.action
// terminal-input, a security event, so fsync'd; termgate.input.origin
// "unjudged"; process.command_line the line as bash quotes it, redacted)
// and named in the session's next result (unjudged_refused).

const ruleUnjudged = "shell.unjudged_line"

// maxUnjudgedNoted bounds what one session keeps for its next result.
const maxUnjudgedNoted = 8

type unjudgedNotes struct {
	mu sync.Mutex
	m  map[string]*unjudgedNote
}

type unjudgedNote struct {
	lines []string
	more  int
}

// onUnjudged is the sessions' session.UnjudgedHandler.
func (g *gateway) onUnjudged(id, line string, lost int) {
	text := line
	if lost > 0 {
		text = fmt.Sprintf("[%d more lines refused at once; not kept]", lost)
	}
	d := Decision{Action: Deny, Rule: ruleUnjudged, Severity: "high",
		Reason: "the line reached the shell without passing the gateway (no ticket for it): the shell refused it and nothing of it ran"}
	ev := AuditEvent{Kind: KindDecision, Decision: d,
		Input:  GateInput{Action: ActionInput, Text: text, Program: "bash", Session: &GateRef{ID: id}},
		Fields: map[string]any{"termgate.input.origin": "unjudged"}}
	if err := g.stages.record(context.Background(), ev); err != nil {
		g.log.Error("audit: recording a line the shell refused", "session", id, "err", err)
	}
	g.unjudged.mu.Lock()
	defer g.unjudged.mu.Unlock()
	if g.unjudged.m == nil {
		g.unjudged.m = map[string]*unjudgedNote{}
	}
	n := g.unjudged.m[id]
	if n == nil {
		n = &unjudgedNote{}
		g.unjudged.m[id] = n
	}
	switch {
	case lost > 0:
		n.more += lost
	case len(n.lines) < maxUnjudgedNoted:
		n.lines = append(n.lines, line)
	default:
		n.more++
	}
}

// takeUnjudged returns what a session's shell refused since its last
// result, and how many more.
func (g *gateway) takeUnjudged(id string) ([]string, int) {
	g.unjudged.mu.Lock()
	defer g.unjudged.mu.Unlock()
	n := g.unjudged.m[id]
	delete(g.unjudged.m, id)
	if n == nil {
		return nil, 0
	}
	return n.lines, n.more
}

// forgetUnjudged drops what a session no longer needs.
func (g *gateway) forgetUnjudged(id string) {
	g.unjudged.mu.Lock()
	delete(g.unjudged.m, id)
	g.unjudged.mu.Unlock()
}

// unjudgedText is how a result names the lines the shell refused.
func unjudgedText(lines []string, more int) string {
	if len(lines) == 0 && more == 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "[termgate refused a line that reached the shell without passing the gateway (typed into the terminal by a program?): %s — nothing of it ran; audited]\n", l)
	}
	if more > 0 {
		fmt.Fprintf(&b, "[and %d more such lines, refused and audited]\n", more)
	}
	return b.String()
}
