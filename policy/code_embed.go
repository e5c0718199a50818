package policy

import (
	"strings"
)

// codeLanguage is the language a program runs, for the programs whose code
// the gateway analyses: python3.12 → python, nodejs → javascript.
func codeLanguage(program string) string {
	switch program {
	case "python", "python2", "python3", "ipython", "ipython3", "pypy", "pypy3", "bpython":
		return "python"
	case "node", "nodejs", "deno", "bun":
		return "javascript"
	case "perl", "perl5":
		return "perl"
	case "ruby", "irb":
		return "ruby"
	case "awk", "gawk", "mawk", "nawk", "busybox awk":
		return "awk"
	case "php":
		return "php"
	}
	if rest, ok := strings.CutPrefix(program, "python"); ok && strings.Trim(rest, "0123456789.") == "" {
		return "python"
	}
	if rest, ok := strings.CutPrefix(program, "pypy"); ok && strings.Trim(rest, "0123456789.") == "" {
		return "python"
	}
	return ""
}

// analyseCode analyses code in a language at depth: the code facts and the
// shell commands the code amounts to. A language without an analyser is
// scanned for the strings it hands to a shell.
func analyseCode(lang, code string, depth int) (Code, Shell) {
	return analyseCodeIn(nil, lang, code, depth)
}

// analyseCodeIn is analyseCode for code that runs where the shell within
// runs (nil: nowhere known): the commands it amounts to are parsed with
// within's bundle data and resolved against its directory.
func analyseCodeIn(within *Shell, lang, code string, depth int) (Code, Shell) {
	d := newDerived(within, lang, depth)
	if depth > maxDepth {
		d.dynamic("code nested deeper than the gateway follows")
		return d.result()
	}
	switch lang {
	case "python":
		analysePython(d, code)
	case "javascript":
		analyseJS(d, code)
	case "perl", "ruby", "awk", "php":
		analyseOneLiner(d, lang, code)
	default:
		shellOut(&d.sh, code, depth+1)
	}
	d.code.Hosts = append(d.code.Hosts, codeHosts(code)...)
	return d.result()
}

// embed analyses code a shell line hands to an interpreter and adds what
// it finds to sh: the code facts, and the commands the code runs.
func embed(sh *Shell, lang, code string, depth int) []Command {
	c, sub := analyseCodeIn(sh, lang, code, depth)
	if onlyRunTime(code) {
		// python3 -c "$CODE", python3 <<EOF $(cat x) EOF: the code itself
		// is known only when the line runs.
		c.DynamicCalls = append(c.DynamicCalls, "code built at run time: "+clip(code))
		c.finish()
	}
	if sh.code == nil {
		sh.code = &Code{}
	}
	sh.code.merge(&c)
	sh.code.finish()
	mergeFlags(sh, &sub)
	sh.Embedded = sh.Embedded || len(sub.Commands) > 0
	return sub.Commands
}

// codeArg finds the code an interpreter's arguments carry: python3 -c
// CODE, node -e/-p CODE, perl -e CODE, ruby -e CODE, php -r CODE, and an
// awk program (its first operand unless -f names a file).
func codeArg(c Command) (lang, code string, ok bool) {
	lang = codeLanguage(c.Name)
	if lang == "" {
		return "", "", false
	}
	args := c.Args
	switch lang {
	case "python":
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-W" || a == "-X" || a == "-Q" || a == "--check-hash-based-pycs":
				i++ // an option's value
			case a == "-c" && i+1 < len(args):
				return lang, args[i+1], true
			case strings.HasPrefix(a, "-c") && len(a) > 2:
				return lang, a[2:], true
			case a == "-m" || !strings.HasPrefix(a, "-"):
				return "", "", false
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "c") && i+1 < len(args):
				return lang, args[i+1], true // -Ic CODE, -uc CODE
			}
		}
	case "javascript":
		var parts []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case (a == "-e" || a == "-p" || a == "--eval" || a == "--print" || a == "-pe") && i+1 < len(args):
				parts = append(parts, args[i+1])
				i++
			case strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print="):
				_, v, _ := strings.Cut(a, "=")
				parts = append(parts, v)
			case a == "eval" && c.Name == "deno" && i+1 < len(args):
				parts = append(parts, args[i+1])
				i++
			case !strings.HasPrefix(a, "-") && c.Name != "deno":
				i = len(args)
			}
		}
		if len(parts) > 0 {
			return lang, strings.Join(parts, "\n"), true
		}
	case "perl", "ruby", "php":
		// The letters that take code, and those whose value is the rest
		// of their cluster (perl -MFile::Path, ruby -rfileutils).
		code, valued, separate := "eE", "MmIxFCDidV", ""
		switch lang {
		case "ruby":
			code, valued = "e", "IrCxFEKTWi"
		case "php":
			code, valued, separate = "r", "", "dcznft"
		}
		var parts []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !strings.HasPrefix(a, "-") || a == "--" || a == "-" || strings.HasPrefix(a, "--") {
				break
			}
			cluster := a[1:]
		letters:
			for j := 0; j < len(cluster); j++ {
				switch l := cluster[j]; {
				case strings.IndexByte(code, l) >= 0:
					// -e CODE, -ne CODE, -eCODE (php: -r CODE only)
					if rest := cluster[j+1:]; rest != "" && lang != "php" {
						parts = append(parts, rest)
					} else if i+1 < len(args) {
						parts = append(parts, args[i+1])
						i++
					}
					break letters
				case strings.IndexByte(valued, l) >= 0:
					break letters
				case (l == 'l' || l == '0') && lang != "php":
					// -l and -0 take an optional octal or hex number
					for j+1 < len(cluster) && strings.IndexByte("0123456789abcdefABCDEFx", cluster[j+1]) >= 0 && cluster[j+1] != 'e' && cluster[j+1] != 'E' {
						j++
					}
				case strings.IndexByte(separate, l) >= 0:
					i++
					break letters
				}
			}
		}
		if len(parts) > 0 {
			return lang, strings.Join(parts, "\n"), true
		}
	case "awk":
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-f" || a == "--file":
				return "", "", false
			case a == "-v" || a == "-F" || a == "--assign" || a == "--field-separator":
				i++
			case a == "--source" || a == "-e":
				if i+1 < len(args) {
					return lang, args[i+1], true
				}
			case a == "--":
				if i+1 < len(args) {
					return lang, args[i+1], true
				}
			case !strings.HasPrefix(a, "-") || a == "-":
				return lang, a, true
			}
		}
	}
	return "", "", false
}

// onlyRunTime: code that is nothing but the shell's run-time parts ($X,
// ${X}, $(…), `…`), as the walker keeps them.
func onlyRunTime(code string) bool {
	t := strings.TrimSpace(code)
	if !strings.HasPrefix(t, "$") && !strings.HasPrefix(t, "`") {
		return false
	}
	sh := ParseShell("x " + t)
	if len(sh.Commands) == 0 {
		return false
	}
	last := sh.Commands[0]
	return last.Dynamic && len(last.Args) == 1 && len(strings.Fields(t)) == len(last.Args) && sh.ParseError == ""
}
