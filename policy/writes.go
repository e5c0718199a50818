package policy

import (
	"slices"
	"strings"
)

// writeTargets derives input.shell.write_targets: the files a line's
// commands write, as termgate.rego's write_target bodies find them, from
// the same commands and lists: each redirection whose operator is one of
// write_redirects (its target, and its path when it has one); every
// operand of tee and of the file_commands, as written and resolved; the
// last operand of a copy_command with two or more, as written and
// resolved; the files of an in_place_editor run with -i or --in-place
// (its operands, less the first, the script, unless -e or --expression
// gives it, as written and resolved); what follows of= in
// dd's arguments, as written and resolved (its paths). Sorted, each once.
//
// Building the set in Rego took 30–40 µs of every line that writes (six
// rule bodies, each a loop over the commands); the rules now read the
// list, and compute the set themselves for a document without it.
// TestWriteTargetsAsRulesDo and FuzzWriteTargets hold the two equal.
func (b *Bundle) writeTargets(sh *Shell) []string {
	out := []string{}
	add := func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, c := range sh.Commands {
		for _, r := range c.Redirects {
			if b.lists.holds("write_redirects", r.Op) {
				add(r.Target)
				if r.Path != "" {
					add(r.Path)
				}
			}
		}
		listed := func(l string) bool { return slices.Contains(c.Listed, l) }
		flag := func(short, long string) bool {
			return slices.Contains(c.Flags, short) || slices.Contains(c.Flags, long)
		}
		if c.Name == "tee" || listed("file_commands") {
			for _, o := range slices.Concat(c.Operands, c.Paths) {
				add(o)
			}
		}
		if n := len(c.Operands); listed("copy_commands") && n >= 2 && len(c.Paths) >= n {
			add(c.Operands[n-1])
			add(c.Paths[n-1])
		}
		if listed("in_place_editors") && flag("i", "--in-place") {
			files, paths := c.Operands, c.Paths
			if !flag("e", "--expression") && len(files) > 0 {
				files = files[1:]
				paths = paths[min(1, len(paths)):]
			}
			for _, f := range slices.Concat(files, paths) {
				add(f)
			}
		}
		if c.Name == "dd" {
			for _, as := range [][]string{c.Args, c.Paths} {
				for _, a := range as {
					if strings.HasPrefix(a, "of=") {
						add(substringFrom(a, len("of=")))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
