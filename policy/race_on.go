//go:build race

package policy

// evalScale stretches the bound on one evaluation in a binary built with
// the race detector, which runs Go code 5–10 times slower: such a
// binary, which only tests run, must not deny ordinary inputs because
// it is instrumented.
const evalScale = 10
