package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/termgate/termgate/audit"
)

// auditMain is `termgate audit verify [--audit-key F] FILE…`: it checks the
// chain and says exactly what was edited, deleted, inserted or reordered,
// or that the chain is whole. Exit 0: intact; 1: tampered; 2: usage.
func auditMain(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(stderr, "usage: termgate audit verify [--audit-key FILE] FILE...\n")
		return 2
	}
	fs := flag.NewFlagSet("termgate audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyPath := fs.String("audit-key", getenv("TERMGATE_AUDIT_KEY"), "the chain's key file (default: audit.key in $XDG_STATE_HOME/termgate)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "termgate audit verify: name the log files (all the files of one chain, any order)\n")
		return 2
	}
	if *keyPath == "" {
		*keyPath = filepath.Join(stateDir(getenv), "audit.key")
	}
	key, err := audit.LoadKey(*keyPath, false)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 2
	}
	rep, err := audit.Verify(key, fs.Args()...)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 2
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "TAMPERED: %s\n", p)
	}
	if rep.Truncated != "" {
		fmt.Fprintf(stdout, "note: %s\n", rep.Truncated)
	}
	if !rep.OK() {
		if rep.Records == 0 && len(rep.Problems) == 0 {
			fmt.Fprintln(stdout, "FAILED: no record sealed with this key")
		}
		return 1
	}
	end := "ends with the gateway's closing checkpoint"
	if !rep.CleanStop {
		end = "does NOT end with the gateway's closing checkpoint: the gateway crashed or is still running, or the tail was cut"
	}
	fmt.Fprintf(stdout, "OK: %d records, sequence %d-%d, in %d file(s); the chain %s\n", rep.Records, rep.FirstSeq, rep.LastSeq, len(rep.Files), end)
	return 0
}
