package policy

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gobwas/glob"
)

// credentialIndex derives each command's credentials: the words of the
// command that name a credential file, as the bundle's rules define them
// (credential_words and credential in classes.rego: the arguments that
// are not options nor the key of an option that only uses one, as written
// and resolved against the command's directory; what follows the last @
// of an argument; the value of an --option=value; what a command reads by
// < and the words of a here-string), matched against the bundle's
// credential_globs (one alternation, / as the separator, $HOME and
// ${HOME} read as ~) and not ending in one of credential_example_suffixes.
//
// The rules took a fifth to two fifths of the evaluation of every line
// that mentions a credential word (a comprehension and a glob match per
// word, per command); a list of strings is one lookup. The glob is the
// library OPA's glob.match compiles, with the same pattern and separator,
// so the two agree; TestCredentialsDerivedAsRulesDo checks it on the
// corpus. A bundle without the lists (or whose glob does not compile)
// has no index, and its rules compute the words themselves.
type credentialIndex struct {
	glob       *glob.Pattern
	examples   []string
	useOptions []string
}

// lastAt is the rules' regex.replace(a, `^.*@`, ""): OPA's regex.replace
// is Go's ReplaceAllString.
var lastAt = regexp.MustCompile(`^.*@`)

func newCredentialIndex(data map[string]any) *credentialIndex {
	tg, _ := data["termgate"].(map[string]any)
	lists, _ := tg["lists"].(map[string]any)
	globs, ok1 := stringList(lists["credential_globs"])
	examples, ok2 := stringList(lists["credential_example_suffixes"])
	use, ok3 := stringList(lists["credential_use_options"])
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	g, err := glob.Compile("{"+strings.Join(globs, ",")+"}", '/')
	if err != nil {
		return nil
	}
	return &credentialIndex{glob: g, examples: examples, useOptions: use}
}

// stringList is v as a list of strings, if it is one.
func stringList(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// derive fills every command's Credentials (an empty list when it names
// none) when the line holds a credential word at all, the guard of every
// rule that reads them; otherwise it leaves them absent.
func (ci *credentialIndex) derive(sh *Shell, listed bool) {
	if ci == nil || !listed {
		return
	}
	for i := range sh.Commands {
		c := &sh.Commands[i]
		c.Credentials = []string{}
		add := func(w string) {
			if ci.credential(w) && !slices.Contains(c.Credentials, w) {
				c.Credentials = append(c.Credentials, w)
			}
		}
		for j, a := range c.Args {
			if !strings.HasPrefix(a, "-") && (j == 0 || !slices.Contains(ci.useOptions, c.Args[j-1])) {
				add(a)
				add(resolvedFor(c, a))
			}
			if strings.Contains(a, "@") {
				add(lastAt.ReplaceAllString(a, ""))
			}
			if strings.HasPrefix(a, "-") {
				if _, v, ok := strings.Cut(a, "="); ok {
					add(v)
				}
			}
		}
		for _, r := range c.Redirects {
			switch r.Op {
			case "<":
				add(r.Target)
			case "<<<":
				for _, w := range strings.Split(r.Target, " ") {
					add(w)
				}
			}
		}
		slices.Sort(c.Credentials)
	}
}

// credential is the rules' credential(w).
func (ci *credentialIndex) credential(w string) bool {
	if !ci.glob.Match(homeAlias(squeezed(w))) {
		return false
	}
	for _, s := range ci.examples {
		if strings.HasSuffix(w, s) {
			return false
		}
	}
	return true
}

// dotSegments and slashRuns are the rules' squeezed(p): OPA's
// regex.replace is Go's ReplaceAllString.
var (
	dotSegments = regexp.MustCompile(`/(\./)+`)
	slashRuns   = regexp.MustCompile(`/+`)
)

// squeezed is the rules' squeezed(p): runs of / and "/./" segments as
// one /.
func squeezed(p string) string {
	return slashRuns.ReplaceAllString(dotSegments.ReplaceAllString(p, "/"), "/")
}

// homeAlias is the rules' home_alias(p): $HOME/… and ${HOME}/… as ~/….
func homeAlias(p string) string {
	switch {
	case strings.HasPrefix(p, "$HOME"):
		return "~" + substringFrom(p, len("$HOME"))
	case strings.HasPrefix(p, "${HOME}"):
		return "~" + substringFrom(p, len("${HOME}"))
	}
	return p
}

// substringFrom is OPA's substring(s, n, -1): s from its nth code point,
// where a byte that is not UTF-8 is one code point, U+FFFD, in what is
// left of a string that is not all ASCII (OPA counts in runes).
func substringFrom(s string, n int) string {
	if isASCII(s) {
		if n >= len(s) {
			return ""
		}
		return s[n:]
	}
	r := []rune(s)
	if n >= len(r) {
		return ""
	}
	return string(r[n:])
}

// resolvedFor is the rules' resolved(c, p) (history.rego): a relative
// path joined to the command's directory when it has one.
func resolvedFor(c *Command, p string) string {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || c.Cwd == "" {
		return p
	}
	return strings.TrimRight(c.Cwd, "/") + "/" + p
}
