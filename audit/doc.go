// Package audit writes termgate's record: an append-only, hash-chained
// JSON-lines log in Elastic Common Schema that a SIEM ingests as it is, and
// asciicast v2 recordings of sessions.
//
// # The chain
//
// Every record carries event.sequence, termgate.chain.prev (the previous
// record's hash) and termgate.chain.hash, an HMAC-SHA256 under a key file
// the sessions cannot read, of the record's JSON without the hash (Go's
// encoding of a map: keys sorted, one form for one record). Whoever can
// edit the file but not read the key cannot re-seal it. Verify reports
// edited, inserted, deleted and reordered records, and tells a last line
// cut short by a crash (not tampering) apart. Checkpoint records are
// written every Options.Checkpoint records, at rotation and at close; a
// chain that does not end with the closing checkpoint ended in a crash, or
// lost its tail — which nothing inside one file can tell apart: ship the
// lines to a SIEM as they are written (Syslog) to have that evidence
// elsewhere.
//
// # Durability
//
// The file is opened O_APPEND, mode 0600. Security events are written with
// an fsync before Write returns; others are synced within SyncEvery, so a
// kill -9 loses at most that much of them and leaves a chain that
// verifies. Rotation by size ends a file with a checkpoint, moves it to
// Path.NNNNNN and goes on with the same chain in a new file.
//
// # Size and time
//
// @timestamp is RFC 3339, UTC, with exactly six fractional digits
// (TimeFormat). A record's line is at most Options.MaxRecord bytes
// (DefaultMaxRecord, 7,680): rsyslog's default message size, 8 KiB, less
// room for the syslog header. Longer fields are cut before the record is
// sealed (fit): a string keeps a prefix and ends with
// "…[truncated: N bytes, sha256:HEX]" (the whole value's length and hash),
// a long array keeps its first half, and termgate.truncated lists the
// fields cut. The file and every forwarded copy hold the same record.
//
// # Forwarding
//
// Syslog sends each line as RFC 5424 over UDP, TCP or TLS (octet
// counting, RFC 6587 and 5425) or a unix socket, from a bounded buffer on
// disk that outlives the process, reconnecting with backoff; what the
// buffer cannot hold is dropped and counted (Stats).
//
// Decisions, written down: canonical JSON is encoding/json's (not RFC
// 8785): the gateway writes and verifies with the same encoder, and
// json.Number keeps numbers as written. The chain is keyed rather than
// signed: one host writes and verifies.
package audit
