package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// toolDef is one row of the tool table: the tool as clients see it and how
// to register its typed handler.
type toolDef struct {
	tool     *mcp.Tool
	register func(*mcp.Server)
}

func newTool[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) toolDef {
	return toolDef{tool: t, register: func(s *mcp.Server) { mcp.AddTool(s, t, h) }}
}

func ptr[T any](v T) *T { return &v }

// guard wraps every tool handler. It ties the call's audit records
// together, reports progress when the client asked for it, and checks the
// arguments' size. Of what the handler returns, it redacts an error (an
// error can quote input that holds a secret) and records it as a
// tool_error; a refusal becomes an isError result whose structured
// content still carries the decision; a panic becomes an isError result
// (protocol.go).
func guard[In, Out any](g *gateway, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		ctx = withCall(ctx, req)
		name := ""
		if req != nil && req.Params != nil {
			name = req.Params.Name
		}
		defer func() {
			if r := recover(); r != nil {
				var zero Out
				res, out, err = nil, zero, errors.New(g.panicked(ctx, "tool "+name, r, GateInput{Client: clientOf(req)}))
			}
		}()
		p := g.startProgress(ctx, req)
		defer p.stop()
		ctx = context.WithValue(ctx, progressKey{}, p)
		g.testPanicPoint("tool " + name)
		if err = g.checkArgsSize(req); err == nil {
			res, out, err = h(ctx, req, in)
		}
		if err == nil {
			return res, out, nil
		}
		var ref *refusal
		if errors.As(err, &ref) {
			err = ref // what the session wrapped it in (a refusal at Enter) goes
		}
		msg := g.stages.redact(err.Error())
		switch {
		case ref != nil:
			if r, ok := any(&out).(refusable); ok {
				r.refused(g, ref)
			}
			// The hint (agent mode's one-time token) is the agent's only:
			// the tool_error record below quotes msg, not the hint.
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg + ref.hint}}}
		case ctx.Err() != nil:
			// The client cancelled the call (or went away): it gets no
			// answer; what the call started keeps running.
			msg = fmt.Sprintf("the call was cancelled (%v); what it started keeps running, and session_read shows its output", context.Cause(ctx))
		}
		if aerr := g.stages.record(ctx, AuditEvent{Kind: KindToolError, Err: msg, Input: GateInput{Client: clientOf(req)}}); aerr != nil {
			g.log.Error("audit: recording a tool error", "err", aerr)
		}
		if ref != nil {
			return res, out, nil
		}
		return res, out, errors.New(msg)
	}
}

// checkArgsSize bounds a call's arguments as a whole, whatever fields they
// hold: at most what --max-input allows each input, with room for JSON's
// escapes. Each input field is checked exactly as well (checkInputSize).
func (g *gateway) checkArgsSize(req *mcp.CallToolRequest) error {
	if req == nil || req.Params == nil {
		return nil
	}
	limit := 8*g.cfg.MaxInput + 64<<10
	if n := len(req.Params.Arguments); n > limit {
		return fmt.Errorf("the call's arguments are %d bytes, over the limit of %d bytes (--max-input is %d; JSON escapes counted); nothing was sent", n, limit, g.cfg.MaxInput)
	}
	return nil
}

// refusable results carry a refusal's decision in their structured
// content, with what else is known of the session or the start.
type refusable interface {
	refused(g *gateway, r *refusal)
}

// refused: nothing of this call runs (complete); the session is described
// as it is.
func (o *ioOut) refused(g *gateway, r *refusal) {
	o.Decision, o.Complete = &r.d, true
	if r.in.Session == nil {
		return
	}
	o.SessionID = r.in.Session.ID
	if s, err := g.mgr.Get(o.SessionID); err == nil {
		st := s.Status()
		o.Alive, o.Program, o.Busy, o.EchoOff = st.Alive, st.Program, st.Busy, st.EchoOff
	}
}

func (o *startOut) refused(g *gateway, r *refusal) {
	o.Decision, o.Stages, o.Argv = &r.d, g.stages.describe(), []string{}
	if r.in.Start != nil {
		o.Name, o.Argv = r.in.Start.Name, g.redactAll(r.in.Start.Argv)
	}
}

// refused: the command did not run, so it has no exit code (-1).
func (o *execOut) refused(g *gateway, r *refusal) {
	o.Decision, o.ExitCode = &r.d, -1
}

// redactAll redacts each string of a list (an argv).
func (g *gateway) redactAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = g.stages.redact(s)
	}
	return out
}

// annotations spells every hint out: the protocol's defaults for unset
// destructive and open-world hints are true, so nothing is left unset.
func annotations(title string, readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		Title:           title,
		ReadOnlyHint:    readOnly,
		DestructiveHint: ptr(destructive),
		IdempotentHint:  idempotent,
		OpenWorldHint:   ptr(openWorld),
	}
}

// tools is the tool table.
func (g *gateway) tools() []toolDef {
	t := g.baseTools()
	if g.cfg.ConfirmMode == "agent" {
		t = append(t, newTool(&mcp.Tool{
			Name:        "confirm",
			Description: "Only with --confirm-mode=agent: redeem the one-time token a refused input's result gave, with a written justification that is kept in the audit log; then send exactly the same input again. The approval is single use and expires.",
			Annotations: annotations("Confirm an input", false, false, false, false),
		}, guard(g, g.confirmTool)))
	}
	return t
}

func (g *gateway) baseTools() []toolDef {
	return []toolDef{
		newTool(&mcp.Tool{
			Name:        "session_start",
			Description: "Start a program in a new persistent terminal session (default: the configured shell, bash). Give argv, or command as a shell line. Returns the session id, the program's first output and its prompt.",
			Annotations: annotations("Start a terminal session", false, false, false, true),
		}, guard(g, g.sessionStart)),
		newTool(&mcp.Tool{
			Name:        "session_send",
			Description: "Type text into a session (Enter is appended unless enter is false) and wait until it completes: the command finishes (bash/zsh, with exit_code), the program's prompt returns, wait_for matches, the program exits, or output goes quiet. complete:false means it is still running; session_read continues.",
			Annotations: annotations("Send input to a session", false, true, false, true),
		}, guard(g, g.sessionSend)),
		newTool(&mcp.Tool{
			Name:        "session_keys",
			Description: "Press named keys in a session: enter, tab, shift+tab, esc, backspace, delete, up, down, left, right, home, end, pgup, pgdn, f1-f12, ctrl+<key>, alt+<key>; append *N to repeat (down*5). Arrows follow the terminal's cursor-key mode (vim, less).",
			Annotations: annotations("Press keys in a session", false, true, false, true),
		}, guard(g, g.sessionKeys)),
		newTool(&mcp.Tool{
			Name:        "session_read",
			Description: "Read a session without sending anything: mode new (output since the last read, at once; with timeout_ms, wait for the running command), screen (the visible screen and cursor, for vim, top, less), scrollback (the last lines of history), or log (the session's whole history as a human reads it, paged: offset is the first line (terminal row, 0 the first ever, negative from the end), lines how many; the result gives next_offset and total_lines). A result whose output was cut gives in rest the exact log call that returns what was cut.",
			Annotations: annotations("Read a session", true, false, true, false),
		}, guard(g, g.sessionRead)),
		newTool(&mcp.Tool{
			Name:        "session_resize",
			Description: "Resize a session's terminal; the program gets SIGWINCH.",
			Annotations: annotations("Resize a session", false, false, true, false),
		}, guard(g, g.sessionResize)),
		newTool(&mcp.Tool{
			Name:        "session_list",
			Description: "List sessions with their program in the foreground, whether busy, and whether alive.",
			Annotations: annotations("List sessions", true, false, true, false),
		}, guard(g, g.sessionList)),
		newTool(&mcp.Tool{
			Name:        "session_info",
			Description: "Details of one session: argv, cwd, foreground program, busy, exit code, terminal modes, byte counts, and which gateway stages are in force.",
			Annotations: annotations("Describe a session", true, false, true, false),
		}, guard(g, g.sessionInfo)),
		newTool(&mcp.Tool{
			Name:        "session_close",
			Description: "Close a session: EOF, then SIGHUP, SIGTERM and SIGKILL to its whole process tree, with a grace period between steps. Closing a closed session is not an error.",
			Annotations: annotations("Close a session", false, true, true, false),
		}, guard(g, g.sessionClose)),
		newTool(&mcp.Tool{
			Name:        "exec",
			Description: "Run one shell command in a fresh shell (not in a session) and return its output and exit code. The command is killed with its process group at timeout_ms.",
			Annotations: annotations("Run one command", false, true, false, true),
		}, guard(g, g.exec)),
	}
}

// ---- shared result shapes ----

// ioOut is the result of an input or a read.
type ioOut struct {
	SessionID  string    `json:"session_id" jsonschema:"the session"`
	Output     string    `json:"output" jsonschema:"what a human would read: ANSI stripped, echo and trailing prompt removed, redacted, capped"`
	Complete   bool      `json:"complete" jsonschema:"false while the command is still running; session_read continues"`
	Completion string    `json:"completion,omitempty" jsonschema:"command_finished, prompt, pattern, exited, quiet or timeout"`
	ExitCode   *int      `json:"exit_code,omitempty" jsonschema:"the command's exit code (bash/zsh), or the program's once it exited"`
	Prompt     string    `json:"prompt,omitempty" jsonschema:"the prompt the program shows now"`
	Alive      bool      `json:"alive" jsonschema:"the session's program is running"`
	Program    string    `json:"program" jsonschema:"the terminal's foreground program"`
	Busy       bool      `json:"busy" jsonschema:"the foreground program is not the session's own shell"`
	Truncated  bool      `json:"truncated" jsonschema:"output was cut to max_output, keeping head and tail"`
	Screen     bool      `json:"screen,omitempty" jsonschema:"output is the rendered screen of a full-screen program"`
	Continued  bool      `json:"continued,omitempty" jsonschema:"the shell waits for the rest of an unfinished command"`
	EchoOff    bool      `json:"echo_off,omitempty" jsonschema:"the terminal is reading with echo off (a password prompt)"`
	LostLines  int64     `json:"lost_lines,omitempty" jsonschema:"lines that scrolled past the scrollback before they could be read (the output log may still hold them: see rest)"`
	Rest       *readCall `json:"rest,omitempty" jsonschema:"when output was cut: the session_read call (mode log) that returns what was cut"`
	Decision   *Decision `json:"decision,omitempty" jsonschema:"the gate's decision on this input"`
	Refused    []Refusal `json:"sandbox_refused,omitempty" jsonschema:"what the sandbox refused while this call ran (a connection the egress proxy refused): destination, program, profile, rule, reason"`
	refusedN   int       // refusals past the list
	// ExecRefused are the programs the exec gate refused during the call.
	ExecRefused []execRefusal `json:"exec_refused,omitempty" jsonschema:"programs the command started that the exec gate refused (EPERM): which, by which rule, why; the rest of the command may have run"`
	// Unjudged are lines the session's shell refused since the last
	// result: they reached it without passing the gateway (unjudged.go).
	Unjudged  []string `json:"unjudged_refused,omitempty" jsonschema:"lines that reached the session's shell without passing the gateway (typed into the terminal by a program): the shell refused them and nothing of them ran; each was audited"`
	unjudgedN int      // more of them, past the list
}

func (o ioOut) text() string {
	var b strings.Builder
	b.WriteString(o.Output)
	if o.Output != "" && !strings.HasSuffix(o.Output, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(refusalText(o.ExecRefused))
	b.WriteString(refusedText(o.Refused, o.refusedN))
	b.WriteString(unjudgedText(o.Unjudged, o.unjudgedN))
	fmt.Fprintf(&b, "[session %s · %s", o.SessionID, o.Program)
	switch {
	case !o.Complete:
		b.WriteString(" · still running: session_read with timeout_ms waits for more")
	case o.Completion != "":
		fmt.Fprintf(&b, " · complete (%s)", o.Completion)
	}
	if o.ExitCode != nil {
		fmt.Fprintf(&b, " · exit %d", *o.ExitCode)
	}
	if o.Prompt != "" {
		fmt.Fprintf(&b, " · prompt %q", o.Prompt)
	}
	if o.EchoOff {
		b.WriteString(" · echo off (password prompt)")
	}
	if !o.Alive {
		b.WriteString(" · exited")
	}
	if o.Rest != nil {
		fmt.Fprintf(&b, " · output cut: %s returns the rest", o.Rest)
	}
	b.WriteString("]")
	return b.String()
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// ---- validation ----

const (
	minRows, maxRows = 2, 500
	minCols, maxCols = 10, 1000
)

func (g *gateway) timeout(ms int, def time.Duration) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, fmt.Errorf("timeout_ms must not be negative")
	case ms == 0:
		return def, nil
	case time.Duration(ms)*time.Millisecond > g.cfg.MaxTimeout:
		return 0, fmt.Errorf("timeout_ms %d is over the limit of %d (--max-timeout)", ms, g.cfg.MaxTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (g *gateway) quiet(ms int) (time.Duration, error) {
	if ms < 0 || ms > 60_000 {
		return 0, fmt.Errorf("quiet_ms must be 0 to 60000")
	}
	if ms == 0 {
		return g.cfg.Quiet, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func compileWaitFor(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	if len(expr) > 4096 {
		return nil, errors.New("wait_for is longer than 4096 characters")
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("wait_for is not a valid regular expression: %v", err)
	}
	return re, nil
}

// maxOutput checks a call's max_output: 0 is --max-output, and a call may
// ask for any cap from 1 to --max-output-ceiling. A result never holds more
// characters than its cap, the line that says what was cut included.
func (g *gateway) maxOutput(n int) (int, error) {
	switch {
	case n < 0:
		return 0, errors.New("max_output must not be negative")
	case n == 0:
		return g.cfg.MaxOutput, nil
	case n > g.cfg.MaxOutputCeiling:
		return 0, fmt.Errorf("max_output %d is over the ceiling of %d (--max-output-ceiling)", n, g.cfg.MaxOutputCeiling)
	}
	return n, nil
}

func (g *gateway) checkInputSize(n int) error {
	if n > g.cfg.MaxInput {
		return fmt.Errorf("input is %d bytes, over the limit of %d (--max-input); nothing was sent", n, g.cfg.MaxInput)
	}
	return nil
}

func clientOf(req *mcp.CallToolRequest) Client {
	if req == nil {
		return Client{}
	}
	if ci := req.ClientInfo(); ci != nil {
		return Client{Name: ci.Name, Version: ci.Version}
	}
	return Client{}
}

// ---- session_start ----

type startIn struct {
	Command   string            `json:"command,omitempty" jsonschema:"a shell line to run, e.g. 'python3 -q' or 'psql mydb'; default: the configured shell"`
	Argv      []string          `json:"argv,omitempty" jsonschema:"the program and its arguments, instead of command"`
	Name      string            `json:"name,omitempty" jsonschema:"a name to refer to the session by, instead of its id"`
	Cwd       string            `json:"cwd,omitempty" jsonschema:"working directory; default: the server's"`
	Env       map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	Rows      int               `json:"rows,omitempty" jsonschema:"terminal rows, 2-500; default 24"`
	Cols      int               `json:"cols,omitempty" jsonschema:"terminal columns, 10-1000; default 80"`
	Mode      string            `json:"mode,omitempty" jsonschema:"pty (default) or pipe"`
	TimeoutMs int               `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the first prompt; default 10000"`
	MaxOutput int               `json:"max_output,omitempty" jsonschema:"cap on returned characters"`
}

type startOut struct {
	SessionID   string            `json:"session_id" jsonschema:"the new session's id"`
	Name        string            `json:"name,omitempty" jsonschema:"its name"`
	Pid         int               `json:"pid" jsonschema:"process id of the session's program"`
	Argv        []string          `json:"argv" jsonschema:"what was started"`
	Mode        string            `json:"mode" jsonschema:"pty or pipe"`
	Program     string            `json:"program" jsonschema:"the terminal's foreground program"`
	Integration bool              `json:"shell_integration" jsonschema:"bash/zsh report each command's end and exit code"`
	Output      string            `json:"output" jsonschema:"the program's first output (banner), redacted"`
	Complete    bool              `json:"complete" jsonschema:"the program showed a prompt or went quiet"`
	Completion  string            `json:"completion,omitempty" jsonschema:"how the wait for the first prompt ended"`
	Prompt      string            `json:"prompt,omitempty" jsonschema:"the prompt the program shows"`
	Truncated   bool              `json:"truncated" jsonschema:"output was capped"`
	Sandbox     string            `json:"sandbox" jsonschema:"the session's confinement"`
	Stages      map[string]string `json:"stages" jsonschema:"which gateway stages are in force"`
	Decision    *Decision         `json:"decision,omitempty" jsonschema:"the gate's decision on the start"`
	Cwd         string            `json:"cwd,omitempty" jsonschema:"where the session started"`
	Refused     []Refusal         `json:"sandbox_refused,omitempty" jsonschema:"what the sandbox refused while the program started (a connection the egress proxy refused)"`
}

// sandboxText says how a session is confined, for results.
func (g *gateway) sandboxText(s *session.Session) string {
	if g.cfg.Sandbox == "off" {
		return sandboxStatusOf(nil, sandbox.Status{}) + gateText(s.Sandbox())
	}
	return s.Sandbox().String()
}

func (g *gateway) sessionStart(ctx context.Context, req *mcp.CallToolRequest, in startIn) (*mcp.CallToolResult, startOut, error) {
	var out startOut
	if in.Command != "" && len(in.Argv) > 0 {
		return nil, out, errors.New("give command or argv, not both")
	}
	if err := g.checkInputSize(len(in.Command) + len(strings.Join(in.Argv, " "))); err != nil {
		return nil, out, err
	}
	rows, cols := in.Rows, in.Cols
	if rows == 0 {
		rows = 24
	}
	if cols == 0 {
		cols = 80
	}
	if rows < minRows || rows > maxRows || cols < minCols || cols > maxCols {
		return nil, out, fmt.Errorf("rows must be %d-%d and cols %d-%d; got %dx%d", minRows, maxRows, minCols, maxCols, rows, cols)
	}
	mode := session.Mode(in.Mode)
	if mode == "" {
		mode = session.ModePTY
	}
	if mode != session.ModePTY && mode != session.ModePipe {
		return nil, out, fmt.Errorf("mode must be pty or pipe, not %q", in.Mode)
	}
	if len(in.Name) > 64 || strings.ContainsFunc(in.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, out, errors.New("name must be at most 64 printable characters")
	}
	if strings.HasPrefix(in.Name, "s-") {
		return nil, out, errors.New(`names starting with "s-" are reserved for session ids`)
	}
	wait, err := g.timeout(in.TimeoutMs, 10*time.Second)
	if err != nil {
		return nil, out, err
	}
	maxOut, err := g.maxOutput(in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	bundle := g.policy.Bundle()
	dir, agent, err := g.checkStart(bundle, in.Cwd, in.Env)
	if err != nil {
		return nil, out, err
	}
	argv, err := startArgv(in.Command, in.Argv, g.cfg.Shell)
	if err != nil {
		return nil, out, err
	}
	gin := startInput(in.Name, argv, dir, agent)
	gin.Client = clientOf(req)
	gin.Start.Confined = g.cfg.Sandbox != "off"
	// A retry that carries the human's answer about an earlier start's
	// connections: taken before the gate reads the request's state.
	answers, declined, err := g.egress.answer(ctx, req, gin)
	if err == nil {
		err = declined
	}
	if err != nil {
		return nil, out, err
	}
	var s *session.Session
	var r session.Result
	var shown string // what the user's startup files said, before the first output
	o, err := g.stages.Run(ctx, req, gin, func(ctx context.Context, d Decision) (Acted, error) {
		var a Acted
		var err error
		s, r, a, err = g.startSession(ctx, req, answers, gin, d, bundle, dir, argv, agent, in, mode, rows, cols, wait)
		if err != nil {
			return Acted{}, err
		}
		shown = g.startupOutput(s, maxOut)
		a.Cap = func(text string) (string, bool, *readCall) {
			return g.capResult(s, r, text, maxOut-utf8.RuneCountInString(shown))
		}
		return a, nil
	})
	if o.Pending != nil {
		return o.Pending, out, nil
	}
	if err != nil {
		return nil, out, err
	}
	d := o.Decision
	st := s.Status()
	out = startOut{
		SessionID: s.ID(), Name: in.Name, Pid: st.Pid, Argv: g.redactAll(argv), Mode: string(mode),
		Program: st.Program, Integration: st.Integration,
		Output: shown + o.Output, Complete: r.Complete, Completion: string(r.Completion),
		Prompt: g.redactIn(s, r.Prompt), Truncated: o.Truncated,
		Sandbox: g.sandboxText(s), Stages: g.stages.describe(), Decision: &d, Refused: o.Acted.Refused,
		Cwd: g.stages.redact(dir.Path),
	}
	g.log.Info("session started", "session", s.ID(), "program", st.Program, "pid", st.Pid, "mode", mode)
	summary := fmt.Sprintf("%s%s[session %s started: %s, pid %d, %s", withNL(out.Output), refusedText(o.Acted.Refused, o.Acted.RefusedN), s.ID(), g.stages.redact(strings.Join(argv, " ")), st.Pid, mode)
	if dir.Scratch {
		summary += fmt.Sprintf(", in the scratch directory %s (the server runs in the home directory, where no session may start; pass cwd to work in a project)", out.Cwd)
	}
	if out.Prompt != "" {
		summary += fmt.Sprintf(", prompt %q", out.Prompt)
	}
	return textResult(summary + "]"), out, nil
}

// startSession is session_start's act: it starts the session the gate
// allowed, under the profile the decision chose, records its start, and
// waits for its first prompt. The human's answers about an earlier
// start's connections hold for the new launch; a result that asks about
// connections refused while it started closes it again (an approval starts
// it anew).
func (g *gateway) startSession(ctx context.Context, req *mcp.CallToolRequest, answers []egressVerdict, gin GateInput, d Decision, bundle *policy.Bundle, dir checkedDir,
	argv []string, agent agentEnv, in startIn, mode session.Mode, rows, cols int, wait time.Duration) (*session.Session, session.Result, Acted, error) {
	l, err := g.prepareLaunch(bundle, d.Profile, dir, argv)
	if err != nil {
		return nil, session.Result{}, Acted{}, err
	}
	ctx, done := g.egress.call(ctx, req, "", l.egress)
	defer done()
	g.egress.apply("", l.egress, answers)
	env := mergeEnv(l.env, append([]string{"TERM=xterm-256color", "COLORTERM=", "TERMGATE_SESSION=1"}, agent.Pairs...)...)
	spec := session.Spec{Name: in.Name, Argv: argv, Dir: dir.Path, Env: env, Rows: rows, Cols: cols, Mode: mode, Redactor: g.redactor, Sandbox: l.spec,
		OnUnjudged: g.onUnjudged}
	spec.ExecGate = g.gate.forSession()
	if g.redactor != nil {
		spec.Taint = redact.NewTaint(redact.TaintLimits{}) // the session's, shared with its recording
	}
	spec.OutputLogMax = g.outputLogMax()
	var tap *recordingTap
	var tapErr error
	if g.cfg.RecordDir != "" {
		spec.NewTap = func(id string) session.Tap {
			tap, tapErr = newRecordingTap(g.cfg.RecordDir, id, spec, g.redactor)
			if tapErr != nil {
				return nil
			}
			return tap
		}
	}
	s, err := g.mgr.Start(spec)
	if err != nil {
		g.egress.end(l.egress)
		return nil, session.Result{}, Acted{}, fmt.Errorf("session not started: %w", err)
	}
	profile := d.Profile
	if profile == "" {
		profile = "default"
	}
	g.profiles.Store(s.ID(), profile)
	progressOf(ctx).watch(s)
	g.egress.started(s.ID(), l.egress)
	if tapErr != nil {
		_ = g.mgr.Close(ctx, s.ID())
		return nil, session.Result{}, Acted{}, fmt.Errorf("session not started: its recording could not be made: %w", tapErr)
	}
	g.gate.opened(s, envValue(env, "HOME"), gin.Client, gin.Text, confirmedDecision(d))
	unwatch := g.landlock.watch(s)
	ctx, endCall := g.gate.begin(ctx, s.ID(), req)
	defer endCall()
	recording := ""
	if tap != nil {
		recording = tap.rec.Path()
		g.recordings.Store(s.ID(), tap)
	}
	if err := g.stages.record(ctx, AuditEvent{Kind: KindSessionStart, Input: gin, Session: g.sessionFacts(s, recording)}); err != nil {
		_ = g.mgr.Close(ctx, s.ID())
		unwatch()
		return nil, session.Result{}, Acted{}, fmt.Errorf("%w: the audit log could not record the session's start (%v); it was closed", ErrRefused, err)
	}
	g.ends.Add(1)
	go func() {
		defer g.ends.Done()
		<-s.Done()
		unwatch()
		g.egress.end(l.egress)
		g.gate.closed(s.ID())
		if tap != nil {
			// What only the screen put together is learnt before the
			// recording is redacted with the session's Taint.
			s.Redact(s.Scrollback(g.cfg.Scrollback + maxRows))
			if err := tap.close(); err != nil {
				g.log.Error("closing a recording", "session", s.ID(), "err", err)
			}
		}
		if err := g.stages.record(context.Background(), AuditEvent{Kind: KindSessionEnd, Input: GateInput{Client: gin.Client}, Session: g.sessionFacts(s, recording)}); err != nil {
			g.log.Error("audit: recording a session's end", "session", s.ID(), "err", err)
		}
	}()
	r, err := s.WaitStart(ctx, session.WaitOpts{Timeout: wait, Quiet: g.cfg.Quiet})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			// The call was cancelled (or its client went away) before the
			// agent learned the session's id: nobody could use or close
			// it, so it is closed here.
			cctx, cancel := context.WithTimeout(context.Background(), 4*g.cfg.CloseGrace+5*time.Second)
			defer cancel()
			if cerr := g.mgr.Close(cctx, s.ID()); cerr != nil {
				g.log.Error("closing a session whose start was cancelled", "session", s.ID(), "err", cerr)
			}
		}
		return nil, session.Result{}, Acted{}, err
	}
	a := Acted{Output: r.Output, Completion: string(r.Completion), Summary: "session " + s.ID() + " started", Redact: g.redactorOf(s)}
	g.afterEgress(ctx, gin, &a)
	a.Refused = append(a.Refused, g.seccompRefusals(ctx, s, profile)...)
	// What Landlock refused the startup files goes to the server log: a
	// quiet start (startupOutput).
	for _, r := range g.landlock.refusals(ctx, s, false) {
		g.log.Info("session start: Landlock refused", "session", s.ID(), "refusal", r.String())
	}
	if a.Ask != nil {
		_ = g.mgr.Close(ctx, s.ID())
	}
	return s, r, a, nil
}

// afterEgress notes in a what the egress gate saw while the act under ctx
// ran: a result that asks the human about the connections it refused for
// want of an answer, and the connections it refused.
func (g *gateway) afterEgress(ctx context.Context, gin GateInput, a *Acted) {
	a.Ask = g.egress.askResult(ctx, gin)
	a.Refused, a.RefusedN = g.egress.refused(ctx)
}

func withNL(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// ---- session_send ----

type sendIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
	Text      string `json:"text,omitempty" jsonschema:"what to type; newlines are typed as Enter (empty: just Enter, or use secret_ref or secret)"`
	Enter     *bool  `json:"enter,omitempty" jsonschema:"press Enter after the text; default true"`
	WaitFor   string `json:"wait_for,omitempty" jsonschema:"complete when this regular expression matches the output after the echo"`
	TimeoutMs int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for completion; default 30000"`
	QuietMs   int    `json:"quiet_ms,omitempty" jsonschema:"quiet period that ends the wait when nothing better tells completion; default 300"`
	MaxOutput int    `json:"max_output,omitempty" jsonschema:"cap on returned characters"`
	SecretRef string `json:"secret_ref,omitempty" jsonschema:"instead of text: type the secret the gateway holds under this name (then Enter) into a prompt that hides input, such as a password prompt; you never see its value"`
	Secret    string `json:"secret,omitempty" jsonschema:"instead of text: type this one-off secret (then Enter) into a prompt that hides input; it is never logged and is masked in all output"`
}

func (g *gateway) session(id string) (*session.Session, error) {
	if id == "" {
		return nil, errors.New("session_id is required")
	}
	return g.mgr.Get(id)
}

func (g *gateway) waitOpts(timeoutMs, quietMs int, waitFor string) (session.WaitOpts, error) {
	t, err := g.timeout(timeoutMs, g.cfg.DefaultTimeout)
	if err != nil {
		return session.WaitOpts{}, err
	}
	q, err := g.quiet(quietMs)
	if err != nil {
		return session.WaitOpts{}, err
	}
	re, err := compileWaitFor(waitFor)
	if err != nil {
		return session.WaitOpts{}, err
	}
	return session.WaitOpts{Timeout: t, Quiet: q, WaitFor: re}, nil
}

// writable returns a session that can take input, or why not.
func writable(s *session.Session) (session.Status, error) {
	st := s.Status()
	if s.Closed() {
		return st, fmt.Errorf("session %s is closed", s.ID())
	}
	if !st.Alive {
		code := 0
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		return st, fmt.Errorf("session %s has exited (exit code %d); nothing was sent. Its final output stays readable with session_read", s.ID(), code)
	}
	return st, nil
}

func (g *gateway) sessionSend(ctx context.Context, req *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, ioOut, error) {
	var out ioOut
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, out, err
	}
	progressOf(ctx).watch(s)
	ctx, endCall := g.gate.begin(ctx, s.ID(), req)
	defer endCall()
	if in.SecretRef != "" || in.Secret != "" {
		return g.sendSecret(ctx, req, s, in)
	}
	if err := g.checkInputSize(len(in.Text)); err != nil {
		return nil, out, err
	}
	if !utf8.ValidString(in.Text) {
		return nil, out, errors.New("text is not valid UTF-8; nothing was sent")
	}
	o, maxOut, st, err := g.inputOpts(s, in.TimeoutMs, in.QuietMs, in.WaitFor, in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	if prompt, ok := g.remotePrompt(s, st); ok {
		return nil, out, fmt.Errorf("the remote side is asking for a password (%q) and your text would be typed into it as one; send secret_ref or secret there, or session_keys ctrl+c to leave the prompt; nothing was sent", g.redactIn(s, prompt))
	}
	enter := in.Enter == nil || *in.Enter
	// Text typed earlier without Enter is the start of this line: the
	// line is judged whole (rm -rf , then *, is rm -rf *). A line edited
	// out of sight is read at Enter instead.
	typed, _ := s.TypedLine()
	judged := g.continuing(s.ID(), typed+in.Text)
	gin := g.sessionInput(req, s, st, ActionInput, judged)
	var r session.Result
	res, out, err := g.sessionCall(ctx, req, s, gin, maxOut, func(ctx context.Context, d Decision) (session.Result, error) {
		o.Judge = g.lineJudge(ctx, s, gin)
		o.Approved = strings.Split(strings.ReplaceAll(in.Text, "\r\n", "\n"), "\n")
		var err error
		if r, err = s.Send(ctx, in.Text, enter, o); err != nil {
			return r, err
		}
		g.keepUnfinished(s, st, judged, enter, r.Continued)
		return r, nil
	})
	return res, out, err
}

// sessionInput is what the policy sees of an input to a session: the
// program that reads it (identified by its executable), the terminal's
// state, and the session with its real profile. Input typed while an
// earlier command runs is judged for every program that may read it.
func (g *gateway) sessionInput(req *mcp.CallToolRequest, s *session.Session, st session.Status, action Action, text string) GateInput {
	gin := GateInput{
		Action: action, Text: text, Program: st.Program, EchoOff: st.EchoOff,
		Session: g.sessionRef(s, st),
		Client:  clientOf(req), Cwd: programCwd(st),
	}
	if st.Mode == session.ModePTY {
		gin.Terminal = &GateTerminal{ReadsLines: st.ReadsLines, Judged: st.Judged, Echo: !st.EchoOff, Ahead: st.Ahead}
		if st.Ahead {
			gin.Terminal.Readers = []string{st.Program}
			if st.Own != "" && st.Own != st.Program {
				gin.Terminal.Readers = append(gin.Terminal.Readers, st.Own)
			}
		}
	}
	return gin
}

// programCwd is the current directory of the program that reads a
// session's input (behind the relays it runs), "" when it cannot be read.
func programCwd(st session.Status) string {
	if st.ProgramPid <= 0 {
		return foregroundCwd(st.Pid)
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(st.ProgramPid) + "/cwd")
	if err != nil || !strings.HasPrefix(cwd, "/") {
		return ""
	}
	return cwd
}

// profileOf is the sandbox profile a session runs under.
func (g *gateway) profileOf(id string) string {
	if p, ok := g.profiles.Load(id); ok {
		return p.(string)
	}
	return "default"
}

// keepUnfinished keeps the text a session's next input continues, so that
// the continuation is judged with it: a shell command left unfinished
// (PTY: the shell's continuation prompt), and in pipe mode text sent
// without Enter, or lines a shell has not finished parsing.
func (g *gateway) keepUnfinished(s *session.Session, st session.Status, judged string, enter, continued bool) {
	keep := ""
	switch {
	case st.Mode == session.ModePipe && !enter:
		keep = judged
	case st.Mode == session.ModePipe && policy.IsShell(st.Program) && incompleteShell(judged):
		keep = judged + "\n"
	case st.Mode == session.ModePTY && (continued || enter && policy.IsShell(st.Program) && incompleteShell(judged)):
		keep = judged + "\n"
	}
	g.unfinishedMu.Lock()
	defer g.unfinishedMu.Unlock()
	if keep != "" && len(keep) <= 4*g.cfg.MaxInput {
		g.unfinished[s.ID()] = keep
	} else {
		delete(g.unfinished, s.ID())
	}
}

// sessionCall runs a session input through the pipeline: the act types it
// and waits; the result is redacted, capped and its outcome recorded. A
// refusal cancels what the program still holds of an unfinished command
// (cancelUnfinished). A retry that carries the human's answer about the
// session's connections is taken first, and the connections the program
// opens while the act runs are judged as this call's.
func (g *gateway) sessionCall(ctx context.Context, req *mcp.CallToolRequest, s *session.Session, gin GateInput, maxOut int,
	act func(ctx context.Context, d Decision) (session.Result, error)) (*mcp.CallToolResult, ioOut, error) {
	if err := g.egressAnswer(ctx, req, gin, s); err != nil {
		return nil, ioOut{}, err
	}
	var r session.Result
	o, err := g.stages.Run(ctx, req, gin, func(ctx context.Context, d Decision) (Acted, error) {
		ctx, done := g.egress.call(ctx, req, s.ID(), nil)
		defer done()
		var err error
		if r, err = act(ctx, d); err != nil {
			return Acted{}, sendError(s, err)
		}
		a := Acted{
			Output: r.Output, Completion: string(r.Completion), ExitCode: r.ExitCode, Redact: g.redactorOf(s),
			Cap: func(text string) (string, bool, *readCall) { return g.capResult(s, r, text, maxOut) },
		}
		g.afterEgress(ctx, gin, &a)
		// What the sandbox refused: Landlock's records where the kernel
		// audits, the files the program says it was refused and the
		// profile does not grant (read from its redacted output), the
		// calls seccomp refused (landlockrefused.go).
		a.Refused = append(a.Refused, g.sandboxRefusals(ctx, s, g.redactIn(s, r.Output))...)
		return a, nil
	})
	if o.Pending != nil {
		return o.Pending, ioOut{}, nil
	}
	if err != nil {
		return nil, ioOut{}, g.cancelUnfinished(ctx, s, err)
	}
	d := o.Decision
	out := g.ioOut(s, r, o, &d)
	out.ExecRefused = refusalsOf(ctx)
	return textResult(out.text()), out, nil
}

// cancelUnfinished: a refused input leaves nothing pending. When the
// refusal came at Enter the session already cancelled the line (and the
// command it continued) in the program; a refusal before anything was
// typed cancels, here, a command the shell holds unfinished, so the next
// line cannot complete it. The refusal then says what was cancelled. In
// pipe mode nothing can be taken back: the unfinished text stays, and
// every later input is judged with it.
func (g *gateway) cancelUnfinished(ctx context.Context, s *session.Session, err error) error {
	var ref *refusal
	if !errors.As(err, &ref) {
		return err
	}
	g.unfinishedMu.Lock()
	prev, had := g.unfinished[s.ID()]
	if s.Status().Mode == session.ModePTY {
		delete(g.unfinished, s.ID())
	}
	g.unfinishedMu.Unlock()
	atEnter := errors.Is(err, session.ErrLineRefused)
	switch {
	case s.Status().Mode == session.ModePipe:
		if had {
			ref.message += fmt.Sprintf(". The unfinished text %q is still in the program's input (a pipe cannot take it back): every later input is judged with it", strings.TrimRight(prev, "\n"))
		}
	case atEnter:
		if had {
			ref.message += fmt.Sprintf(". The unfinished command it continued, %q, was cancelled too", strings.TrimRight(prev, "\n"))
		}
	default:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		keys, cerr := s.CancelInput(cctx, 5*time.Second)
		switch {
		case cerr != nil && had:
			ref.message += fmt.Sprintf(". The unfinished command %q could not be cancelled (%v): press ctrl+c before sending more", strings.TrimRight(prev, "\n"), cerr)
		case had && keys != "":
			ref.message += fmt.Sprintf(". The unfinished command it continued, %q, was cancelled (%s), so no later line completes it", strings.TrimRight(prev, "\n"), keys)
		case keys != "":
			ref.message += fmt.Sprintf(". What the line editor held was cancelled (%s), so no later line completes it", keys)
		}
	}
	return ref
}

// inputOpts checks what every input call shares: its wait options, its
// output cap, and that the session can take input.
func (g *gateway) inputOpts(s *session.Session, timeoutMs, quietMs int, waitFor string, maxOutput int) (session.WaitOpts, int, session.Status, error) {
	o, err := g.waitOpts(timeoutMs, quietMs, waitFor)
	if err != nil {
		return o, 0, session.Status{}, err
	}
	maxOut, err := g.maxOutput(maxOutput)
	if err != nil {
		return o, 0, session.Status{}, err
	}
	st, err := writable(s)
	return o, maxOut, st, err
}

// sendSecret types a secret into a prompt that hides what is typed. The
// value goes to the terminal and the redactor only: the policy is asked
// about secret input (secret: true, no text), and nothing else sees it.
// A terminal that echoes is refused: there the value would be shown, or
// run as a command, or fed to whatever program reads it.
func (g *gateway) sendSecret(ctx context.Context, req *mcp.CallToolRequest, s *session.Session, in sendIn) (*mcp.CallToolResult, ioOut, error) {
	var out ioOut
	if in.Text != "" || in.SecretRef != "" && in.Secret != "" {
		return nil, out, errors.New("give one of text, secret_ref or secret; nothing was sent")
	}
	value := in.Secret
	if in.SecretRef != "" {
		v, ok := g.secrets[in.SecretRef]
		if !ok {
			names := make([]string, 0, len(g.secrets))
			for n := range g.secrets {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, out, fmt.Errorf("no secret named %q is held by the gateway (held: %s); nothing was sent", in.SecretRef, strings.Join(names, ", "))
		}
		value = v
	}
	if err := g.checkInputSize(len(value)); err != nil {
		return nil, out, err
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return nil, out, errors.New("a secret must be one line; nothing was sent")
	}
	o, maxOut, st, err := g.inputOpts(s, in.TimeoutMs, in.QuietMs, in.WaitFor, in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	if _, remote := g.remotePrompt(s, st); !st.EchoOff && !remote {
		if slices.Contains(remoteTerminals(g.policy.Bundle()), st.Program) && s.RawTerminal() {
			return nil, out, fmt.Errorf("the terminal is raw (%s relays another terminal) and its screen shows no password prompt at the cursor, so the secret could be shown or run; nothing was sent. Send it when the program asks for a password", st.Program)
		}
		return nil, out, errors.New("the terminal is not at a prompt that hides input (its echo is on), so the secret would be shown or run; nothing was sent. Send it when the program asks for a password")
	}
	gin := g.sessionInput(req, s, st, ActionInput, "")
	gin.Secret, gin.SecretMark = true, g.redactor.Placeholder("secret", []byte(value))
	return g.sessionCall(ctx, req, s, gin, maxOut, func(ctx context.Context, d Decision) (session.Result, error) {
		// Held by the session once the gate allowed it, just before it is
		// typed: never for a refused call, whose "secret" could be any
		// text the agent wants masked out of sight. A one-off secret is
		// held for the rest of the session; a secret_ref's value is the
		// engine's own, and the session holds it as well, so its Taint
		// knows what it typed. The agent's input in the audit log is
		// masked by the engine alone, never by what a session holds.
		if g.redactor != nil {
			if err := s.HoldSecret(value); err != nil {
				return session.Result{}, fmt.Errorf("secret: %v; nothing was sent", err)
			}
		}
		r, err := s.Send(ctx, value, in.Enter == nil || *in.Enter, o)
		return r, err
	})
}

// continuing is text as the policy judges it: a continuation of a
// session's unfinished shell command is judged with what it continues.
func (g *gateway) continuing(id, text string) string {
	g.unfinishedMu.Lock()
	defer g.unfinishedMu.Unlock()
	if prev, ok := g.unfinished[id]; ok {
		return prev + text // prev ends with what joins it to text (a newline, or nothing)
	}
	return text
}

// lineJudge returns the judge asked at each Enter about the line the
// terminal shows (and the line typed, when that is known: each reading is
// judged); a continuation is judged with what it continues. Echo off is
// not a licence: the line is judged all the same.
func (g *gateway) lineJudge(ctx context.Context, s *session.Session, base GateInput) func(string) error {
	return func(line string) error {
		if strings.Contains(line, "[REDACTED:") {
			// The screen shows the line redacted; what would run is not
			// what the policy would see. Fail closed.
			const why = "the line at Enter holds text the redactor masked on the screen, so it cannot be judged as it would run"
			return &refusal{
				d:       Decision{Action: Deny, Rule: "redaction.masked_line", Reason: why, Severity: "high"},
				in:      base,
				message: why + "; the typed line was cleared and nothing ran. Send the whole line with session_send",
			}
		}
		st := s.Status()
		in := g.sessionInput(nil, s, st, ActionInput, g.continuing(s.ID(), line))
		in.Client = base.Client
		return g.stages.Check(ctx, in, "send the whole line with session_send to ask", "the typed line was cleared and nothing ran")
	}
}

func sendError(s *session.Session, err error) error {
	if errors.Is(err, session.ErrLineRefused) {
		return err
	}
	switch {
	case errors.Is(err, session.ErrExited):
		return fmt.Errorf("session %s has exited; nothing was sent. Its final output stays readable with session_read", s.ID())
	case errors.Is(err, session.ErrClosed):
		return fmt.Errorf("session %s is closed", s.ID())
	}
	return err
}

// ioOut is a session result after the pipeline redacted and capped it.
func (g *gateway) ioOut(s *session.Session, r session.Result, o Outcome, d *Decision) ioOut {
	st := s.Status()
	unjudged, unjudgedN := g.takeUnjudged(s.ID())
	return ioOut{
		SessionID: s.ID(), Output: o.Output, Complete: r.Complete, Completion: string(r.Completion),
		ExitCode: r.ExitCode, Prompt: g.redactIn(s, r.Prompt), Alive: st.Alive, Program: st.Program,
		Busy: st.Busy, Truncated: o.Truncated, Screen: r.Screen, Continued: r.Continued,
		EchoOff: st.EchoOff, LostLines: r.LostLines, Rest: o.Rest, Decision: d,
		Refused: o.Acted.Refused, refusedN: o.Acted.RefusedN, Unjudged: unjudged, unjudgedN: unjudgedN,
	}
}

// ---- session_keys ----

type keysIn struct {
	SessionID string   `json:"session_id" jsonschema:"session id or name"`
	Keys      []string `json:"keys" jsonschema:"key names in order, e.g. [\"ctrl+c\"] or [\"esc\", \":\", \"q\", \"enter\"]; a single printable character is typed as is; name*N repeats"`
	TimeoutMs int      `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the terminal to settle; default 30000"`
	QuietMs   int      `json:"quiet_ms,omitempty" jsonschema:"quiet period that ends the wait; default 300"`
	WaitFor   string   `json:"wait_for,omitempty" jsonschema:"complete when this regular expression matches the output"`
	MaxOutput int      `json:"max_output,omitempty" jsonschema:"cap on returned characters"`
}

const maxKeys = 256

func (g *gateway) sessionKeys(ctx context.Context, req *mcp.CallToolRequest, in keysIn) (*mcp.CallToolResult, ioOut, error) {
	var out ioOut
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, out, err
	}
	progressOf(ctx).watch(s)
	ctx, endCall := g.gate.begin(ctx, s.ID(), req)
	defer endCall()
	if len(in.Keys) == 0 || len(in.Keys) > maxKeys {
		return nil, out, fmt.Errorf("keys must list 1 to %d keys", maxKeys)
	}
	keys := make([]session.Key, 0, len(in.Keys))
	size := 0
	for _, k := range in.Keys {
		var key session.Key
		if r, _ := utf8.DecodeRuneInString(k); utf8.RuneCountInString(k) == 1 && unicode.IsPrint(r) {
			// A printable character, a space included, is typed as is.
			key = session.Key{Name: k, Repeat: 1, Literal: true}
		} else if key, err = session.ParseKey(k); err != nil {
			return nil, out, fmt.Errorf("%v; nothing was sent", err)
		}
		keys = append(keys, key)
		size += key.Repeat * 8
	}
	if err := g.checkInputSize(size); err != nil {
		return nil, out, err
	}
	o, maxOut, st, err := g.inputOpts(s, in.TimeoutMs, in.QuietMs, in.WaitFor, in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	gin := g.sessionInput(req, s, st, ActionKeys, keysText(in.Keys))
	return g.sessionCall(ctx, req, s, gin, maxOut, func(ctx context.Context, d Decision) (session.Result, error) {
		o.Judge = g.lineJudge(ctx, s, gin)
		r, err := s.SendKeys(ctx, keys, o)
		if err == nil {
			g.unfinishedMu.Lock()
			if !r.Continued {
				delete(g.unfinished, s.ID())
			}
			g.unfinishedMu.Unlock()
		}
		return r, err
	})
}

// ---- session_read ----

type readIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
	Mode      string `json:"mode,omitempty" jsonschema:"new (default): output since the last read; screen: the visible screen; scrollback: the last lines of history; log: the session's whole history, paged by offset"`
	Lines     int    `json:"lines,omitempty" jsonschema:"scrollback: how many lines, default 200; log: how many lines (terminal rows) at most, default as many as fit in max_output"`
	Offset    int64  `json:"offset,omitempty" jsonschema:"log: the first line (terminal row) to read, 0 being the session's first; negative counts back from the end (-100: the last hundred); a cut result's rest gives it"`
	TimeoutMs int    `json:"timeout_ms,omitempty" jsonschema:"new: wait up to this long for the running command to complete (or wait_for); 0 (the default) returns at once"`
	WaitFor   string `json:"wait_for,omitempty" jsonschema:"new: complete when this regular expression matches"`
	MaxOutput int    `json:"max_output,omitempty" jsonschema:"cap on returned characters, what was cut said included; default --max-output, at most --max-output-ceiling"`
}

type readOut struct {
	ioOut
	CursorRow int      `json:"cursor_row,omitempty" jsonschema:"screen: the cursor's row, from 0"`
	CursorCol int      `json:"cursor_col,omitempty" jsonschema:"screen: the cursor's column, from 0"`
	AltScreen bool     `json:"alt_screen,omitempty" jsonschema:"screen: a full-screen program is showing its own screen"`
	Rows      int      `json:"rows,omitempty" jsonschema:"screen: terminal rows"`
	Cols      int      `json:"cols,omitempty" jsonschema:"screen: terminal columns"`
	Log       *logInfo `json:"log,omitempty" jsonschema:"log: where this page sits in the session's history"`
}

// text renders a read: a page of the log says where it is and how to go on.
func (o readOut) text() string {
	if o.Log == nil {
		return o.ioOut.text()
	}
	io := o.ioOut
	io.Rest = nil
	t := strings.TrimSuffix(io.text(), "]")
	l := o.Log
	if l.NextOffset > l.Offset {
		t += fmt.Sprintf(" · lines %d to %d of %d", l.Offset, l.NextOffset-1, l.TotalLines)
	} else {
		t += fmt.Sprintf(" · no lines from %d of %d", l.Offset, l.TotalLines)
	}
	if o.Rest != nil {
		return t + "; next: " + o.Rest.String() + "]"
	}
	return t + "; the end of the history so far]"
}

func (g *gateway) sessionRead(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, readOut, error) {
	var out readOut
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, out, err
	}
	progressOf(ctx).watch(s)
	maxOut, err := g.maxOutput(in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	if in.Mode != "log" && in.Offset != 0 {
		return nil, out, errors.New("offset applies to mode log only")
	}
	switch in.Mode {
	case "", "new":
		o, err := g.waitOpts(in.TimeoutMs, 0, in.WaitFor)
		if err != nil {
			return nil, out, err
		}
		if in.TimeoutMs == 0 && in.WaitFor == "" {
			o.NoWait = true // no timeout_ms: what is there now, at once
		}
		// A read binds the human's answer about connections to its session.
		bind := GateInput{Action: ActionRead, Session: &GateRef{ID: s.ID()}, Client: clientOf(req)}
		if err := g.egressAnswer(ctx, req, bind, s); err != nil {
			return nil, out, err
		}
		ctx, done := g.egress.call(ctx, req, s.ID(), nil)
		defer done()
		ctx, endCall := g.gate.begin(ctx, s.ID(), req)
		defer endCall()
		r, err := s.Read(ctx, o)
		if err != nil {
			return nil, out, err
		}
		a := Acted{Output: r.Output, Redact: g.redactorOf(s), Cap: func(text string) (string, bool, *readCall) {
			return g.capResult(s, r, text, maxOut)
		}}
		if g.afterEgress(ctx, bind, &a); a.Ask != nil {
			return a.Ask, out, nil
		}
		a.Refused = append(a.Refused, g.sandboxRefusals(ctx, s, g.redactIn(s, r.Output))...)
		out.ioOut = g.ioOut(s, r, g.stages.Show(a), nil)
		out.ioOut.ExecRefused = refusalsOf(ctx)
		return textResult(out.ioOut.text()), out, nil
	case "screen", "scrollback":
		if in.TimeoutMs != 0 || in.WaitFor != "" {
			return nil, out, fmt.Errorf("timeout_ms and wait_for apply to mode new only")
		}
		st := s.Status()
		r := session.Result{}
		if in.Mode == "screen" {
			r.Output, out.CursorRow, out.CursorCol = s.Screen()
			r.Screen = true
			out.AltScreen, out.Rows, out.Cols = st.AltScreen, st.Rows, st.Cols
		} else {
			n := in.Lines
			if n <= 0 {
				n = 200
			}
			if n > g.cfg.Scrollback+maxRows {
				return nil, out, fmt.Errorf("lines must be at most %d; mode log pages the whole history", g.cfg.Scrollback+maxRows)
			}
			r.Output, r.OutputRows = s.ScrollbackRows(n)
		}
		shown := g.stages.Show(Acted{Output: r.Output, Redact: g.redactorOf(s), Cap: func(text string) (string, bool, *readCall) { return g.capResult(s, r, text, maxOut) }})
		out.ioOut = ioOut{
			SessionID: s.ID(), Output: shown.Output, Complete: true, Alive: st.Alive, Program: st.Program,
			Busy: st.Busy, Truncated: shown.Truncated, Screen: in.Mode == "screen", ExitCode: st.ExitCode, EchoOff: st.EchoOff,
			Rest: shown.Rest,
		}
		return textResult(out.text()), out, nil
	case "log":
		if in.TimeoutMs != 0 || in.WaitFor != "" {
			return nil, out, fmt.Errorf("timeout_ms and wait_for apply to mode new only")
		}
		if out, err = g.sessionLog(s, in, maxOut); err != nil {
			return nil, out, err
		}
		return textResult(out.text()), out, nil
	default:
		return nil, out, fmt.Errorf("mode must be new, screen, scrollback or log, not %q", in.Mode)
	}
}

// ---- session_resize ----

type resizeIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
	Rows      int    `json:"rows" jsonschema:"terminal rows, 2-500"`
	Cols      int    `json:"cols" jsonschema:"terminal columns, 10-1000"`
}

type resizeOut struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Rows      int    `json:"rows" jsonschema:"terminal rows now"`
	Cols      int    `json:"cols" jsonschema:"terminal columns now"`
}

func (g *gateway) sessionResize(ctx context.Context, req *mcp.CallToolRequest, in resizeIn) (*mcp.CallToolResult, resizeOut, error) {
	var out resizeOut
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, out, err
	}
	if in.Rows < minRows || in.Rows > maxRows || in.Cols < minCols || in.Cols > maxCols {
		return nil, out, fmt.Errorf("rows must be %d-%d and cols %d-%d; got %dx%d", minRows, maxRows, minCols, maxCols, in.Rows, in.Cols)
	}
	if err := s.Resize(in.Rows, in.Cols); err != nil {
		return nil, out, sendError(s, err)
	}
	out = resizeOut{SessionID: s.ID(), Rows: in.Rows, Cols: in.Cols}
	return textResult(fmt.Sprintf("[session %s resized to %dx%d]", s.ID(), in.Rows, in.Cols)), out, nil
}

// ---- session_list / session_info ----

type sessionInfo struct {
	SessionID   string            `json:"session_id" jsonschema:"the session's id"`
	Name        string            `json:"name,omitempty" jsonschema:"its name"`
	Argv        []string          `json:"argv" jsonschema:"what was started"`
	Cwd         string            `json:"cwd" jsonschema:"where it started"`
	Mode        string            `json:"mode" jsonschema:"pty or pipe"`
	Pid         int               `json:"pid" jsonschema:"the session's process id"`
	Program     string            `json:"program" jsonschema:"the terminal's foreground program"`
	Busy        bool              `json:"busy" jsonschema:"the foreground program is not the session's own"`
	Alive       bool              `json:"alive" jsonschema:"the program is running"`
	Closed      bool              `json:"closed,omitempty" jsonschema:"the session was closed"`
	ExitCode    *int              `json:"exit_code,omitempty" jsonschema:"exit code once exited"`
	Signal      string            `json:"signal,omitempty" jsonschema:"the signal that ended it"`
	Rows        int               `json:"rows" jsonschema:"terminal rows"`
	Cols        int               `json:"cols" jsonschema:"terminal columns"`
	AltScreen   bool              `json:"alt_screen" jsonschema:"a full-screen program shows its own screen"`
	AppCursor   bool              `json:"app_cursor" jsonschema:"application cursor-key mode"`
	EchoOff     bool              `json:"echo_off" jsonschema:"reading with echo off (password prompt)"`
	Integration bool              `json:"shell_integration" jsonschema:"shell integration marks in use"`
	Title       string            `json:"title,omitempty" jsonschema:"the window title the program set"`
	StartedAt   string            `json:"started_at" jsonschema:"RFC 3339"`
	IdleSeconds float64           `json:"idle_seconds" jsonschema:"seconds since the last input"`
	BytesIn     int64             `json:"bytes_in" jsonschema:"bytes sent to the terminal"`
	BytesOut    int64             `json:"bytes_out" jsonschema:"bytes the terminal printed"`
	Sandbox     string            `json:"sandbox" jsonschema:"the session's confinement"`
	Stages      map[string]string `json:"stages,omitempty" jsonschema:"which gateway stages are in force"`
	// StartupWarnings are what the user's rc files failed on because of
	// the sandbox while the session started (startlog.go), kept out of
	// its first output.
	StartupWarnings []string `json:"startup_warnings,omitempty" jsonschema:"what the user's startup files (~/.bashrc) failed on because of the sandbox (a write under the home directory), kept out of the session's output"`
}

func (g *gateway) info(s *session.Session, full bool) sessionInfo {
	st := s.Status()
	i := sessionInfo{
		SessionID: st.ID, Name: st.Name, Argv: g.redactAll(st.Argv), Cwd: g.stages.redact(st.Dir), Mode: string(st.Mode), Pid: st.Pid,
		Program: st.Program, Busy: st.Busy, Alive: st.Alive, Closed: s.Closed(), ExitCode: st.ExitCode, Signal: st.Signal,
		Rows: st.Rows, Cols: st.Cols, AltScreen: st.AltScreen, AppCursor: st.AppCursor, EchoOff: st.EchoOff,
		Integration: st.Integration, Title: g.redactIn(s, st.Title), StartedAt: st.Started.UTC().Format(time.RFC3339),
		IdleSeconds: s.Idle().Seconds(), BytesIn: st.BytesIn, BytesOut: st.BytesOut, Sandbox: g.sandboxText(s),
	}
	if full {
		i.Stages = g.stages.describe()
	}
	if _, warnings := s.Startup(); len(warnings) > 0 {
		for _, w := range warnings {
			i.StartupWarnings = append(i.StartupWarnings, g.redactIn(s, w))
		}
	}
	return i
}

type listIn struct{}

type listOut struct {
	Sessions []sessionInfo `json:"sessions" jsonschema:"sessions, oldest first"`
}

func (g *gateway) sessionList(ctx context.Context, req *mcp.CallToolRequest, _ listIn) (*mcp.CallToolResult, listOut, error) {
	out := listOut{Sessions: []sessionInfo{}}
	var b strings.Builder
	for _, s := range g.mgr.List() {
		i := g.info(s, false)
		out.Sessions = append(out.Sessions, i)
		state := "alive"
		switch {
		case i.Closed:
			state = "closed"
		case !i.Alive:
			state = "exited"
		case i.Busy:
			state = "busy"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", i.SessionID, i.Name, i.Program, state)
	}
	if b.Len() == 0 {
		b.WriteString("no sessions\n")
	}
	return textResult(b.String()), out, nil
}

type infoIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
}

func (g *gateway) sessionInfo(ctx context.Context, req *mcp.CallToolRequest, in infoIn) (*mcp.CallToolResult, sessionInfo, error) {
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, sessionInfo{}, err
	}
	i := g.info(s, true)
	return nil, i, nil
}

// ---- session_close ----

type closeIn struct {
	SessionID string `json:"session_id" jsonschema:"session id or name"`
}

type closeOut struct {
	SessionID     string `json:"session_id" jsonschema:"the session"`
	Closed        bool   `json:"closed" jsonschema:"the session is closed and every process of it is gone"`
	AlreadyClosed bool   `json:"already_closed" jsonschema:"it was closed before this call"`
	ExitCode      *int   `json:"exit_code,omitempty" jsonschema:"the program's exit code"`
	Signal        string `json:"signal,omitempty" jsonschema:"the signal that ended it"`
}

func (g *gateway) sessionClose(ctx context.Context, req *mcp.CallToolRequest, in closeIn) (*mcp.CallToolResult, closeOut, error) {
	var out closeOut
	s, err := g.session(in.SessionID)
	if err != nil {
		return nil, out, err
	}
	already := s.Closed()
	if err := g.mgr.Close(ctx, s.ID()); err != nil {
		return nil, out, fmt.Errorf("closing session %s: %w", s.ID(), err)
	}
	st := s.Status()
	out = closeOut{SessionID: s.ID(), Closed: true, AlreadyClosed: already, ExitCode: st.ExitCode, Signal: st.Signal}
	if !already {
		g.log.Info("session closed", "session", s.ID())
	}
	msg := fmt.Sprintf("[session %s closed", s.ID())
	if already {
		msg += " (it was already closed)"
	}
	if st.ExitCode != nil {
		msg += fmt.Sprintf("; exit %d", *st.ExitCode)
	}
	return textResult(msg + "]"), out, nil
}

// ---- exec ----

type execIn struct {
	Command   string            `json:"command" jsonschema:"a shell command line"`
	Cwd       string            `json:"cwd,omitempty" jsonschema:"working directory; default: the server's"`
	Env       map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	TimeoutMs int               `json:"timeout_ms,omitempty" jsonschema:"wall-clock limit; default 60000"`
	MaxOutput int               `json:"max_output,omitempty" jsonschema:"cap on returned characters"`
}

type execOut struct {
	Output    string    `json:"output" jsonschema:"stdout and stderr, interleaved, redacted, capped"`
	ExitCode  int       `json:"exit_code" jsonschema:"the command's exit code (128+n when killed by signal n; -1 when it was refused and did not run)"`
	TimedOut  bool      `json:"timed_out" jsonschema:"the command was killed at timeout_ms"`
	Truncated bool      `json:"truncated" jsonschema:"output was capped"`
	Duration  int64     `json:"duration_ms" jsonschema:"how long it ran"`
	Sandbox   string    `json:"sandbox" jsonschema:"the command's confinement"`
	Decision  *Decision `json:"decision,omitempty" jsonschema:"the gate's decision"`
	Refused   []Refusal `json:"sandbox_refused,omitempty" jsonschema:"what the sandbox refused while the command ran (a connection the egress proxy refused): destination, program, profile, rule, reason"`
	// ExecRefused are the programs the exec gate refused during the run.
	ExecRefused []execRefusal `json:"exec_refused,omitempty" jsonschema:"programs the command started that the exec gate refused (EPERM): which, by which rule, why; the rest of the command may have run"`
}

func (g *gateway) exec(ctx context.Context, req *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, execOut, error) {
	var out execOut
	if strings.TrimSpace(in.Command) == "" {
		return nil, out, errors.New("command is required")
	}
	if err := g.checkInputSize(len(in.Command)); err != nil {
		return nil, out, err
	}
	if strings.ContainsRune(in.Command, 0) || !utf8.ValidString(in.Command) {
		return nil, out, errors.New("command must be valid UTF-8 without NUL bytes")
	}
	limit, err := g.timeout(in.TimeoutMs, g.cfg.ExecTimeout)
	if err != nil {
		return nil, out, err
	}
	maxOut, err := g.maxOutput(in.MaxOutput)
	if err != nil {
		return nil, out, err
	}
	bundle := g.policy.Bundle()
	dir, agent, err := g.checkStart(bundle, in.Cwd, in.Env)
	if err != nil {
		return nil, out, err
	}
	gin := GateInput{
		Action: ActionExec, Text: in.Command, Program: "bash",
		Start:  &GateRef{Argv: []string{"bash", "-c", in.Command}, Cwd: dir.Path, Env: agent.Names, EnvValues: agent.Pairs, Confined: g.cfg.Sandbox != "off"},
		Client: clientOf(req),
	}
	// A retry that carries the human's answer about an earlier run's
	// connections: taken before the gate reads the request's state.
	answers, declined, err := g.egress.answer(ctx, req, gin)
	if err == nil {
		err = declined
	}
	if err != nil {
		return nil, out, err
	}
	var r session.ExecResult
	var sb *sandbox.Spec
	var call *gateCall
	o, err := g.stages.Run(ctx, req, gin, func(ctx context.Context, d Decision) (Acted, error) {
		shell, err := lookShell()
		if err != nil {
			return Acted{}, err
		}
		argv := []string{shell, "-c", in.Command}
		l, err := g.prepareLaunch(bundle, d.Profile, dir, argv)
		if err != nil {
			return Acted{}, err
		}
		ctx, done := g.egress.call(ctx, req, "", l.egress)
		defer done()
		defer g.egress.end(l.egress)
		g.egress.apply("", l.egress, answers)
		env := mergeEnv(l.env, append([]string{"TERMGATE_SESSION=1"}, agent.Pairs...)...)
		sb = l.spec
		var gate *session.ExecGate
		gate, call = g.gate.forExec(ctx, req, in.Command, envValue(env, "HOME"), confirmedDecision(d), gin.Start.Confined && sb != nil && !sb.Unconfined)
		if r, err = session.Exec(ctx, argv, dir.Path, env, limit, 4*maxOut, g.redactor, sb, gate); err != nil {
			return Acted{}, fmt.Errorf("exec: %w", err)
		}
		a := Acted{
			Output: r.Output, Completion: "exited", ExitCode: &r.ExitCode, Summary: fmt.Sprintf("exit %d", r.ExitCode),
			Cap: func(text string) (string, bool, *readCall) {
				return capOutput(text, maxOut, func(int, int) (string, *readCall) {
					hint := "exec keeps no history: run the command in a session (session_start, session_send) to page all of its output with session_read mode log"
					if r.Truncated {
						hint = "more than that: exec kept only the first and last " + fmt.Sprint(2*maxOut) + " bytes; " + hint
					}
					return hint, nil
				})
			},
		}
		g.afterEgress(ctx, gin, &a) // an approval runs the command again
		if sb != nil {
			a.Refused = append(a.Refused, call.sysRefusals(sb.Profile)...)
			a.Refused = append(a.Refused, g.sessionSysRefusals("exec", r.SysRefused, sb.Profile)...)
		}
		return a, nil
	})
	if o.Pending != nil {
		return o.Pending, out, nil
	}
	if err != nil {
		return nil, out, err
	}
	d := o.Decision
	out = execOut{
		Output: o.Output, ExitCode: r.ExitCode, TimedOut: r.TimedOut, Truncated: o.Truncated || r.Truncated,
		Duration: r.Duration.Milliseconds(), Sandbox: execSandboxText(sb, r.Sandbox), Decision: &d,
		Refused: o.Acted.Refused, ExecRefused: call.refusals(),
	}
	status := fmt.Sprintf("[exit %d · %d ms", r.ExitCode, out.Duration)
	if r.TimedOut {
		status += fmt.Sprintf(" · killed at the %s limit", limit)
	}
	return textResult(withNL(o.Output) + refusedText(o.Acted.Refused, o.Acted.RefusedN) + refusalText(out.ExecRefused) + status + "]"), out, nil
}

func lookShell() (string, error) {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/bin/sh"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("no shell found for exec (/bin/bash or /bin/sh)")
}

// ---- confirm (--confirm-mode=agent) ----

type confirmIn struct {
	Token         string `json:"token" jsonschema:"the token a refused input's result gave"`
	Justification string `json:"justification" jsonschema:"why this input is needed, in your own words (at least 20 characters); kept in the audit log"`
}

type confirmOut struct {
	Approved bool   `json:"approved"`
	Rule     string `json:"rule" jsonschema:"the rule that asked for confirmation"`
	Expires  string `json:"expires" jsonschema:"when the approval lapses (RFC 3339)"`
}

func (g *gateway) confirmTool(ctx context.Context, req *mcp.CallToolRequest, in confirmIn) (*mcp.CallToolResult, confirmOut, error) {
	var out confirmOut
	if g.confirmer == nil || !g.confirmer.agentMode {
		return nil, out, errors.New("the confirm tool works only with --confirm-mode=agent")
	}
	just := strings.TrimSpace(in.Justification)
	if utf8.RuneCountInString(just) < 20 {
		return nil, out, errors.New("a written justification of at least 20 characters is required; nothing was approved")
	}
	if len(just) > 2000 {
		return nil, out, errors.New("the justification is over 2000 bytes; nothing was approved")
	}
	st, err := g.confirmer.redeemToken(in.Token)
	if err != nil {
		return nil, out, fmt.Errorf("%v; nothing was approved", err)
	}
	red := g.stages.redact(just)
	if err := g.stages.record(ctx, AuditEvent{
		Kind: KindConfirmAnswered, Approved: true, Decision: Decision{Action: Confirm, Rule: st.Rule}, By: "agent", Via: "confirm-tool",
		Input:   GateInput{Client: clientOf(req), Session: &GateRef{ID: st.Session}},
		Outcome: "approved by the agent (--confirm-mode=agent): " + red,
		Fields:  map[string]any{"termgate.confirmation.answered_by": "agent", "termgate.confirmation.via": "confirm-tool", "termgate.confirmation.justification": red},
	}); err != nil {
		g.confirmer.revoke(st)
		return nil, out, fmt.Errorf("the audit log could not record the approval (%v); nothing was approved", err)
	}
	out = confirmOut{Approved: true, Rule: st.Rule, Expires: time.Unix(st.Expires, 0).UTC().Format(time.RFC3339)}
	return textResult(fmt.Sprintf("approved once (%s), until %s: send exactly the same input again", st.Rule, out.Expires)), out, nil
}

// droppedResult is told about a result the client cancelled before it was
// sent. A session that a dropped session_start started is closed: the
// agent never learned its id, so nothing else would ever use or close it.
func (g *gateway) droppedResult(tool string, result json.RawMessage) {
	if tool != "session_start" {
		return
	}
	var res struct {
		IsError    bool `json:"isError"`
		Structured struct {
			SessionID string `json:"session_id"`
		} `json:"structuredContent"`
	}
	if json.Unmarshal(result, &res) != nil || res.IsError || res.Structured.SessionID == "" {
		return
	}
	id := res.Structured.SessionID
	g.ends.Add(1)
	go func() {
		defer g.ends.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 4*g.cfg.CloseGrace+5*time.Second)
		defer cancel()
		if err := g.mgr.Close(ctx, id); err != nil && !errors.Is(err, session.ErrNotFound) {
			g.log.Error("closing a session whose start the client cancelled", "session", id, "err", err)
			return
		}
		g.log.Info("closed a session whose start the client cancelled", "session", id)
	}()
}
