package session

import (
	"regexp"
	"strings"
)

// A promptFamily knows the prompts of one kind of interactive program.
type promptFamily struct {
	name     string
	programs []string // program names, matched exactly or as a prefix followed by digits/dots
	prompt   *regexp.Regexp
}

// knownPrompts are matched against the cursor's line, up to the cursor,
// while the program is in the terminal's foreground.
var knownPrompts = []promptFamily{
	{"python", []string{"python", "python3", "python2", "ipython", "pypy", "pypy3"}, regexp.MustCompile(`^(>>>|\.\.\.) ?$|^In \[\d+\]: $|^\s+\.\.\.: $`)},
	{"node", []string{"node", "nodejs"}, regexp.MustCompile(`^(> |\.\.\. )$`)},
	{"psql", []string{"psql"}, regexp.MustCompile(`^[\w\-.@]*[=\-'"(*$]?[#>] $`)},
	{"mysql", []string{"mysql", "mariadb"}, regexp.MustCompile(`^(mysql|MariaDB \[[^\]]*\])> $|^\s+(->|'>|">|` + "`" + `>|/\*>) $`)},
	{"sqlite3", []string{"sqlite3", "sqlite"}, regexp.MustCompile(`^(sqlite> |\s+\.\.\.> )$`)},
	{"redis-cli", []string{"redis-cli", "valkey-cli"}, regexp.MustCompile(`^[\w.\-:\[\]/]+(\[\d+\])?> $|^not connected> $`)},
	{"gdb", []string{"gdb"}, regexp.MustCompile(`^\(gdb\) $|^>$|^> $`)},
	{"irb", []string{"irb", "ruby"}, regexp.MustCompile(`^irb\([^)]*\):\d+(:\d+)?[>*"'] $|^>> $`)},
	{"mongosh", []string{"mongosh", "mongo"}, regexp.MustCompile(`^\S*> $`)},
}

// genericShellPrompt finds the end of a shell prompt that termgate did not
// set up (a shell started inside the session's shell): up to the first
// prompt sign followed by a space.
var genericShellPrompt = regexp.MustCompile(`^[^$#%>]*[$#%>] `)

// wholeShellPrompt reports whether a line is nothing but a shell prompt
// waiting at the cursor: up to a prompt sign and a space, and no more.
func wholeShellPrompt(line string) bool {
	m := genericShellPrompt.FindString(line)
	return m != "" && m == line
}

// familyOf returns the prompt family of a program name, or nil.
func familyOf(program string) *promptFamily {
	for i := range knownPrompts {
		for _, p := range knownPrompts[i].programs {
			if program == p {
				return &knownPrompts[i]
			}
			if rest, ok := strings.CutPrefix(program, p); ok && rest != "" && strings.Trim(rest, "0123456789.") == "" {
				return &knownPrompts[i]
			}
		}
	}
	return nil
}

// isShell reports whether a program name is a shell.
func isShell(program string) bool {
	switch program {
	case "bash", "zsh", "sh", "dash", "ash", "ksh", "mksh", "fish", "busybox":
		return true
	}
	return false
}
