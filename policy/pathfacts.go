package policy

import (
	"strings"

	"github.com/gobwas/glob"
)

// PathFact is what the bundle's rules say of one word of a shell line as
// a path: Protected is protected(p) (termgate.rego: the word, cleaned of
// trailing slashes and dots, or without a final /* or /., is one of the
// protected_paths), Sensitive is sensitive_path(p) (the word, with $HOME
// and ${HOME} read as ~, matches one of the sensitive_write_globs). Both
// are absent when false.
type PathFact struct {
	Protected bool `json:"protected,omitempty"`
	Sensitive bool `json:"sensitive,omitempty"`
	// Leaves is true when the path reaches, through a symbolic link, a
	// place outside its command's working directory where its words do
	// not (ln -s ~ x && rm -rf x/.ssh). The rules cannot tell it from the
	// words: a document without the fact is judged by the words alone.
	Leaves bool `json:"leaves,omitempty"`
}

// pathIndex derives input.shell.path_facts: for the words of a line's
// commands the rules ask about (each operand, as written and resolved
// against the command's directory, and each redirection's target and
// path), whether the rules' protected and sensitive_path hold for it.
//
// Those two were a tenth to a half of the evaluation of a line that
// deletes or writes: each call cleaned the path with a regex and three
// else branches, read the list, joined the 53 globs into one pattern and
// matched it, per word, per rule that asked (10–25 µs a call). A fact is
// one object lookup. The rules read a word's fact when the engine
// classified it and compute it themselves otherwise, so a word the
// engine did not see (or another engine's document) is judged the same.
// The glob is the library OPA's glob.match compiles, with the same
// pattern and separator; TestPathFactsAsRulesDo and FuzzPathFacts hold
// the two equal. A bundle without the lists, or whose glob does not
// compile, has no index: no facts are derived.
type pathIndex struct {
	protected map[string]bool
	sensitive *glob.Pattern
	// literals holds, for each sensitive glob, a run of its characters
	// that every path it matches contains: a path that contains none is
	// matched by none, and is not handed to the glob (2 µs a path). Nil
	// when some glob has no such run.
	literals []string
}

func newPathIndex(data map[string]any) *pathIndex {
	tg, _ := data["termgate"].(map[string]any)
	lists, _ := tg["lists"].(map[string]any)
	prot, ok1 := stringList(lists["protected_paths"])
	globs, ok2 := stringList(lists["sensitive_write_globs"])
	if !ok1 || !ok2 {
		return nil
	}
	g, err := glob.Compile("{"+strings.Join(globs, ",")+"}", '/')
	if err != nil {
		return nil
	}
	pi := &pathIndex{protected: make(map[string]bool, len(prot)), sensitive: g}
	for _, p := range prot {
		pi.protected[p] = true
	}
	for _, g := range globs {
		lit := globLiteral(g)
		if lit == "" {
			pi.literals = nil
			break
		}
		pi.literals = append(pi.literals, lit)
	}
	return pi
}

// globLiteral is the longest run of plain characters in glob g, which
// every string g matches contains, or "" when g has none or holds a
// character class, an escape or an alternation (whose parts are not all
// required: x{abc,d} matches xd), which this does not read.
func globLiteral(g string) string {
	best, start := "", 0
	for i := 0; i <= len(g); i++ {
		if i < len(g) {
			switch g[i] {
			case '[', ']', '\\', '{', '}', ',':
				return ""
			case '*', '?':
			default:
				continue
			}
		}
		if i-start > len(best) {
			best = g[start:i]
		}
		start = i + 1
	}
	return best
}

// isSensitive is the rules' sensitive_by_glob(p).
func (pi *pathIndex) isSensitive(p string) bool {
	a := homeAlias(p)
	if pi.literals == nil {
		return pi.sensitive.Match(a)
	}
	for _, lit := range pi.literals {
		if strings.Contains(a, lit) {
			return pi.sensitive.Match(a)
		}
	}
	return false
}

// derive sets sh.PathFacts from sh's commands (their Paths derived
// first, and what each reaches through links: sh.reaches) and its write targets (derived first too: dd's of= file and a
// tee's resolved path are no word of a command, and file.sensitive_write
// asks of each target); nil, absent from the document, without an index.
func (pi *pathIndex) derive(sh *Shell) {
	sh.PathFacts = nil
	if pi == nil {
		return
	}
	sh.PathFacts = map[string]PathFact{}
	add := func(w string) {
		if _, ok := sh.PathFacts[w]; !ok {
			f := PathFact{Protected: pi.isProtected(w), Sensitive: pi.isSensitive(w), Leaves: sh.leaves[w]}
			for _, r := range sh.reaches[w] {
				// What the path reaches through links counts as well,
				// wherever on the line it does.
				f.Protected = f.Protected || pi.isProtected(r)
				f.Sensitive = f.Sensitive || pi.isSensitive(r)
			}
			sh.PathFacts[w] = f
		}
	}
	for _, c := range sh.Commands {
		for _, o := range c.Operands {
			add(o)
		}
		for _, p := range c.Paths {
			add(p)
		}
		for _, r := range c.Redirects {
			add(r.Target)
			if r.Path != "" {
				add(r.Path)
			}
		}
	}
	for _, t := range sh.WriteTargets {
		add(t)
	}
}

// isProtected is the rules' protected_by_list(p).
func (pi *pathIndex) isProtected(p string) bool {
	if pi.protected[cleanPath(p)] {
		return true
	}
	if s, ok := strings.CutSuffix(p, "/*"); ok && pi.protected[cleanPath(s)] {
		return true
	}
	if s, ok := strings.CutSuffix(p, "/."); ok && pi.protected[cleanPath(s)] {
		return true
	}
	return false
}

// cleanPath is the rules' clean(p): "/" for a path of only slashes and
// dots after its first slash (regex ^/[/.]*$), else p without its
// trailing slashes.
func cleanPath(p string) string {
	if strings.HasPrefix(p, "/") && strings.Trim(p, "/.") == "" {
		return "/"
	}
	return strings.TrimRight(p, "/")
}
