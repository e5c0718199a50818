// Package redact masks secrets in everything a terminal prints before it
// leaves the gateway: tool results, screens, transcripts, recordings, audit
// records and error messages.
//
// # Rules
//
// gitleaks' default rule set is read as data from its config package
// (regexes, keywords, entropy thresholds, secret groups, the rules' own
// allowlists and the global one); gitleaks' detector is not used, it is
// far too slow for a stream. Where termgate uses gitleaks' rules it keeps
// their meaning: the secret is the rule's secret group or, when that is 0,
// the first capture group that matched something (the whole match, its
// edge newlines trimmed, when there are no groups); entropy, allowlists
// and stop words are applied to the secret, not to the key name; and a
// rule's window spans the lines its regex can span, when the keyword's
// line leaves its value to the next one (<xToken>⏎  SECRET⏎</xToken>,
// key =⏎ value). gitleaks' own true- and false-positive samples, from its
// rule generators, are a test (TestGitleaksSamples).
//
// Terminal rules add what gitleaks misses or gates too high for terminal
// output: passwords in URLs (an empty user too), password assignments,
// environment dumps, Authorization headers, curl -u (an API key as the
// user, an empty password), AWS secret keys with their context,
// service-account JSON, Azure connection strings, Telegram bot tokens in
// API URLs, Stripe keys before any delimiter, JWTs before a comma or a
// bracket, .NET and NuGet XML passwords. They leave placeholders and
// template expressions alone: $VAR, ${var}, $(command), `command`,
// {Name}, {{ .Values.x }}, <your-token>, [PASSWORD], %VAR%, xxxx…, ****,
// a value cut short with … or ..., a value that repeats its name or is a
// name in capitals, common stand-ins (password, changeme, test). A value
// read to the next blank stops before a shell's ;, && and ||, a URL's next
// &name=, and closing brackets it did not open, so that what follows a
// secret stays as it was (the audit log keeps the command that ran).
// Private-key blocks and Kubernetes Secret data are found line by line
// (blocks.go). Operators add rules in the policy bundle (Spec).
//
// What is not caught: a secret no rule describes and no owner registered
// (a bare random string with no key, prefix or context); a secret
// transformed on its way out (base64 of it, reversed, one character per
// line); a held secret printed in pieces shorter than 8 bytes.
//
// # Engine
//
// One Aho-Corasick automaton over every rule's keywords, compiled to a
// case-folding DFA over byte classes, reads the text once (four parts at
// a time); a cheap precheck read off the rule's regex drops most hits, and
// a rule's regex runs only in the window around a hit that passes.
// Placeholders are [REDACTED:<rule>:<4 hex of HMAC-SHA256(key, secret)>],
// so the same secret correlates across results and logs without being
// revealed; the key is random for each run of the gateway unless one is
// given. Text that holds placeholders already is left as it is: redacting
// twice changes nothing.
//
// # Found and held secrets: Taint
//
// A secret is masked where a rule finds it, and also wherever else its
// value appears: in the same text, before or after the match, and — with
// a Taint — in every later text that shares it, also inside a longer
// token. A Taint also holds secrets its owner will type (Taint.Hold; the
// engine's own, for the gateway's --secret values, with AddSecret): every
// piece of 8 bytes or more of such a value is masked, so a program that
// prints it in pieces (printf '%s\n%s\n' "${P:0:12}" "${P:12}") shows
// placeholders. A Taint is bounded (TaintLimits): found values beyond it
// push out the oldest (a program that prints 256 other secrets makes it
// forget one), a held value beyond it is refused, and so is an AddSecret
// beyond Options.Held. There is no global registry: a Taint lives as long
// as its owner keeps it; a stream given none keeps its own.
//
// # Streams
//
// Stream is one stateful redactor per output stream; see its doc. In
// short, ordinary text goes out on the write that brings it: a prompt or
// the echo of a key is never kept waiting. What may be the beginning of a
// secret is held until it is decided, however long the pause: a trailing
// run that a rule could still be matching — a rule's keyword or the
// literal prefix of its matches (ghp_, AKIA, sk_live_, xox, eyJ,
// -----BEGIN, …) near the end of the text, or a key and its operator
// (password=) with the value begun — held from the first byte of its
// secret (the stream runs the rule's program over the end of the text, the
// Pike way, taking every assertion about the unknown next character as
// possibly true), and the beginning of a found or held value. It goes out
// masked when it completes, as it was when what follows breaks it. A
// secret that is complete as it stands at the very end (a token at a
// prompt, its end not seen) goes out masked after the idle time; Flush and
// Close decide everything that is held, masking what may be a secret,
// never letting it go in clear: Flush is for when the program is known to
// wait for input. A held secret past MaxHold bytes goes out masked.
//
// Where a match turns out to begin in text already emitted — the head of
// a secret whose rule has no prefix, a keyword split across writes, a
// found value copied earlier on the line — the stream masks what it still
// holds and reports the emitted span to Repair (offsets in the emitted
// stream) and the value to its Taint, so that whoever keeps the emitted
// bytes (a screen, a scrollback, a transcript, a recording) can mask them
// too.
//
// # For the session
//
// A session owns one Taint and shares it with everything of the session:
//
//	t := redact.NewTaint(redact.TaintLimits{})
//	out := e.NewStreamWith(show, redact.StreamOptions{Taint: t, Repair: repair})
//	echo := e.NewStreamWith(recordInput, redact.StreamOptions{Taint: t})
//	screen := e.RedactWith(renderedScreen, t)   // every view, the audit record
//	spans := e.Find(renderedScreen, t)          // or mask cells in place
//
// A rendered screen is redacted again as a whole: halves of a secret put
// side by side by cursor moves are only a secret there (and once found
// there, the Taint masks the value in the stream too). wait_for matches the
// redacted text. Before a secret_ref or a one-off secret is typed, the
// session holds it (t.Hold) and refuses to type it if Hold fails. Flush
// the output stream when the program waits for input; Held tells whether
// the stream still holds text back (the end of a typed line may be held:
// a line judged at Enter without it is not the line that runs).
//
// Decisions, written down:
//
//   - Escape sequences are parsed with one state machine across writes;
//     8-bit C1 controls are not (in UTF-8 they are continuation bytes, and
//     terminals in UTF-8 mode ignore them).
//   - The text projection keeps \n, \r and \t, and reads a \r\n line end
//     as \n (the rules were written for files); other C0 controls are
//     dropped from it (and from inside a mask).
//   - A found value is remembered from 8 bytes: a shorter one (a 3-letter
//     password) is masked where a rule finds it, but a bare copy of it is
//     no secret anyone can tell. A held value is taken from 4 bytes; its
//     pieces of one repeated byte (spaces, dashes) and the armour lines of
//     a PEM block are not masked.
//   - The beginning of a found or held value is held from 4 bytes: up to 3
//     bytes of one may go out before the rest shows it is one (and are
//     then reported to Repair).
//   - Idle is 30 ms by default (the bound asked for is 50 ms); it lets go
//     only complete secrets, masked.
package redact
