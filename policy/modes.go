package policy

import (
	"regexp"
	"slices"
	"strings"
)

// The mode rules' patterns (classes.rego: mode_option, mode_joined), the
// same expressions, so the derived modes match the rules' own.
var (
	modeClusterRE = regexp.MustCompile(`^-[A-Za-z]*m$`)
	modeLongRE    = regexp.MustCompile(`^--m(?:o(?:de?)?)?=(.*)$`)
	modeJoinedRE  = regexp.MustCompile(`^-[A-Za-z]*?m(.+)$`)
)

// lineModes derives input.shell.modes: the modes the line's commands
// set, each [command name, mode], as classes.rego's line_mode bodies find
// them. Every argument of chmod and gchmod; and the -m/--mode values of
// the mode setters (the other mode_commands, and the commands whose name
// is computed at run time): -m MODE or a flag cluster ending in m and the
// next argument, --m/--mo/--mod/--mode and the next, --mode=MODE and its
// abbreviations, -mMODE and -DmMODE, tar's -m (--touch) excepted. When a
// mode setter takes arguments supplied as it runs (a parameter, a
// substitution, xargs or parallel), every command's -m and --mode are
// read. Sorted, each pair once.
//
// Reading the modes in Rego (three rule bodies with a regular expression
// an argument) put the lines with tar, install, mkdir or chmod at the top
// of the corpus's slowest inputs; the rules now read the list, and
// compute the set themselves for a document without it. TestModesAsRulesDo and
// FuzzModes hold the two equal.
func lineModes(sh *Shell) [][2]string {
	out := [][2]string{}
	add := func(name, m string) {
		p := [2]string{name, m}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	setter := func(c *Command) bool {
		return (slices.Contains(c.Listed, "mode_commands") && !chmodProgram(c.Name)) || computedName(c.Name)
	}
	readAll := false
	for i := range sh.Commands {
		if c := &sh.Commands[i]; setter(c) && argsSupplied(c) {
			readAll = true
			break
		}
	}
	for i := range sh.Commands {
		c := &sh.Commands[i]
		if chmodProgram(c.Name) {
			for _, a := range c.Args {
				add(c.Name, a)
			}
		}
		if !readAll && !setter(c) {
			continue
		}
		touch := touchMProgram(c.Name)
		for j, a := range c.Args {
			if j+1 < len(c.Args) && (a == "--m" || a == "--mo" || a == "--mod" || a == "--mode" ||
				!touch && strings.HasPrefix(a, "-") && strings.HasSuffix(a, "m") && modeClusterRE.MatchString(a)) {
				add(c.Name, c.Args[j+1])
			}
			switch {
			case strings.HasPrefix(a, "--"):
				if m := modeLongRE.FindStringSubmatch(a); m != nil {
					add(c.Name, m[1])
				}
			case strings.HasPrefix(a, "-") && !touch:
				if m := modeJoinedRE.FindStringSubmatch(a); m != nil {
					add(c.Name, m[1])
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int {
		if n := strings.Compare(a[0], b[0]); n != 0 {
			return n
		}
		return strings.Compare(a[1], b[1])
	})
	return out
}

// chmodProgram: classes.rego's chmod_programs, whose every argument is a
// mode.
func chmodProgram(name string) bool { return name == "chmod" || name == "gchmod" }

// touchMProgram: classes.rego's touch_m_programs, whose -m is --touch.
func touchMProgram(name string) bool { return name == "tar" || name == "gtar" || name == "bsdtar" }

// computedName is shell.rego's computed_name: a name with a parameter,
// or a pattern the shell expands to a file name.
func computedName(name string) bool { return strings.ContainsAny(name, "$*?[") }

// argsSupplied is classes.rego's args_supplied: an argument holds a
// parameter or a substitution, or xargs or parallel runs the command.
func argsSupplied(c *Command) bool {
	for _, a := range c.Args {
		if strings.ContainsAny(a, "$`") {
			return true
		}
	}
	return slices.Contains(c.Wrappers, "xargs") || slices.Contains(c.Wrappers, "parallel")
}
