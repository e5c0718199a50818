package main

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// incompleteShell reports whether a shell line is unfinished: a trailing
// backslash, an open quote, an open if/for/while or here-document. A
// shell then waits for the rest, and the next line continues it.
func incompleteShell(text string) bool {
	p := syntax.NewParser()
	inc := false
	err := p.Interactive(strings.NewReader(text+"\n"), func([]*syntax.Stmt) bool {
		inc = p.Incomplete()
		return true
	})
	return inc || err != nil && syntax.IsIncomplete(err)
}
