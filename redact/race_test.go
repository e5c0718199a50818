//go:build race

package redact

// The race detector makes the every-split sweeps ten times slower: under
// it they try every fifth split point (the fuzz target tries the rest).
const raceEnabled = true
