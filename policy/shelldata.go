package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/termgate/termgate/policies"
)

// shellData is what the shell analysis takes from the bundle's data
// (data.termgate.runners and a few lists), so that an operator who adds a
// program that runs its arguments adds it in one place, and the engine
// parses every line with the bundle that judges it:
//
//	"runners": {
//	  "nice":    {"options": ["-n", "--adjustment"]},
//	  "timeout": {"options": ["-k", "-s", "--kill-after", "--signal"], "skip": 1},
//	  "ssh":     {"options": ["-p", "-o", …], "skip": 1, "line": true},
//	  "npm":     {"subcommands": ["exec", "x"], "options": ["-c", "--call", "-p", "--package"]},
//	  "at":      {"stdin": true, "options": ["-f", "-q"]},
//	  "bwrap":   {"options": ["--chdir", …], "arity": {"--bind": 2, "--overlay": 3, …}},
//	  "mise":    {"subcommands": ["exec", "x"], "separators": ["--"]}
//	}
//
// A runner runs the command that follows its options (those named in
// options take a value; those in arity the number of values it gives,
// bwrap's --bind SRC DEST; those in optional a value only when joined to
// them, xargs -i{} and --replace=R), the skip positional arguments after them (a
// duration, a host, a lock file), and, for a runner with subcommands, one
// of those words. With line, the command's words are joined and run as a
// shell line (ssh HOST CMD…, watch CMD…). stdin: the runner reads the
// commands it runs from its standard input (at, batch), so a pipe or a
// here-document into it is code. optional_subcommand: the subcommand
// may be left out (dotenv run CMD, dotenv CMD). separators: the command
// follows the first of these words, whatever comes before it (mise x
// node@20 -- CMD, distrobox enter BOX -e CMD); where the reading by
// position differs (aws-vault exec PROFILE CMD -- ARG), both commands are
// judged. shell: options with which the runner starts a shell and hands
// it the rest (run0 --via-shell -- -c CMD).
//
// data.termgate.command_options and data.termgate.write_options name, per
// program, the options whose value is a command line the program runs, or
// a file it writes: "OPT" takes the value as it is; "OPT:PREFIX" only a
// value that starts with PREFIX (ignoring case; a * in it stands for any
// text), less the prefix (tar's "--checkpoint-action:exec=", ssh's
// "-o:ProxyCommand=", git's "-c:alias.*=!"). A write option whose name
// ends in "/" names a directory the program writes into (wget -P DIR).
// A long option matches "--opt VALUE" and "--opt=VALUE"; a one-letter one
// also "-oVALUE" and the end of a cluster ("-sSo FILE"); a one-dash word
// of more letters (find's -fprint) only itself.
//
// data.termgate.lists.command_env names the variables whose value is a
// command line some program runs (GIT_PAGER, LESSOPEN, EDITOR…): an
// assignment's value is judged as the line it is. The arguments of every
// command not in data.termgate.lists.literal_scan_skip (grep, git, echo…)
// are read for the literal command lines of code one-liners (R -e
// 'system("…")', guile -c '(system "…")', julia -e 'run(`…`)').
type shellData struct {
	runners        map[string]runner
	commandOptions map[string][]optSpec
	writeOptions   map[string][]optSpec
	commandEnv     map[string]bool
	dataCommands   map[string]bool // commands whose arguments are text, never code (echo, printf)
	literalSkip    map[string]bool // commands whose arguments are not scanned for system("…") literals
}

type runner struct {
	options     map[string]int // the options that take values, and how many (-1: an optional one, only joined)
	skip        int
	subcommands []string
	line        bool
	each        bool // one argument is a shell line, several a program and its arguments (tmux new, a terminal's -e)
	lines       bool // each argument is a shell line (hyperfine 'a' 'b')
	stdin       bool
	optionalSub bool     // the subcommand may be left out (dotenv [run] CMD)
	separators  []string // words after which the command follows (--, distrobox's -e)
	shell       []string // options that make the runner start a shell with the rest as its arguments
}

// optSpec is one option of command_options or write_options.
type optSpec struct {
	name   string // -o, --output, -fprint
	prefix string // what the value must start with; "" for any
	dir    bool   // write_options: the value is a directory written into
}

type runnerDoc struct {
	Options     []string       `json:"options"`
	Arity       map[string]int `json:"arity"`
	Optional    []string       `json:"optional"`
	Skip        int            `json:"skip"`
	Subcommands []string       `json:"subcommands"`
	Line        bool           `json:"line"`
	Each        bool           `json:"each"`
	Lines       bool           `json:"lines"`
	Stdin       bool           `json:"stdin"`
	OptionalSub bool           `json:"optional_subcommand"`
	Separators  []string       `json:"separators"`
	Shell       []string       `json:"shell"`
}

// newShellData reads the shell analysis's data from a bundle's data. A
// malformed entry is an error: the bundle is refused, not half read.
func newShellData(data map[string]any) (*shellData, error) {
	tg, _ := data["termgate"].(map[string]any)
	d := &shellData{runners: map[string]runner{}, commandOptions: map[string][]optSpec{}, writeOptions: map[string][]optSpec{},
		commandEnv: map[string]bool{}, dataCommands: map[string]bool{}, literalSkip: map[string]bool{}}
	if raw, ok := tg["runners"]; ok {
		var docs map[string]runnerDoc
		if err := remarshal(raw, &docs); err != nil {
			return nil, fmt.Errorf("data.termgate.runners: %w", err)
		}
		for name, doc := range docs {
			if doc.Skip < 0 || doc.Skip > 8 {
				return nil, fmt.Errorf("data.termgate.runners.%s: skip %d is out of 0..8", name, doc.Skip)
			}
			r := runner{options: map[string]int{}, skip: doc.Skip, subcommands: doc.Subcommands, line: doc.Line, each: doc.Each, lines: doc.Lines, stdin: doc.Stdin,
				optionalSub: doc.OptionalSub, separators: doc.Separators, shell: doc.Shell}
			for _, o := range doc.Options {
				r.options[o] = 1
			}
			for _, o := range doc.Optional {
				r.options[o] = -1
			}
			for o, n := range doc.Arity {
				if n < 1 || n > 4 {
					return nil, fmt.Errorf("data.termgate.runners.%s: arity of %s %d is out of 1..4", name, o, n)
				}
				r.options[o] = n
			}
			d.runners[name] = r
		}
	}
	for key, into := range map[string]map[string][]optSpec{"command_options": d.commandOptions, "write_options": d.writeOptions} {
		raw, ok := tg[key]
		if !ok {
			continue
		}
		var docs map[string][]string
		if err := remarshal(raw, &docs); err != nil {
			return nil, fmt.Errorf("data.termgate.%s: %w", key, err)
		}
		for prog, specs := range docs {
			for _, s := range specs {
				into[prog] = append(into[prog], parseOptSpec(s))
			}
		}
	}
	lists, _ := tg["lists"].(map[string]any)
	for key, into := range map[string]map[string]bool{"command_env": d.commandEnv, "data_commands": d.dataCommands, "literal_scan_skip": d.literalSkip} {
		arr, _ := lists[key].([]any)
		for _, v := range arr {
			if s, ok := v.(string); ok {
				into[s] = true
			}
		}
	}
	return d, nil
}

func remarshal(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func parseOptSpec(s string) optSpec {
	name, prefix, _ := strings.Cut(s, ":")
	o := optSpec{name: name, prefix: prefix}
	if strings.HasSuffix(o.name, "/") && len(o.name) > 1 {
		o.name, o.dir = strings.TrimSuffix(o.name, "/"), true
	}
	return o
}

// defaultShellData is the embedded default bundle's, for ParseShell and
// the analyses made without an engine. It is read once and never
// written.
var defaultShellData = sync.OnceValue(func() *shellData {
	b, err := policies.FS.ReadFile("data.json")
	if err != nil {
		panic("policy: the embedded bundle has no data.json: " + err.Error())
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		panic("policy: the embedded bundle's data.json: " + err.Error())
	}
	d, err := newShellData(data)
	if err != nil {
		panic("policy: the embedded bundle's data.json: " + err.Error())
	}
	return d
})

// optionValues returns the values args give to the options of specs, each
// with the spec that took it: "--opt V", "--opt=V", a one-letter option's
// "-oV" and "-xo V", and the one-dash words of several letters alone.
// A value whose spec has a prefix is returned without it, and only when
// it has it.
func optionValues(args []string, specs []optSpec) []optValue {
	var out []optValue
	add := func(s optSpec, v string) {
		if s.prefix == "" {
			out = append(out, optValue{s, v})
			return
		}
		if rest, ok := cutPrefixPattern(v, s.prefix); ok {
			out = append(out, optValue{s, rest})
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		for _, s := range specs {
			switch {
			case a == s.name:
				if i+1 < len(args) {
					add(s, args[i+1])
				}
			case strings.HasPrefix(s.name, "--") || len(s.name) > 2 && s.name[0] == '-' && s.name[1] != '-':
				if v, ok := strings.CutPrefix(a, s.name+"="); ok {
					add(s, v)
				}
			case len(s.name) == 2 && s.name[0] == '-' && a[1] != '-':
				// a cluster of one-letter options: the letter takes the
				// rest of the word, or the next argument when it ends it.
				for j := 1; j < len(a); j++ {
					r := a[j]
					if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
						break
					}
					if r != s.name[1] {
						continue
					}
					if j+1 < len(a) {
						add(s, a[j+1:])
					} else if i+1 < len(args) {
						add(s, args[i+1])
					}
					break
				}
			}
		}
	}
	return out
}

type optValue struct {
	spec  optSpec
	value string
}

// cutPrefixPattern cuts pattern from the start of v, ignoring case; a * in
// pattern stands for any text (the shortest that lets the rest match).
func cutPrefixPattern(v, pattern string) (string, bool) {
	lv, lp := strings.ToLower(v), strings.ToLower(pattern)
	head, tail, star := strings.Cut(lp, "*")
	if !strings.HasPrefix(lv, head) {
		return "", false
	}
	if !star {
		return v[len(head):], true
	}
	i := strings.Index(lv[len(head):], tail)
	if i < 0 {
		return "", false
	}
	return v[len(head)+i+len(tail):], true
}

// runnerNames lists the runners, sorted: for tests and docs.
func (d *shellData) runnerNames() []string {
	out := make([]string, 0, len(d.runners))
	for n := range d.runners {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
