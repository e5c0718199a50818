// Package redact masks secrets in everything a terminal prints before it
// leaves the gateway: tool results, screens, transcripts, recordings, audit
// records and error messages.
//
// # Rules
//
// gitleaks' default rule set is read as data from its config package
// (regexes, keywords, entropy thresholds, secret groups, allowlists);
// gitleaks' detector is not used, it is far too slow for a stream. Terminal
// rules add what it misses: passwords in URLs and assignments (no entropy
// gate), Authorization headers and curl -u, environment dumps (*_TOKEN=,
// *_PASSWORD=, …), AWS secret keys with their context, service-account
// JSON; private-key blocks and Kubernetes Secret data are found line by
// line (blocks.go). Operators add rules in the policy bundle (Spec), and
// the gateway registers exact values it holds (AddSecret).
//
// # Engine
//
// One Aho-Corasick automaton over every rule's keywords, compiled to a
// case-folding DFA, reads the text once; a rule's regex runs only in a
// window around its keyword's hit, within that line. Most terminal text
// never reaches a regex. A secret is replaced by
// [REDACTED:<rule>:<4 hex of HMAC-SHA256(key, secret)>], so the same
// secret correlates across results and logs without being revealed; the
// key is random for each run of the gateway unless one is given.
//
// # Streams
//
// Stream is one stateful redactor per output stream: see its doc for what
// it holds back and when. Decisions, written down:
//
//   - Escape sequences are parsed with one state machine across writes;
//     8-bit C1 controls are not (in UTF-8 they are continuation bytes, and
//     terminals in UTF-8 mode ignore them).
//   - The text projection keeps \n, \r and \t; \r\n line ends are handled by
//     the rules and the block scanner. Other C0 controls are dropped.
//   - Idle flush is 30 ms by default (the bound asked for is 50 ms).
package redact
