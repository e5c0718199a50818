//go:build !race

package policy

// evalScale: see race_on.go.
const evalScale = 1
