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
// Decisions, written down: canonical JSON is encoding/json's (not RFC
// 8785): the gateway writes and verifies with the same encoder, and
// json.Number keeps numbers as written. The chain is keyed rather than
// signed: one host writes and verifies.
package audit
