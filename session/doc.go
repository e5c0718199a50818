// Package session runs programs in pseudo-terminals (or pipes) for the
// gateway: a Manager starts, finds, reaps and closes Sessions; a Session
// owns its program's process tree, a headless VT screen with scrollback,
// and decides when an input is complete and what its result is.
//
// # Goroutines and locks
//
// Each Session owns three goroutines: the reader (terminal output to the
// redactor and the screen), the waiter (collects the program and its
// tree) and, in a PTY, the reply writer (answers to terminal queries, from
// a queue bounded at 4 KiB: a program that floods queries without reading
// loses the excess, and never costs a goroutine per reply). All three stop
// when the session closes. The Manager owns one more, the idle reaper. A
// panic in any of them is a bug, but it does not take the gateway down: it
// is recovered, reported with its stack to the PanicFunc the session was
// given (Spec.OnPanic, else Manager.OnPanic, else the default slog
// logger), the session is marked broken (inputs fail with ErrBroken) and
// its program killed, so that it reads as exited. Every lock the
// goroutines take is released by defer.
//
// # One call at a time
//
// An input (Send, SendKeys), a "new" read (Read) and the wait for the
// first prompt (WaitStart) each hold the session's turn for the whole call.
// A second call waits for the turn within its own timeout (a read with
// NoWait does not wait), then fails with a BusyError ("session busy:
// another call (session_send, 1.2s so far) is in flight; nothing was
// sent"): nothing of it reached the terminal, so keystrokes of two calls
// never interleave and no output is claimed twice. Snapshots (Screen,
// Scrollback, Status) need no turn. An input that gets the turn of a new
// session before WaitStart does waits for the first prompt itself.
//
// # Writes
//
// The PTY master is made pollable (creack/pty hands it over in blocking
// mode, where deadlines do not work), so every write honours the call's
// context and deadline: a write the program does not take in (a raw-mode
// program that stopped reading, with the terminal's buffer full) fails
// with ErrNotReading at the call's deadline, saying how much was typed.
// Closing never waits for a writer: Close first makes any write in flight
// or waiting fail, then types EOF.
//
// # Results
//
// A send types its lines one at a time, each once the program has taken
// the one before (typed sooner, a line editor between two reads lets the
// kernel echo it twice). Its result covers every line: the wait ends when
// the program is back at its prompt after the last one, and the output is
// what each line printed, without their echo or the prompts, continuation
// prompts included, they were typed at. With shell integration that is
// what each command printed between its start and end marks, and the
// shell must show one prompt per line typed; elsewhere (REPLs, learned
// prompts) the prompt must come on a row below the last line, with the
// program blocked reading, nothing typed left unread, and all it printed
// on the screen. Those looks are taken in that order, and output the
// kernel still holds in the terminal's flip buffer counts as printed and
// not shown (proc_linux.go, readingTerminal): a program that read a line
// typed ahead, answered it and went back to read is not mistaken for one
// still at the prompt it drew before it read the line.
//
// Each result holds its own call's output only. Output no call has
// returned when an input is typed (a command whose call timed out or was
// cancelled, still printing), and what such a command prints before the
// shell runs the new input, is kept for the next Read, which returns it
// first; the input's Result counts it in Earlier and its Output begins
// with a note saying so. Keys that a running program reads itself (an
// answer to its question, q to a pager) get the program's output as
// theirs.
//
// After a full-screen program leaves the alternate screen, a result holds
// the text the main screen shows from where it resumed (where the program
// saved the cursor), never lines from before the program ran. While the
// alternate screen is shown, a result is the rendered screen.
//
// wait_for is matched against the input's own output (after the echo,
// without prompts), redacted as its result will be, incrementally: each time output arrives it scans the
// rows not scanned before plus the last 200 rows of what was
// (waitForOverlap). A match must fit in that window; a pattern anchored at
// the start (^ or \A without the m flag) is matched against the first 64
// KiB only. A pattern that never matches thus costs time in proportion to
// the output, not to its square.
//
// # Shell integration
//
// bash and zsh started plainly get a generated rc file (in the session's
// private directory; the user's own rc is sourced first, never edited)
// that emits OSC 133 marks: a hook that runs before every prompt prints the
// last command's end with its status (D) and the prompt's start (A), PS1
// ends with the input's start (B), PS2 is a continuation prompt (A;k=s …
// B), and PS0 (bash) or preexec (zsh) marks a command's start (C). The
// same hook puts the prompt marks back whenever the user's settings
// replace the prompts (PS1='$ ', source ~/.bashrc, a theme), and keeps
// itself the last hook (in bash never element 0 of PROMPT_COMMAND, which a
// plain assignment replaces). A shell whose hooks are removed altogether
// completes on its prompt by its shape (ending in $, #, % or > and a space)
// or, after a quiet period, learns the prompt it shows again.
//
// # Enter, and the line it runs
//
// At each Enter (CR, ctrl+j, ctrl+o) the gateway's judge is asked about the
// line the terminal shows, when the foreground program is a line editor:
// a shell, or a REPL whose prompt termgate knows. That is decided by the
// program in the terminal's foreground (tcgetpgrp, its argv[0]), not by the
// screen, which any program can paint to look like anything: a shell that
// switched to the alternate screen is still judged. A line editor whose
// line cannot be read because it did not settle within five seconds (or by
// the call's deadline) is refused, and its typed line cleared with ctrl+e
// ctrl+u, which every line editor termgate judges understands.
//
// Enter into any other program (vim, less, fzf, top, a program reading raw
// keys, a pipeline's pager such as cat f | less) is a key like the others:
// the gate already judged the keys themselves (action "keys", with the
// program), there is no command line to read, and the exec gate sees
// whatever the program runs. It is sent without waiting for the terminal
// to settle, never refused for not settling, and nothing is typed into
// such a program to clear a line it does not have. The foreground
// program of a pipeline whose first command has exited is its newest live
// member.
//
// # A line nobody judged
//
// A line can reach the session's bash without a judged Enter (keys a
// program pushed into the terminal, a line typed ahead that the gateway
// thought another program would read). bash refuses it: the gateway
// issues a ticket before each Enter it types that may reach the shell,
// in a file the session reads and never writes, and every key that makes
// readline run the line first takes one; with none, the line is emptied
// before bash parses it, and the refusal is reported (Spec.OnUnjudged).
// An Enter typed while the foreground program is not blocked reading the
// terminal (its own, or /dev/tty when the terminal is its controlling
// one) may reach the shell, and gets a ticket: a program that sleeps, or
// reads a pipe or a socket, is typed ahead of, as Status.Ahead says (a
// poll, select or epoll counts as reading the terminal: /proc does not
// name what it waits on).
// Every Enter takes one ticket whatever its line does, and unused tickets
// are voided after each call when the shell waits at its prompt with
// nothing unread. Input holding ctrl+x ctrl+t, the prefix of the keys
// that accept a line once it holds a ticket, is refused
// (ErrReservedKeys). The design, why it is not a DEBUG trap, and its
// limits (a shell started inside the session, zsh, an unconfined
// session) are in tickets.go.
//
// # Closed sessions
//
// A closed session stays listed and readable until MaxExited newer ones
// push it out, but keeps only its final screen, the last 1,000 lines (at
// most 32 KiB) of its history and at most 32 KiB of output no read
// returned; its emulator, scrollback ring, redactor stream, recording tap
// and environment are let go (BenchmarkClosedSessionRetained: about 12 KB
// per closed session after 20,000 lines, from 1.6 MB).
//
// # Redaction
//
// With a redactor, output is redacted before the screen sees it: the
// screen, the scrollback and every result made from them hold no secret
// the redactor knows, and unredacted output never leaves this package.
// The session owns one redact.Taint, shared by its stream and every view
// of it (Session.Redact; wait_for's text too): a secret found once is
// masked in every copy, a secret a view finds that the stream did not
// (halves drawn apart by cursor moves) is held from then on, and text the
// stream emitted before a match showed it to be a secret is masked where
// it went — the screen's cells, the scrollback, the output log and a Tap
// that is a Repairer (repair.go). The Taint is bounded, and let go when
// the session closes.
package session
