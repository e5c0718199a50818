package session

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
)

// pending is the input whose completion a call is (or was) waiting for.
type pending struct {
	op      string    // the call that made it (for busy errors)
	markSeq int64     // marks newer than this belong to the input
	start   Pos       // cursor when the input was sent
	input   []string  // the lines sent, for echo removal
	at      time.Time // when it was made
	startup bool      // waiting for a new session's first prompt
	idle    bool      // a read waiting for output when no command was running
	keys    bool      // named keys, not text

	// owed is the number of prompts the shell owed a command that was
	// still running when this input was typed (shell integration): the
	// first prompt that comes ends that command, not this input's.
	owed int
	// earlier counts lines of unread output that were there when the
	// input was made: kept for the next read, not this input's.
	earlier int

	// Filled in while the input is typed.
	enters  int       // accept keys (Enter, ctrl+j, ctrl+o) typed
	lastSeq int64     // the newest mark when the last accept key was typed
	lastAt  Pos       // the cursor then
	typedAt time.Time // when the last byte was typed
	rowOf   []int64   // per line typed: the row its prompt was on, or -1 when it was typed ahead
	ahead   bool      // some line was typed ahead of the program
	// afterRunning says the last input's call ended before the input did:
	// this one was typed while it may still run.
	afterRunning bool
	shown        []string // keys: the line the terminal showed at each Enter, when it could be read

	// alt says the input went to a full-screen program; resume is where
	// the main screen's text continues once it leaves the alternate
	// screen.
	alt    bool
	resume Pos

	// wait_for's incremental scan (see matchWaitFor).
	scanFrom Pos
	scanned  bool
	scanCost int64 // bytes matched so far, all scans together (also in Session.scanCost)
}

// lines returns the lines whose echo a result leaves out.
func (p *pending) lines() []string {
	if p.keys {
		return p.shown
	}
	return p.input
}

// state is one evaluation of whether the pending input is complete.
type state struct {
	done       bool
	completion Completion
	exitCode   *int
	from, to   Pos
	prompt     string
	continued  bool
	run        *markRun // the shell-integration marks that ended the wait
}

// ---- shell integration marks ----

// markRun is what the shell-integration marks since an input say.
type markRun struct {
	events    int    // prompts that came: one per command end (D) or continuation prompt (A;k=s)
	lastSeq   int64  // the last event's mark
	lastD     bool   // the last event is a command end, not a continuation prompt
	lastB     bool   // the last event's prompt is drawn: its input mark (B) came
	lastCode  *int   // the last command's exit code
	cmds      []span // each command's output, C to D (or B's line to D without C)
	running   *Pos   // a command started (C) after the last event and has not ended
	dropped   bool   // the screen dropped marks of this input (more than it keeps)
	endOfLast Pos    // where the last event's mark is
}

// span is a stretch of output between two positions.
type span struct {
	from, to Pos
	skipLine bool // from is an input line: the first logical line is its echo
}

// markRun reads the marks that came after p was made.
func (s *Session) markRun(p *pending) markRun {
	var r markRun
	marks := s.screen.Marks(p.markSeq)
	if len(marks) > 0 && marks[0].Seq > p.markSeq+1 && p.markSeq > 0 {
		r.dropped = true
	}
	var c, b *Pos
	for i := range marks {
		m := marks[i]
		switch m.Kind {
		case MarkPromptStart:
			if strings.Contains(m.Extra, "k=s") {
				r.events++
				r.lastSeq, r.lastD, r.lastB, r.lastCode, r.endOfLast = m.Seq, false, false, nil, m.Pos
				c, r.running = nil, nil
			}
		case MarkInputStart:
			r.lastB = r.events > 0
			pos := m.Pos
			b = &pos
			c = nil
		case MarkOutputStart:
			pos := m.Pos
			c, r.running = &pos, &pos
		case MarkCommandEnded:
			r.events++
			sp := span{to: m.Pos}
			switch {
			case c != nil:
				sp.from = *c
			case b != nil:
				sp.from, sp.skipLine = Pos{Line: b.Line}, true
			default:
				sp.from = Pos{Line: -1} // from the input's start (see ownOutput)
			}
			r.cmds = append(r.cmds, sp)
			r.lastSeq, r.lastD, r.lastB, r.endOfLast = m.Seq, true, false, m.Pos
			r.lastCode = nil
			if m.HasCode {
				code := m.ExitCode
				r.lastCode = &code
			}
			c, b, r.running = nil, nil, nil
		}
	}
	return r
}

// atShellPrompt reports whether the shell's newest mark is its prompt's
// input mark: it is reading a command line, not running one.
func (s *Session) atShellPrompt() bool {
	if !s.integration {
		return false
	}
	marks := s.screen.Marks(max(s.screen.MarkSeq()-1, 0))
	return len(marks) > 0 && marks[len(marks)-1].Kind == MarkInputStart
}

// commandRunning reports whether the shell started a command (C) that has
// not ended (D) yet: input typed now is typed ahead of the shell's next
// prompt.
func (s *Session) commandRunning() bool {
	if !s.integration {
		return false
	}
	marks := s.screen.Marks(max(s.screen.MarkSeq()-1, 0))
	return len(marks) > 0 && marks[len(marks)-1].Kind == MarkOutputStart
}

// Settling: how long output must be quiet before a prompt that came
// without its usual sign is taken as the end.
const (
	settleNoB     = 30 * time.Millisecond // a command end whose prompt lost its input mark
	settleTaken   = 50 * time.Millisecond // fewer prompts than lines: the running command took some
	settleAtInput = 50 * time.Millisecond // keys without Enter at a line editor's prompt
	// readRecheck is how soon a prompt shown by a program that has not
	// gone back to reading yet is looked at again (its going to sleep
	// makes no output to wake the wait).
	readRecheck = 500 * time.Microsecond
)

// evaluate decides, with s.mu held, whether the pending input is complete,
// in the documented order: shell-integration marks, known or learned
// prompt, wait_for pattern, process exit, quiet period. When not complete
// it returns how long until the next look would be due (0: wait for
// output).
func (s *Session) evaluate(o WaitOpts) (state, time.Duration) {
	p := s.pending
	now := time.Now()
	cursor := s.screen.CursorPos()
	st := state{from: p.start, to: cursor}

	if o.WaitFor != nil {
		if s.matchWaitFor(p, o.WaitFor, cursor) {
			st.done, st.completion = true, CompletionPattern
			return st, 0
		}
		if s.exited {
			st.done, st.completion = true, CompletionExited
			code := s.exitCode
			st.exitCode = &code
		}
		return st, 0
	}
	if p.startup {
		return s.evaluateStartup(o, st, now)
	}

	// The foreground program costs system calls to learn: only when a
	// rule needs it.
	program, looked := "", false
	fg := func() string {
		if !looked {
			program, looked = s.programLocked(), true
		}
		return program
	}
	last := p.at
	if p.typedAt.After(last) {
		last = p.typedAt
	}
	if s.lastOutput.After(last) {
		last = s.lastOutput
	}
	if s.lastRead.After(last) {
		// The program is printing, though the redactor holds what it
		// prints (a token one character at a time): not quiet. Typed
		// into, its echo would break the token and let the head go.
		last = s.lastRead
	}
	quietFor := now.Sub(last)

	// 1. Shell integration: one prompt per line typed (after the prompt a
	// command still running owed).
	if s.integration && s.spec.Mode == ModePTY {
		run := s.markRun(p)
		need := p.owed + p.enters
		switch {
		case run.events > 0 && run.events >= need && !run.dropped:
			if run.lastB {
				return s.endByMarks(st, run), 0
			}
			// A prompt that lost its input mark (a PS1 rewritten after
			// the integration's hook ran): its end is the shell reading
			// again, quietly.
			if quietFor < settleNoB {
				return st, settleNoB - quietFor
			}
			if isShell(fg()) && s.readingInputLocked() {
				return s.endByMarks(st, run), 0
			}
			return st, settleNoB
		case run.events > 0 && run.lastSeq > p.lastSeq && (run.lastB || run.dropped):
			// Fewer prompts than lines: the running command read some of
			// them (a read, a password prompt), or the screen dropped
			// marks. The prompt after the last line is the end.
			if quietFor < settleTaken {
				return st, settleTaken - quietFor
			}
			if isShell(fg()) && s.readingInputLocked() {
				return s.endByMarks(st, run), 0
			}
			return st, settleTaken
		case need == 0 && run.events == 0 && !p.idle && s.atShellPrompt() && isShell(fg()):
			// Keys, or text without Enter, that leave the shell at its
			// prompt (esc, arrows, tab, a line typed but not run).
			if quietFor < settleAtInput {
				return st, settleAtInput - quietFor
			}
			if s.readingInputLocked() {
				st.done, st.completion = true, CompletionPrompt
				st.prompt = s.screen.LineText()
				if m := s.screen.Marks(max(s.screen.MarkSeq()-1, 0)); len(m) > 0 && m[0].Pos.Line == cursor.Line {
					st.prompt, _ = s.screen.Text(Pos{Line: cursor.Line}, m[0].Pos) // up to the input mark
				}
				return st, 0
			}
			return st, settleAtInput
		}
	}

	// 2. The prompt of a program termgate knows, a prompt learned, or a
	// shell's prompt by its shape: after the last line's Enter, on a row
	// of its own, with the program blocked reading and every typed byte
	// taken in (a prompt drawn while typed-ahead lines wait is not the
	// end).
	program = fg()
	shell := isShell(program)
	gotOutput := s.bytesOut > 0 && s.lastOutput.After(p.at)
	if gotOutput && !s.screen.AltScreen() && (p.enters > 0 || p.keys) && cursor.Line > p.lastAt.Line {
		line := s.screen.LineText()
		fam := familyOf(program)
		marks := s.integration && shell && s.screen.MarkSeq() > p.markSeq
		isPrompt := fam != nil && fam.prompt.MatchString(line) ||
			s.learned != "" && line == s.learned && !marks ||
			shell && !marks && wholeShellPrompt(line)
		if isPrompt {
			if s.readingInputLocked() {
				st.done, st.completion = true, CompletionPrompt
				st.to = Pos{Line: cursor.Line}
				st.prompt = line
				return st, 0
			}
			return st, readRecheck // look again once it has gone to read
		}
	}

	// 3. Exit.
	if s.exited {
		st.done, st.completion = true, CompletionExited
		code := s.exitCode
		st.exitCode = &code
		return st, 0
	}

	// 4. Quiet period, only where nothing better can tell. A shell that
	// reports its commands' ends, or a REPL whose prompt we know, is still
	// working until it says so, unless the screen shows a question that
	// waits for an answer (read -p, input("name? "), a remote prompt over
	// ssh) or a full-screen program (vim, top, less).
	line := strings.TrimSpace(s.screen.LineText())
	waiting := line != "" && (cursor.Line > p.start.Line || cursor.Col > p.start.Col)
	reportsEnd := s.integration || s.learned != "" || familyOf(program) != nil && s.spec.Mode == ModePTY
	if reportsEnd && !waiting && !s.screen.AltScreen() {
		return st, 0
	}
	need := o.Quiet
	if quietFor >= need {
		st.done, st.completion = true, CompletionQuiet
		if shell && s.spec.Mode == ModePTY && !s.screen.AltScreen() && line != "" && len(line) <= 64 &&
			s.screen.MarkSeq() == p.markSeq && (s.integration || wholeShellPrompt(s.screen.LineText())) &&
			cursor.Line > p.lastAt.Line && s.readingInputLocked() && s.ownShellInFront() {
			// The session's shell shows a prompt and printed no mark
			// for this input (its integration was removed by the user's
			// own settings): learn the prompt, so that the next command
			// ends on it at once.
			s.learned = s.screen.LineText()
			st.completion = CompletionPrompt
			st.prompt = s.learned
			st.to = Pos{Line: cursor.Line}
		}
		return st, 0
	}
	return st, need - quietFor
}

// ownShellInFront reports whether the terminal's foreground process group
// is the session's own program.
func (s *Session) ownShellInFront() bool {
	pgid := s.foregroundGroup()
	return pgid != 0 && s.cmd != nil && s.cmd.Process != nil && pgid == s.cmd.Process.Pid
}

// endByMarks is the state of an input the shell's marks say has ended.
func (s *Session) endByMarks(st state, run markRun) state {
	st.done, st.run = true, &run
	cursor := s.screen.CursorPos()
	st.to = cursor
	st.prompt = s.screen.LineText()
	if run.endOfLast.Line == cursor.Line && run.endOfLast.Before(cursor) {
		// The prompt shares its row with output that did not end in a
		// newline: the prompt is what follows the mark.
		st.prompt, _ = s.screen.Text(run.endOfLast, cursor)
	}
	if run.lastD {
		st.completion, st.exitCode = CompletionCommandFinished, run.lastCode
	} else {
		st.completion, st.continued = CompletionPrompt, true
	}
	return st
}

// evaluateStartup waits for a new session's first prompt.
func (s *Session) evaluateStartup(o WaitOpts, st state, now time.Time) (state, time.Duration) {
	p := s.pending
	cursor := s.screen.CursorPos()
	for _, m := range s.screen.Marks(p.markSeq) {
		if m.Kind == MarkInputStart {
			st.done, st.completion = true, CompletionPrompt
			st.to = Pos{Line: cursor.Line}
			st.prompt = s.screen.LineText()
			return st, 0
		}
	}
	program := s.programLocked()
	if s.bytesOut > 0 && s.lastOutput.After(p.at) && !s.screen.AltScreen() {
		line := s.screen.LineText()
		fam := s.familyLocked(program, true)
		if fam != nil && fam.prompt.MatchString(line) || s.learned != "" && line == s.learned {
			st.done, st.completion = true, CompletionPrompt
			st.to = Pos{Line: cursor.Line}
			st.prompt = line
			return st, 0
		}
		if fam == nil && !s.integration && !s.exited && s.spec.Mode == ModePTY && isShell(program) && wholeShellPrompt(line) {
			// A shell without termgate's integration (bash --norc, sh): a
			// line that is all prompt, with the shell blocked reading its
			// terminal, is its prompt, learned for the commands to come.
			if s.readingInputLocked() {
				s.learned = line
				st.done, st.completion = true, CompletionPrompt
				st.to = Pos{Line: cursor.Line}
				st.prompt = line
				return st, 0
			}
			return st, readRecheck
		}
	}
	if s.exited {
		st.done, st.completion = true, CompletionExited
		code := s.exitCode
		st.exitCode = &code
		return st, 0
	}
	last := p.at
	if s.lastOutput.After(last) {
		last = s.lastOutput
	}
	need := o.Quiet
	if s.bytesOut == 0 && need < startupSilence {
		// A program that has printed nothing yet is most likely still
		// loading, not waiting for input.
		need = startupSilence
	}
	quiet := now.Sub(last)
	if quiet < need {
		return st, need - quiet
	}
	if s.bytesOut == 0 && quiet < maxStartupSilence && s.spec.Mode == ModePTY && !s.readingTerminalLocked() {
		// Silent, and not reading its terminal: still loading (a version
		// manager's shim resolving the interpreter, imports), not waiting
		// for input. Its first line would land in whatever reads next.
		return st, readRecheck
	}
	st.done, st.completion = true, CompletionQuiet
	return st, 0
}

// ---- wait_for ----

// waitForOverlap is how many rows of output wait_for scans again, before
// the rows that are new, each time output arrives: a match must fit in
// them plus the new output. The output is never scanned whole again, so a
// pattern that never matches costs time in proportion to the output, not
// to its square.
const waitForOverlap = 200

// maxAnchoredScan bounds the text a pattern anchored at the output's start
// (^ or \A without the m flag) is matched against: such a pattern can only
// match there, so only the output's first bytes are scanned, each time.
const maxAnchoredScan = 64 << 10

// matchWaitFor reports whether o.WaitFor matches the input's own output
// (echo and prompts left out), redacted as its result will be: the rows
// not scanned before, plus the last waitForOverlap rows of what was.
func (s *Session) matchWaitFor(p *pending, re *regexp.Regexp, cursor Pos) bool {
	begin := p.begin()
	from := p.scanFrom
	if !p.scanned || from.Before(begin) {
		from = begin
	}
	anchored := anchoredAtStart(re)
	if anchored {
		from = begin
	}
	text := s.ownOutput(p, from, cursor, false).text
	if e := s.spec.Redactor; e != nil {
		// The pattern sees what a result would show, never the screen
		// itself: halves of a secret put side by side by cursor moves
		// are a secret here too, and a guess matched against them
		// would tell what the mask hides.
		text = e.RedactWith(text, s.taint)
	}
	if anchored && len(text) > maxAnchoredScan {
		text = text[:maxAnchoredScan]
	}
	p.scanCost += int64(len(text))
	s.scanCost = p.scanCost
	if re.MatchString(text) {
		return true
	}
	// The first line's echo (and prompt) stays out of later windows: the
	// window only moves once it is rows behind.
	next := Pos{Line: cursor.Line - waitForOverlap}
	if guard := begin.Line + int64(echoRows(p.lines(), s.spec.Cols)); next.Line > from.Line && next.Line > guard {
		p.scanFrom = next
	}
	p.scanned = true
	return false
}

// echoRows bounds the rows the echo of the first line may take.
func echoRows(lines []string, cols int) int {
	if len(lines) == 0 || cols <= 0 {
		return 1
	}
	return (2*len([]rune(lines[0])))/cols + 2
}

// anchoredAtStart reports whether a pattern can only match at the start of
// the text.
func anchoredAtStart(re *regexp.Regexp) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return false
	}
	for t.Op == syntax.OpConcat || t.Op == syntax.OpCapture {
		if len(t.Sub) == 0 {
			return false
		}
		t = t.Sub[0]
	}
	return t.Op == syntax.OpBeginText
}

// ---- the result's text ----

// begin is where the input's own text can start: its start, or where the
// main screen resumes after a full-screen program it was typed into.
func (p *pending) begin() Pos {
	if p.alt {
		return p.resume
	}
	return p.start
}

// own is the text that belongs to one call, and what it left out.
type own struct {
	text    string
	earlier string // output from before this input took effect
	// at is where text begins on the screen, when it is one stretch of
	// it (one command's output): a cut result's rows are found from it.
	at   Pos
	atOK bool
}

// ownOutput returns the input's own output between from and to: with
// shell integration, what each command printed (C to D); otherwise the
// text with the echo of each line typed, and the prompt it was typed at,
// left out. When split is set and the input was typed while an earlier
// command was still running, that command's output is returned apart.
func (s *Session) ownOutput(p *pending, from, to Pos, split bool) own {
	begin := p.begin()
	if from.Before(begin) {
		from = begin
	}
	if to.Before(from) {
		return own{}
	}
	if s.screen.AltScreen() {
		return own{text: s.screen.Render()}
	}
	if s.spec.Mode != ModePTY {
		// Pipes do not echo.
		text, _ := s.screen.Text(from, to)
		return own{text: text}
	}
	if s.integration && s.spec.Mode == ModePTY && !p.startup && !p.idle {
		if run := s.markRun(p); !run.dropped && (len(run.cmds) > 0 || run.running != nil) {
			return s.ownByMarks(p, run, from, to, split)
		}
	}
	return s.stripEchoRows(p, from, to, split)
}

// ownByMarks assembles a shell's output from its marks.
func (s *Session) ownByMarks(p *pending, run markRun, from, to Pos, split bool) own {
	var o own
	cmds := run.cmds
	need := p.owed + p.enters
	if p.owed > 0 && run.events >= need && len(cmds) > 0 && cmds[0].from.Line < 0 && run.events > 1 {
		// The first command end is the earlier command's, and the shell
		// ran this input after it (input the running command read
		// itself, a key to a full-screen program, leaves no second
		// prompt): what the earlier command printed is not this input's.
		if split {
			e := s.clip(span{from: Pos{Line: -1}, to: cmds[0].to}, p, from, to)
			if from == p.begin() {
				e = cutEchoHead(e, p.input)
			}
			o.earlier = dropLines(e, p.input)
		}
		cmds = cmds[1:]
	}
	var b strings.Builder
	add := func(t string) {
		if t == "" {
			return
		}
		b.WriteString(t)
		if !strings.HasSuffix(t, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, c := range cmds {
		add(s.clip(c, p, from, to))
	}
	if len(cmds) == 1 && run.running == nil && cmds[0].from.Line >= 0 && !cmds[0].from.Before(from) {
		o.at, o.atOK = cmds[0].from, true
		if cmds[0].skipLine {
			o.at = Pos{Line: cmds[0].from.Line + 1}
		}
	}
	if run.running != nil {
		add(s.clip(span{from: *run.running, to: to}, p, from, to))
	}
	o.text = strings.TrimSuffix(b.String(), "\n")
	return o
}

// clip returns a span's text within [from, to]. A span from the input's
// start has the echo removed; one that starts at an input line drops it.
func (s *Session) clip(c span, p *pending, from, to Pos) string {
	start, skip := c.from, c.skipLine
	atInput := start.Line < 0
	if atInput {
		start = p.begin()
		if !p.alt && !p.keys && len(p.input) == 0 {
			// A read continuing a command: from where the last one stopped.
			atInput = false
		}
	}
	end := c.to
	if start.Before(from) {
		start, skip = from, false
		atInput = atInput && from == p.begin()
	}
	if to.Before(end) {
		end = to
	}
	if end.Before(start) {
		return ""
	}
	text, _ := s.screen.Text(start, end)
	switch {
	case skip:
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		} else {
			text = ""
		}
	case atInput && !p.alt && p.keys && len(p.shown) == 0:
		// Keys with nothing to recognise (ctrl+c at a running command):
		// the line the cursor was on holds their echo (^C).
		if end.Line > start.Line {
			text, _ = s.screen.Text(Pos{Line: start.Line + 1}, end)
		} else {
			text = ""
		}
	case atInput && !p.alt:
		text = stripEcho(text, p.lines())
	}
	return text
}

// cutEchoHead cuts the echo of an input's first line off the start of
// text that begins where the input was typed, when what the running
// command printed next shares its row: the command printed between the
// line's echo and its Enter (a human's terminal shows "echo newold-end"
// too). What follows the echo is the command's. A text that begins with
// anything else (the command printed before the echo came) is left as it
// is.
func cutEchoHead(text string, input []string) string {
	if len(input) == 0 || strings.TrimSpace(input[0]) == "" {
		return text
	}
	if rest, ok := strings.CutPrefix(text, input[0]); ok && rest != "" && rest[0] != '\n' {
		return rest
	}
	return text
}

// dropLines removes lines that are exactly one of the input's lines: the
// echo the terminal made of lines typed ahead while a command ran.
func dropLines(text string, input []string) string {
	if len(input) == 0 || text == "" {
		return strings.TrimRight(text, "\n")
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if containsLine(input, strings.TrimRight(l, " ")) && strings.TrimSpace(l) != "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// stripEchoRows returns the text between from and to without the echo of
// the lines typed: the first line's echo (its prompt is before the start),
// then for each later line the row its prompt was on when it was typed, or,
// where that is not known (typed ahead), a line that is a prompt followed by
// the input line, or the input line alone (the terminal's echo of a line
// typed ahead). With split, when the first line was typed ahead of the
// program (an earlier command still running), what came before its echo at
// a prompt is the earlier command's, returned apart.
func (s *Session) stripEchoRows(p *pending, from, to Pos, split bool) own {
	lines := s.screen.logicalLines(from, to)
	input := p.lines()
	if len(lines) == 0 {
		return own{}
	}
	isPrompt := s.promptPrefix()
	echoAt := func(t string, k int) bool {
		in := strings.TrimRight(input[k], " ")
		t = strings.TrimRight(t, " ")
		if in == "" {
			return isPrompt(t) || isPrompt(t+" ")
		}
		return strings.HasSuffix(t, in) && isPrompt(t[:len(t)-len(in)])
	}
	drop := make([]bool, len(lines))
	var earlier []string
	atStart := from == p.start && !p.alt && len(input) > 0
	if atStart && split && p.afterRunning {
		// Typed ahead: the first line's echo at a prompt is where this
		// input's own output starts.
		for i, l := range lines {
			if i > 0 && echoAt(l.text, 0) {
				for k, e := range lines[:i] {
					if k == 0 {
						e.text = cutEchoHead(e.text, input)
					}
					if t := strings.TrimRight(e.text, " "); !containsLine(input, t) && !containsLine(input, strings.TrimSpace(t)) {
						earlier = append(earlier, e.text)
					}
				}
				lines, drop = lines[i+1:], drop[i+1:]
				atStart = false
				break
			}
		}
	}
	if atStart {
		// The first line's echo, as stripEcho finds it (it may be partial,
		// or behind the cursor already).
		texts := make([]string, len(lines))
		for i, l := range lines {
			texts[i] = l.text
		}
		rest := stripEcho(strings.Join(texts, "\n"), input)
		kept := 0
		if rest != "" {
			kept = strings.Count(rest, "\n") + 1
		}
		for i := 0; i < len(lines)-kept; i++ {
			drop[i] = true
		}
	}
	rowKnown := map[int64]bool{}
	for k := 1; k < len(p.rowOf) && k < len(input); k++ {
		if p.rowOf[k] >= 0 {
			rowKnown[p.rowOf[k]] = true
		}
	}
	for i, l := range lines {
		if drop[i] {
			continue
		}
		if rowKnown[l.row] {
			drop[i] = true
			continue
		}
		t := strings.TrimRight(l.text, " ")
		for k := range input {
			if echoAt(t, k) || p.ahead && input[k] != "" && t == strings.TrimSpace(input[k]) {
				drop[i] = true
				break
			}
		}
	}
	var out []string
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l.text)
		}
	}
	return own{text: strings.Join(out, "\n"), earlier: strings.Join(earlier, "\n")}
}

// promptPrefix returns a test for text that is a prompt of the foreground
// program: its family's, the learned one, or (for a shell) a shell's.
func (s *Session) promptPrefix() func(string) bool {
	program := s.programLocked()
	fam := familyOf(program)
	shell := isShell(program)
	learned := s.learned
	return func(t string) bool {
		if t == "" {
			return false
		}
		return fam != nil && fam.prompt.MatchString(t) || learned != "" && t == learned ||
			shell && wholeShellPrompt(t)
	}
}

// renderLocked turns a completed (or timed-out) wait into a Result.
func (s *Session) renderLocked(st state, fresh bool) Result {
	p := s.pending
	r := Result{
		Complete:   st.completion != CompletionTimeout,
		Completion: st.completion,
		ExitCode:   st.exitCode,
		Prompt:     strings.TrimRight(st.prompt, " "),
		Continued:  st.continued,
	}
	if p.idle {
		// Nothing was running: the read is complete whatever ended it.
		r.Complete = true
	}
	if s.screen.AltScreen() {
		// A full-screen program: what a human reads is the screen.
		r.Output = s.screen.Render()
		r.Screen = true
		// Text read later continues where the main screen will.
		s.readPos = s.screen.MainResumePos()
		r.Output = s.withBacklogLocked(r.Output, fresh)
		s.finishLocked(r)
		return r
	}
	from := p.begin()
	if from.Line < s.screen.FirstLine() {
		r.LostLines = s.screen.FirstLine() - from.Line
	}
	o := s.ownOutput(p, from, st.to, true)
	text := o.text
	if st.run == nil && st.completion != CompletionCommandFinished && st.completion != CompletionPrompt {
		// Drop a trailing prompt the program is showing.
		if line := s.screen.LineText(); line != "" {
			fam := familyOf(s.programLocked())
			if fam != nil && fam.prompt.MatchString(line) || line == s.learned {
				if i := strings.LastIndex(text, "\n"); i >= 0 && text[i+1:] == strings.TrimRight(line, " ") {
					text = text[:i]
				} else if text == strings.TrimRight(line, " ") {
					text = ""
				}
				r.Prompt = strings.TrimRight(line, " ")
			}
		}
	}
	r.Output = strings.TrimRight(text, "\n")
	// Where the output's lines sit in the history (for paging a cut
	// result): known when it is one stretch of the screen's text.
	switch {
	case r.Output == "":
	case o.atOK:
		if first := s.screen.FirstLine(); o.at.Line < first {
			r.LostLines = first - o.at.Line
		} else {
			r.LostLines = 0
		}
		r.OutputRows = s.outputRowsLocked(o.at, st.to, r.LostLines, "", r.Output)
	default:
		if whole, _ := s.screen.Text(from, st.to); r.LostLines == 0 {
			if i := strings.Index(whole, r.Output); i >= 0 {
				r.OutputRows = s.outputRowsLocked(from, st.to, 0, whole[:i], r.Output)
			}
		}
	}
	if fresh {
		r.Earlier = p.earlier
		p.earlier = 0
	}
	if e := strings.TrimRight(o.earlier, "\n"); strings.TrimSpace(e) != "" {
		s.backlog = appendBacklog(s.backlog, e)
		r.Earlier += strings.Count(e, "\n") + 1
	}
	if fresh && r.Earlier > 0 {
		r.Output = earlierNote(r.Earlier) + "\n" + r.Output
	}
	if st.completion == CompletionCommandFinished || st.completion == CompletionPrompt {
		s.readPos = s.screen.CursorPos()
	} else {
		s.readPos = st.to
	}
	r.Output = s.withBacklogLocked(r.Output, fresh)
	s.finishLocked(r)
	return r
}

// withBacklogLocked puts the earlier output no call returned yet before a
// read's own (an input's result says how much it left for session_read).
func (s *Session) withBacklogLocked(text string, fresh bool) string {
	if fresh || len(s.backlog) == 0 {
		return text
	}
	parts := append(append([]string{}, s.backlog...), text)
	s.backlog = nil
	if text == "" {
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, "\n")
}

// maxBacklog bounds the earlier output kept for session_read.
const maxBacklog = 64 << 10

// appendBacklog adds earlier output, keeping the newest maxBacklog bytes.
func appendBacklog(b []string, text string) []string {
	b = append(b, text)
	n := 0
	for i := len(b) - 1; i >= 0; i-- {
		n += len(b[i])
		if n > maxBacklog {
			cut := b[i][n-maxBacklog:]
			return append([]string{"[... earlier output dropped ...]\n" + cut}, b[i+1:]...)
		}
	}
	return b
}

// earlierNote is put before the output of an input that left earlier
// output out.
func earlierNote(n int) string {
	return fmt.Sprintf("[%d earlier line(s) of output, which no call had returned when this input was typed (a command still running, or output after its call ended), are not in this result: session_read returns them]", n)
}

func (s *Session) finishLocked(r Result) {
	p := s.pending
	if r.Complete {
		s.pending = nil
		return
	}
	if p != nil {
		// A later read continues from here, still waiting for the same
		// input's end.
		p.start = s.readPos
		if p.alt = s.screen.AltScreen(); p.alt {
			p.resume = s.readPos
		}
		p.input, p.shown, p.rowOf = nil, nil, nil
		p.scanned = false
	}
}
