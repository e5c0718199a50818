package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"mvdan.cc/sh/v3/syntax"
)

// Query is the decision the engine evaluates.
const Query = "data.termgate.decision"

// Input is the document the policy judges; see the package doc.
type Input struct {
	Action  string `json:"action"`
	Text    string `json:"text"`
	Program string `json:"program"`
	// ProgramListed names the lists of data.termgate.lists that hold the
	// program ("<list>" in input.program_listed): derived by the engine on
	// every decision, like shell.listed, so rules keyed on it are skipped
	// by OPA's rule index for every other program.
	ProgramListed []string `json:"program_listed"`
	// TextListed names the lists that hold the text, derived likewise:
	// with a list of substrings (metadata_substrings), a rule on what the
	// text contains is skipped for every text that contains none.
	TextListed []string `json:"text_listed"`
	Shell      *Shell   `json:"shell,omitempty"`
	// Code is what code typed into a REPL, or handed to an interpreter by
	// a shell line, does (see Code); derived by the engine.
	Code *Code `json:"code,omitempty"`
	// SQL is the statements typed into a database client, or handed to
	// one by a shell line, classified (see SQL); derived by the engine.
	SQL     *SQL     `json:"sql,omitempty"`
	Secret  bool     `json:"secret,omitempty"`
	Session *Session `json:"session,omitempty"`
	Start   *Start   `json:"start,omitempty"`
	Connect *Connect `json:"connect,omitempty"`
	Exec    *Exec    `json:"exec,omitempty"` // a program the kernel holds (exec.go)
	Client  Client   `json:"client"`
	// Terminal is what the gateway knows of the terminal an input goes
	// to (see Terminal); absent for starts and execs.
	Terminal *Terminal `json:"terminal,omitempty"`
	// Cwd is the current directory of the terminal's foreground program
	// (/proc/PID/cwd), which relative paths of a typed line are resolved
	// against; session.cwd is only where the session started.
	Cwd string `json:"cwd,omitempty"`
	// Gateway names the gateway's own files and the home directory.
	Gateway *Gateway `json:"gateway,omitempty"`
}

// Terminal describes the terminal a session input is typed into.
type Terminal struct {
	// ReadsLines: the foreground program reads a line at a time (the
	// terminal is in canonical mode, or the program is a line editor
	// termgate knows).
	ReadsLines bool `json:"reads_lines"`
	// Judged: termgate knows the program (a shell or a REPL family) and
	// judges the line it runs at each Enter. A program that reads lines
	// and is not judged cannot be judged: the default bundle confirms.
	Judged bool `json:"judged"`
	// Echo is false while the terminal reads with echo off.
	Echo bool `json:"echo"`
	// Ahead: typed while an earlier command still runs, so whatever
	// reads next gets it; Readers are the programs that may.
	Ahead   bool     `json:"ahead,omitempty"`
	Readers []string `json:"readers,omitempty"`
}

// Connect is a session's new outbound destination (action connect), as
// the egress proxy saw it: the host the program asked for (a lower-case
// name, or an address literal as spelled), the port, the program that
// holds the socket, how it asked (connect, http, socks5, direct), and,
// for an address literal or a name judged again once resolved to an
// address that is not public, that address and its class (public,
// loopback, private, link_local, shared, unspecified, multicast,
// reserved); resolved says the address is what the name resolved to (the
// name itself was judged and allowed first).
type Connect struct {
	Host         string `json:"host"`
	Port         int    `json:"port"`
	Program      string `json:"program"`
	Via          string `json:"via"`
	Address      string `json:"address,omitempty"`
	AddressClass string `json:"address_class,omitempty"`
	Resolved     bool   `json:"resolved,omitempty"`
}

// Session names the session an input goes to.
type Session struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Cwd     string   `json:"cwd"`
	Profile string   `json:"profile"`
	// Confined: the session runs confined (no capabilities,
	// no_new_privs), so no program in it can gain privileges.
	Confined bool `json:"confined,omitempty"`
}

// Start describes a session (or exec) about to start.
type Start struct {
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
	Env  []string `json:"env"` // names only: values may be secrets
	// Confined: the gateway confines what it starts (the sandbox is on),
	// unless the profile the policy picks is unconfined.
	Confined bool `json:"confined,omitempty"`
}

// Client is the MCP client.
type Client struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Decision is the policy's verdict.
type Decision struct {
	Action   string `json:"action"`
	Rule     string `json:"rule"`
	Reason   string `json:"reason"`
	Severity string `json:"severity,omitempty"`
	Profile  string `json:"profile,omitempty"`

	// Bundle is the bundle that decided and Input the document it judged,
	// as the engine built it (parsed shell, derived lists): what an audit
	// record needs to say which policy decided and to replay the decision
	// with `opa eval`. Neither is part of the policy's answer.
	Bundle *Bundle `json:"-"`
	Input  *Input  `json:"-"`
}

// ReadFiles reports whether the engine's analysis of in looked at the
// file system (a path's symbolic links): a decision on the same document
// may differ once the files change, so it is not one to keep.
func (in *Input) ReadFiles() bool { return in != nil && in.Shell != nil && in.Shell.readDisk }

// Prepare fills the fields the gateway derives: the parsed shell line for
// shells; for other programs the code, SQL and shell escapes typed into
// them; and the code and SQL documents of what a line hands to
// interpreters and database clients. An input that already carries a
// shell field keeps it.
func (in *Input) Prepare() { in.prepare(nil, nil) }

// prepare is Prepare with a shell parser to reuse (nil: a new one) and
// the bundle's shell data (nil: the default bundle's). Every analysis,
// of a shell line, an argv, REPL code or SQL, starts from the same data
// and directory (input.cwd, or a start's), so the commands code or a
// client's escape amount to are followed and resolved as typed ones are.
func (in *Input) prepare(p *syntax.Parser, data *shellData) {
	if in.Shell != nil || in.Secret || in.Action == "connect" {
		return // a connect is judged by its destination, never as text
	}
	if in.Exec != nil {
		in.prepareExec(p, data) // argv, not a line: exec.go
		return
	}
	cwd := in.startCwd()
	if in.Action == "start" && in.Start != nil && len(in.Start.Argv) > 0 {
		sh := parseArgv(in.Start.Argv, data, cwd) // judge the argv as it will run, not a re-joined string
		in.Shell = &sh
		in.adoptCode()
		return
	}
	if in.Text == "" {
		return
	}
	switch {
	case in.Action == "exec" || in.Action == "start" && len(in.Text) > 0 || IsShell(in.Program):
		in.Shell = new(Shell)
		parseShellInto(in.Shell, in.Text, p, data, cwd)
		in.adoptCode()
	default:
		in.prepareProgram(p, data, cwd)
	}
}

// adoptCode makes what the shell line's code does the input's code
// document.
func (in *Input) adoptCode() {
	if in.Shell == nil {
		return
	}
	if in.Shell.code != nil && in.Code == nil {
		in.Code = in.Shell.code
	}
	if in.Shell.sql != nil && in.SQL == nil {
		in.SQL = in.Shell.sql
	}
	in.Shell.code, in.Shell.sql = nil, nil
}

// Source is where a bundle comes from.
type Source struct {
	// Dir is a bundle directory or a .tar.gz OPA bundle; empty means FS.
	Dir string
	// FS is the embedded default bundle.
	FS fs.FS
	// Remote is a bundle server (see remote.go); Dir and FS are then unused.
	Remote *Remote
	// Verify, when set, is the key configuration a bundle's signature must
	// verify under (OPA's .signatures.json, as `opa build --signing-key`
	// writes it): an unsigned or tampered bundle is refused. When unset, a
	// signed bundle is refused too (its signature cannot be checked). The
	// embedded bundle is part of the binary and is not checked.
	Verify *bundle.VerificationConfig
	// Validate, when set, checks the parts of a bundle the policy engine
	// does not use itself (the gateway's sandbox profiles, redaction rules
	// and secrets): a bundle it rejects is not put in force, at start or
	// at a reload, so a reload swaps the whole bundle or keeps the last
	// good one. package policy imports none of those parts: the gateway
	// hands this in.
	Validate func(*Bundle) error
}

// check runs Validate on a bundle that compiled.
func (s Source) check(b *Bundle) error {
	if s.Validate == nil || b == nil {
		return nil
	}
	if err := s.Validate(b); err != nil {
		return fmt.Errorf("policy bundle %s: %w", s, err)
	}
	return nil
}

func (s Source) String() string {
	switch {
	case s.Remote != nil:
		return s.Remote.String()
	case s.Dir != "":
		return s.Dir
	}
	return "embedded default bundle"
}

// Bundle is one loaded, compiled bundle.
type Bundle struct {
	Revision string    // the manifest revision, or the start of Hash
	Hash     string    // "sha256:<hex>": of the .tar.gz as served or read (what sha256sum prints), or of a directory's files
	Signed   bool      // its signature verified under Source.Verify
	Cached   bool      // a bundle server's, loaded from the local cache at start
	Source   string    // where it came from
	Loaded   time.Time // when it was compiled
	Rules    []string  // rule ids the bundle's data lists (data.termgate.rules), if any
	Profiles []string  // sandbox profiles the bundle defines
	query    rego.PreparedEvalQuery
	data     map[string]any
	modules  map[string]string // path → source, for Explain
	lists    listIndex         // which lists of data.termgate.lists hold a string
	shell    *shellData        // the runners and options the shell analysis follows
	creds    *credentialIndex  // which words of a command name credential files, or nil
	paths    *pathIndex        // which words are protected or sensitive paths, or nil

	// terms are the strings its documents share (value.go).
	terms termTable
}

// index derives sh.Names, sh.Listed, sh.ListCommands, sh.NameCommands,
// sh.WordsListed, sh.Dynamic,
// sh.PathFacts, sh.WriteTargets and each command's Flags, Operands, Listed
// and Credentials from sh.Commands, always: rules rely on them, so a
// caller's own values are never trusted. It writes into sh and its
// commands.
func (b *Bundle) index(sh *Shell, gw *Gateway) {
	sh.fill()
	sh.Names, sh.Listed, sh.WordsListed = []string{}, []string{}, []string{}
	sh.ListCommands, sh.NameCommands = map[string][]int{}, map[string][]int{}
	sh.Dynamic = false
	for i := range sh.Commands {
		c := &sh.Commands[i]
		c.deriveArgs()
		c.Credentials = nil
		sh.Names = addOnce(sh.Names, c.Name)
		sh.NameCommands[c.Name] = append(sh.NameCommands[c.Name], i)
		sh.Dynamic = sh.Dynamic || c.Dynamic
		c.Listed = []string{}
		b.lists.mark(&c.Listed, c.Name)
		slices.Sort(c.Listed)
		for _, l := range c.Listed {
			sh.Listed = addOnce(sh.Listed, l)
			sh.ListCommands[l] = append(sh.ListCommands[l], i)
		}
		for _, a := range c.Args {
			b.lists.mark(&sh.WordsListed, a)
		}
		for _, r := range c.Redirects {
			b.lists.mark(&sh.WordsListed, r.Op)
			b.lists.mark(&sh.WordsListed, r.Target)
		}
		for _, a := range c.Assigns {
			b.lists.mark(&sh.WordsListed, a)
		}
	}
	derivePaths(sh, gw, b.followed)
	for _, c := range sh.Commands {
		for i, p := range c.Paths {
			if p != c.Operands[i] {
				b.lists.mark(&sh.WordsListed, p)
			}
		}
		for _, r := range c.Redirects {
			if r.Path != "" {
				b.lists.mark(&sh.WordsListed, r.Path)
			}
		}
	}
	deriveHosts(sh, func(n string) bool { return b.lists.holds("network_clients", n) },
		func(n string) bool { return b.lists.holds("data_commands", n) })
	for _, h := range sh.Hosts {
		b.lists.mark(&sh.WordsListed, h)
	}
	slices.Sort(sh.Names)
	slices.Sort(sh.Listed)
	slices.Sort(sh.WordsListed)
	b.creds.derive(sh, slices.Contains(sh.WordsListed, "credential_substrings"))
	sh.WriteTargets = b.writeTargets(sh)
	b.paths.derive(sh)
	sh.Modes = lineModes(sh)
	// The lists that hold a file the line writes are words_listed too (dd
	// of=/dev/sda writes /dev/sda, which no word of the line is): the rules
	// on written files (sysrq_paths, raw_device_prefixes, …) are guarded by
	// them, so OPA's index skips those rules for every other line that
	// writes.
	n := len(sh.WordsListed)
	for _, t := range sh.WriteTargets {
		b.lists.mark(&sh.WordsListed, t)
	}
	if len(sh.WordsListed) > n {
		slices.Sort(sh.WordsListed)
	}
}

// indexCode derives c.Names and c.Listed (the lists that hold a call's
// name or a module), whatever the caller sent.
func (b *Bundle) indexCode(c *Code) {
	c.Calls = slices.Clone(c.Calls)
	c.fill()
	c.Names = []string{}
	for _, call := range c.Calls {
		c.Names = addOnce(c.Names, call.Name)
	}
	c.Listed = []string{}
	for _, n := range c.Names {
		b.lists.mark(&c.Listed, n)
	}
	for _, m := range c.Modules {
		b.lists.mark(&c.Listed, m)
	}
	c.Dynamic = len(c.DynamicCalls) > 0
	slices.Sort(c.Names)
	slices.Sort(c.Listed)
}

// derive fills what the engine derives for every decision, whatever the
// caller sent: input.program_listed, input.text_listed, the code's and
// the SQL's indexes, and the shell's (paths, hosts, gateway_refs). The
// shell is indexed in a copy unless ownShell says the engine parsed it for
// this decision.
func (b *Bundle) derive(in *Input, ownShell bool) {
	in.ProgramListed, in.TextListed = []string{}, []string{}
	b.lists.mark(&in.ProgramListed, in.Program)
	b.lists.mark(&in.TextListed, in.Text)
	slices.Sort(in.ProgramListed)
	slices.Sort(in.TextListed)
	if in.Code != nil {
		// The code's index is always the engine's own, in a copy.
		c := *in.Code
		b.indexCode(&c)
		in.Code = &c
	}
	if in.SQL != nil {
		q := *in.SQL
		q.derive()
		in.SQL = &q
	}
	switch {
	case in.Shell == nil:
	case ownShell:
		b.index(in.Shell, in.Gateway)
	default:
		// The caller's document stays as it was: index writes into a copy
		// of the shell and of its commands (and their redirections).
		sh := *in.Shell
		sh.Commands = slices.Clone(sh.Commands)
		for i := range sh.Commands {
			sh.Commands[i].Redirects = slices.Clone(sh.Commands[i].Redirects)
		}
		b.index(&sh, in.Gateway)
		in.Shell = &sh
	}
}

// followedLists are the lists of the commands whose operands the engine
// resolves through the links on the disk (derivePaths): those the rules
// on deleted, written, copied and re-permitted files read.
var followedLists = []string{"delete_commands", "other_delete_commands", "copy_commands", "file_commands", "in_place_editors", "permission_commands"}

// followed reports whether c's operands are resolved through the links on
// the disk: c is in one of followedLists, or is tee or dd.
func (b *Bundle) followed(c *Command) bool {
	if c.Name == "tee" || c.Name == "dd" {
		return true
	}
	for _, l := range c.Listed {
		if slices.Contains(followedLists, l) {
			return true
		}
	}
	return false
}

// listIndex tells which lists of data.termgate.lists hold a string. A list
// whose name ends in _prefixes (raw_device_prefixes) holds every string
// that starts with one of its entries; one whose name ends in _substrings
// (metadata_substrings), every string that contains one, ignoring case;
// any other list, its entries.
type listIndex struct {
	exact    map[string][]string // entry → the lists holding it
	prefixes []listEntry
	// The _substrings lists' entries, lower-cased: an entry of two bytes
	// or more under its first two (pairs has a bit set for each such
	// pair), a shorter one in short. mark looks at each position of a
	// string once, where checking every entry was a search of the whole
	// string per entry, for every word of every decision.
	substrings map[[2]byte][]listEntry
	pairs      *[1 << 16 / 64]uint64
	short      []listEntry
}

type listEntry struct{ entry, list string }

// foldCase spells s with one letter for each set of letters Go's regexp
// (?i) takes as the same (unicode.SimpleFold's orbits: s, S and the long
// s ſ; k, K and the Kelvin sign), lower case for ASCII. The _substrings
// lists match as a case-blind pattern of their entries does, so a list
// that guards a rule's (?i) pattern holds every word the pattern matches:
// strings.ToLower leaves ſ as it is, and ſocket would pass the guard of a
// pattern that matches it.
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
	}
	return strings.ToLower(s)
}

// foldRune is the least rune of r's fold orbit, lower case if ASCII.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	if 'A' <= m && m <= 'Z' {
		m += 'a' - 'A'
	}
	return m
}

func newListIndex(data map[string]any) listIndex {
	idx := listIndex{exact: map[string][]string{}}
	tg, _ := data["termgate"].(map[string]any)
	lists, _ := tg["lists"].(map[string]any)
	for name, l := range lists {
		arr, _ := l.([]any)
		for _, v := range arr {
			s, ok := v.(string)
			switch {
			case !ok:
			case strings.HasSuffix(name, "_prefixes"):
				idx.prefixes = append(idx.prefixes, listEntry{s, name})
			case strings.HasSuffix(name, "_substrings"):
				idx.addSubstring(listEntry{foldCase(s), name})
			default:
				idx.exact[s] = append(idx.exact[s], name)
			}
		}
	}
	return idx
}

func (idx *listIndex) addSubstring(e listEntry) {
	if len(e.entry) < 2 {
		idx.short = append(idx.short, e)
		return
	}
	if idx.substrings == nil {
		idx.substrings, idx.pairs = map[[2]byte][]listEntry{}, new([1 << 16 / 64]uint64)
	}
	k := [2]byte{e.entry[0], e.entry[1]}
	idx.substrings[k] = append(idx.substrings[k], e)
	p := int(e.entry[0])<<8 | int(e.entry[1])
	idx.pairs[p/64] |= 1 << (p % 64)
}

// holds reports whether the list named list holds s as an entry.
func (idx listIndex) holds(list, s string) bool {
	return slices.Contains(idx.exact[s], list)
}

// mark adds to *into every list that holds s, once.
func (idx listIndex) mark(into *[]string, s string) {
	for _, l := range idx.exact[s] {
		*into = addOnce(*into, l)
	}
	for _, p := range idx.prefixes {
		if strings.HasPrefix(s, p.entry) {
			*into = addOnce(*into, p.list)
		}
	}
	if idx.substrings == nil && idx.short == nil {
		return
	}
	lower := foldCase(s)
	for _, e := range idx.short {
		if strings.Contains(lower, e.entry) {
			*into = addOnce(*into, e.list)
		}
	}
	if idx.pairs == nil {
		return
	}
	for i := 0; i+1 < len(lower); i++ {
		p := int(lower[i])<<8 | int(lower[i+1])
		if idx.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, e := range idx.substrings[[2]byte{lower[i], lower[i+1]}] {
			if strings.HasPrefix(lower[i:], e.entry) {
				*into = addOnce(*into, e.list)
			}
		}
	}
}

// evalTimeout bounds one evaluation, in wall time: a runaway rule is
// stopped and the input denied (policy.error). A race-detector build
// gets evalScale times as long.
const evalTimeout = evalScale * time.Second

// Engine evaluates decisions with the bundle in force.
type Engine struct {
	src     Source
	mu      sync.RWMutex
	current *Bundle
	remote  *remoteState // a bundle server's downloader state, or nil
	timeout time.Duration
	// loadedFP is the bundle directory's fingerprint taken just before New
	// read it: Watch starts from it, so a change made between the load and
	// the watch's start is not missed.
	loadedFP string
	// parsers holds shell parsers for reuse: a parser is ~2 KB, a third
	// of what parsing a line allocates.
	parsers sync.Pool
}

// New loads and compiles the bundle. It fails if the bundle does not load
// or compile, or does not define the decision.
//
// With a bundle server (Source.Remote), New starts from the cached bundle
// when there is one that loads (a restart works offline), and otherwise
// downloads the bundle once; it fails when neither gives a bundle.
func New(ctx context.Context, src Source) (*Engine, error) {
	e := &Engine{src: src, timeout: evalTimeout}
	e.parsers.New = func() any { return newParser() }
	if src.Remote != nil {
		if err := e.startRemote(ctx); err != nil {
			return nil, err
		}
		return e, nil
	}
	if src.Dir != "" {
		e.loadedFP = fingerprint(src.Dir)
	}
	b, err := load(ctx, src)
	if err != nil {
		return nil, err
	}
	e.current = b
	return e, nil
}

// Bundle returns the bundle in force.
func (e *Engine) Bundle() *Bundle {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.current
}

// Name describes the engine for results: "opa <revision>".
func (e *Engine) Name() string { return "opa " + e.Bundle().Revision }

// Decide evaluates the decision for in. It never returns an allow on error.
// It grows the caller's stack first, when it is small (stack.go).
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	growStack()
	return e.decide(ctx, in)
}

// decide is Decide without growing the stack first.
func (e *Engine) decide(ctx context.Context, in Input) (d Decision, err error) {
	// No input may take the engine down. A panic is a bug (the fuzz tests
	// look for them); should one remain, the input is denied and the
	// caller gets an error that says so, with the stack.
	defer func() {
		if r := recover(); r != nil {
			d = denied("policy.error", "the policy engine failed on this input")
			err = fmt.Errorf("evaluating policy: %w: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	parsed := in.Shell == nil // the shell prepare fills is the engine's own
	b := e.Bundle()
	p := e.parsers.Get().(*syntax.Parser)
	in.prepare(p, b.shell)
	e.parsers.Put(p)
	b.derive(&in, parsed)
	// The evaluation stops when ctx ends or after e.timeout. OPA would
	// start a goroutine per evaluation to watch ctx; a timer and a context
	// callback do the same without one (and without waking another core
	// for every decision).
	c := topdown.NewCancel()
	cancel := c.Cancel // one method value for both
	t := time.AfterFunc(e.timeout, cancel)
	stop := context.AfterFunc(ctx, cancel)
	defer func() {
		t.Stop()
		stop()
	}()
	// No metrics: OPA would otherwise build a set of timers per decision
	// that nothing reads.
	// The decision comes back as OPA's value (astResult), not as Go maps.
	rs, err := b.query.Eval(ctx, rego.EvalParsedInput(in.document(b.terms)), rego.EvalMetrics(metrics.NoOp()),
		rego.EvalExternalCancel(c), evalASTResult)
	if err != nil {
		return b.denied(&in, "policy.error", "the policy failed: "+err.Error()), fmt.Errorf("evaluating policy: %w", err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return b.denied(&in, "policy.undefined", "the policy defines no decision for this input"), nil
	}
	d, err = toDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return b.denied(&in, "policy.invalid", err.Error()), nil
	}
	d.Bundle, d.Input = b, &in
	return d, nil
}

// errPanic marks an error made of a panic the engine recovered from.
var errPanic = errors.New("panic")

// denied is a deny of the engine's own, with its provenance.
func (b *Bundle) denied(in *Input, rule, reason string) Decision {
	d := denied(rule, reason)
	d.Bundle, d.Input = b, in
	return d
}

func denied(rule, reason string) Decision {
	return Decision{Action: "deny", Rule: rule, Reason: reason, Severity: "high"}
}

// astResult hands an evaluation's result back as OPA's value: converting
// the decision into Go maps for toDecision to read five strings from cost
// a decision a dozen allocations.
func astResult(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }

var evalASTResult = rego.EvalGenerateJSON(astResult)

// decisionKeys are the decision's fields toDecision reads, in the order
// of Decision's.
var decisionKeys = [...]*ast.Term{
	ast.StringTerm("action"), ast.StringTerm("rule"), ast.StringTerm("reason"), ast.StringTerm("severity"), ast.StringTerm("profile"),
}

// toDecision reads a decision: a Go value as encoding/json decodes it, or
// OPA's value (astResult). What is not an object, or has an action other
// than allow, deny or confirm, is an error; a field that is not a string
// is left empty.
func toDecision(v any) (Decision, error) {
	var fields [len(decisionKeys)]string
	switch o := v.(type) {
	case ast.Object:
		for i, k := range decisionKeys {
			if t := o.Get(k); t != nil {
				if s, ok := t.Value.(ast.String); ok {
					fields[i] = string(s)
				}
			}
		}
	case ast.Value:
		g, err := ast.JSON(o)
		if err != nil {
			return Decision{}, fmt.Errorf("the decision is %T, not an object", o)
		}
		return toDecision(g) // reported as the Go value it stands for
	case map[string]any:
		for i, k := range decisionKeys {
			if s, ok := o[string(k.Value.(ast.String))].(string); ok {
				fields[i] = s
			}
		}
	default:
		return Decision{}, fmt.Errorf("the decision is %T, not an object", v)
	}
	d := Decision{Action: fields[0], Rule: fields[1], Reason: fields[2], Severity: fields[3], Profile: fields[4]}
	switch d.Action {
	case "allow", "deny", "confirm":
	default:
		return Decision{}, fmt.Errorf("the decision's action %q is not allow, deny or confirm", d.Action)
	}
	if d.Rule == "" {
		d.Rule = "unnamed"
	}
	return d, nil
}

// Reload loads the bundle again (from a bundle server: asks it once, and
// returns the bundle in force when it has nothing newer). The new bundle
// is compiled and validated whole (Source.Validate) before it replaces
// the one in force, in one swap; on any error the bundle in force stays.
func (e *Engine) Reload(ctx context.Context) (*Bundle, error) {
	if e.remote != nil {
		return e.poll(ctx)
	}
	b, err := load(ctx, e.src)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.current = b
	e.mu.Unlock()
	return b, nil
}

// Watch polls a bundle directory (or file) every interval and reloads it
// when it changes, until ctx ends. report is called after every attempt:
// with the new bundle, or with the error that kept the old one in force.
// An embedded bundle never changes; Watch then just waits for ctx.
//
// A bundle server is polled as OPA polls it (its bundles' polling
// settings, not interval): If-None-Match with the ETag in force, long
// polling where the server offers it, backoff after failures. report is
// then called for each new bundle, each bundle rejected, and each failure
// to download that differs from the one before.
func (e *Engine) Watch(ctx context.Context, interval time.Duration, report func(*Bundle, error)) {
	if e.remote != nil {
		e.watchRemote(ctx, report)
		return
	}
	if e.src.Dir == "" {
		<-ctx.Done()
		return
	}
	last := e.loadedFP
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fp := fingerprint(e.src.Dir)
		if fp == last {
			continue
		}
		last = fp
		b, err := e.Reload(ctx)
		if report != nil {
			report(b, err)
		}
	}
}

// fingerprint summarises names, sizes and times of a bundle's files.
func fingerprint(dir string) string {
	var b strings.Builder
	fi, err := os.Stat(dir)
	if err != nil {
		return "missing"
	}
	if !fi.IsDir() {
		return fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	}
	_ = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// Capabilities are OPA's builtins less those that reach outside the
// process or leak its state: a policy decides on its input and its bundle,
// nothing else.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	banned := map[string]bool{
		"http.send": true, "opa.runtime": true, "net.lookup_ip_addr": true, "net.cidr_expand": false,
		"rego.parse_module": true, "trace": true, "print": true, "io.jwt.decode_verify": true,
		"providers.aws.sign_req": true, "crypto.x509.parse_and_verify_certificates": false,
	}
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if banned[b.Name] {
			continue
		}
		kept = append(kept, b)
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}

// files is a bundle read into memory.
type files struct {
	modules  map[string]string // path → source, tests excluded
	data     map[string]any
	revision string
	hash     string
	signed   bool
}

func load(ctx context.Context, src Source) (*Bundle, error) {
	var f files
	var err error
	switch {
	case src.Dir != "" && isTarball(src.Dir):
		var raw []byte
		if raw, err = os.ReadFile(src.Dir); err == nil {
			f, err = readTarball(raw, src.Verify)
		}
	case src.Dir != "":
		fi, serr := os.Stat(src.Dir)
		if serr != nil {
			return nil, fmt.Errorf("policy bundle %s: %w", src.Dir, serr)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("policy bundle %s: not a directory or a .tar.gz bundle", src.Dir)
		}
		if src.Verify != nil {
			f, err = readSignedDir(src.Dir, src.Verify)
		} else {
			f, err = readFS(os.DirFS(src.Dir))
		}
	case src.FS != nil:
		f, err = readFS(src.FS)
	default:
		return nil, errors.New("no policy bundle given")
	}
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", src, err)
	}
	b, err := compile(ctx, f, src.String())
	if err != nil {
		return nil, err
	}
	if err := src.check(b); err != nil {
		return nil, err
	}
	return b, nil
}

func isTarball(name string) bool {
	return strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz")
}

// compile prepares the decision query over a bundle's files and checks
// that it decides.
func compile(ctx context.Context, f files, src string) (*Bundle, error) {
	if len(f.modules) == 0 {
		return nil, fmt.Errorf("policy bundle %s: no .rego files", src)
	}
	opts := []func(*rego.Rego){
		rego.Query(Query),
		rego.Capabilities(Capabilities()),
		rego.Strict(true),
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Store(inmem.NewFromObjectWithOpts(f.data, inmem.OptReturnASTValuesOnRead(true))),
	}
	names := make([]string, 0, len(f.modules))
	for n := range f.modules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		opts = append(opts, rego.Module(n, f.modules[n]))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s does not compile: %w", src, err)
	}
	b := &Bundle{Revision: f.revision, Hash: f.hash, Signed: f.signed, Source: src, Loaded: time.Now(), query: pq, data: f.data, modules: f.modules}
	if b.Revision == "" {
		b.Revision = f.hash[:19]
	}
	b.Rules, b.Profiles = describe(f.data)
	b.lists = newListIndex(f.data)
	b.terms = newTermTable(f.data)
	b.creds = newCredentialIndex(f.data)
	b.paths = newPathIndex(f.data)
	if b.shell, err = newShellData(f.data); err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", src, err)
	}
	// A bundle must decide: evaluate a harmless input once.
	rs, err := pq.Eval(ctx, rego.EvalInput(Input{Action: "input", Text: "", Program: "bash", Shell: &Shell{Commands: []Command{}, RecursiveFunctions: []string{}}}))
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s fails to evaluate: %w", src, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("policy bundle %s defines no %s", src, Query)
	}
	if _, err := toDecision(rs[0].Expressions[0].Value); err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", src, err)
	}
	return b, nil
}

func describe(data map[string]any) (rules, profiles []string) {
	tg, _ := data["termgate"].(map[string]any)
	if p, ok := tg["profiles"].(map[string]any); ok {
		for k := range p {
			profiles = append(profiles, k)
		}
		sort.Strings(profiles)
	}
	return rules, profiles
}

func readFS(fsys fs.FS) (files, error) {
	f := files{modules: map[string]string{}, data: map[string]any{}}
	h := sha256.New()
	var paths []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return f, err
	}
	sort.Strings(paths)
	for _, p := range paths {
		name := path.Base(p)
		isData := name == "data.json"
		isRego := strings.HasSuffix(name, ".rego") && !strings.HasSuffix(name, "_test.rego")
		if !isData && !isRego && name != ".manifest" {
			continue
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return f, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		switch {
		case isRego:
			f.modules[p] = string(b)
		case isData:
			var v map[string]any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				return f, fmt.Errorf("%s: %w", p, err)
			}
			if err := mergeAt(f.data, strings.Split(path.Dir(p), "/"), v); err != nil {
				return f, fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	f.hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// mergeAt puts a data.json's object at its directory's path in data.
func mergeAt(data map[string]any, dirs []string, v map[string]any) error {
	node := data
	for _, d := range dirs {
		if d == "." || d == "" {
			continue
		}
		next, ok := node[d].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[d] = next
		}
		node = next
	}
	for k, val := range v {
		if _, dup := node[k]; dup {
			return fmt.Errorf("data key %q defined twice", k)
		}
		node[k] = val
	}
	return nil
}

// readTarball reads an OPA bundle (.tar.gz) with OPA's reader, which
// checks its signature under verify. Its hash is the file's.
func readTarball(raw []byte, verify *bundle.VerificationConfig) (files, error) {
	r := bundle.NewReader(bytes.NewReader(raw))
	return readBundle(r, verify, "sha256:"+sha256Hex(raw))
}

// readSignedDir reads a bundle directory with OPA's reader, to check the
// .signatures.json that `opa sign` writes beside the files.
func readSignedDir(dir string, verify *bundle.VerificationConfig) (files, error) {
	ld, err := bundle.NewFSLoader(os.DirFS(dir))
	if err != nil {
		return files{}, err
	}
	f, err := readBundle(bundle.NewCustomReader(ld), verify, "")
	if err != nil {
		return f, err
	}
	// A directory's hash is its files', as for an unsigned one.
	plain, err := readFS(os.DirFS(dir))
	if err != nil {
		return f, err
	}
	f.hash = plain.hash
	return f, nil
}

func readBundle(r *bundle.Reader, verify *bundle.VerificationConfig, hash string) (files, error) {
	raw, err := r.WithBundleVerificationConfig(verify).WithRegoVersion(ast.RegoV1).Read()
	if err != nil {
		if verify == nil && strings.Contains(err.Error(), "verification key not provided") {
			return files{}, errors.New("the bundle is signed and no verification key is configured to check it (--verification-key)")
		}
		return files{}, fmt.Errorf("reading bundle: %w", err)
	}
	return fromOPA(raw, verify != nil, hash)
}

// fromOPA takes a bundle OPA's reader has read (and verified). Delta
// bundles are refused: the engine needs every rule and list at once.
func fromOPA(raw bundle.Bundle, signed bool, hash string) (files, error) {
	if raw.Type() != bundle.SnapshotBundleType {
		return files{}, errors.New("a delta bundle: only snapshot bundles are accepted")
	}
	f := files{modules: map[string]string{}, data: raw.Data, revision: raw.Manifest.Revision, signed: signed, hash: hash}
	if f.data == nil {
		f.data = map[string]any{}
	}
	h := sha256.New()
	for _, m := range raw.Modules {
		if strings.HasSuffix(m.Path, "_test.rego") {
			continue
		}
		f.modules[m.Path] = string(m.Raw)
		fmt.Fprintf(h, "%s\x00%d\x00", m.Path, len(m.Raw))
		h.Write(m.Raw)
	}
	if f.hash == "" {
		db, _ := json.Marshal(f.data)
		h.Write(db)
		f.hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	return f, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Data returns the bundle's data at path (data.termgate.redaction is
// Data("termgate", "redaction")), as JSON decodes it.
func (b *Bundle) Data(path ...string) (any, bool) {
	var v any = b.data
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// Build returns the document the engine would judge for in: the parsed
// shell and the derived lists, under the bundle in force.
func (e *Engine) Build(in Input) Input {
	parsed := in.Shell == nil
	b := e.Bundle()
	p := e.parsers.Get().(*syntax.Parser)
	in.prepare(p, b.shell)
	e.parsers.Put(p)
	b.derive(&in, parsed)
	return in
}

// Explanation is a decision with what led to it.
type Explanation struct {
	// Input is the document the engine built and the policy judged: what
	// `opa eval -I` (or -i FILE) takes to replay the decision.
	Input *Input `json:"input"`
	// Findings are the rules that matched (data.termgate.finding, the set
	// the default bundle's decision ranks); nil when the bundle has no
	// such rule.
	Findings []any    `json:"findings"`
	Decision Decision `json:"decision"`
	Bundle   struct {
		Source   string `json:"source"`
		Revision string `json:"revision"`
		Hash     string `json:"hash"`
	} `json:"bundle"`
}

// FindingsQuery names the rules that matched, for Explain.
const FindingsQuery = "data.termgate.finding"

// Explain decides in and says why.
func (e *Engine) Explain(ctx context.Context, in Input) (Explanation, error) {
	d, err := e.Decide(ctx, in)
	var x Explanation
	x.Decision, x.Input = d, d.Input
	b := d.Bundle
	if b == nil {
		b = e.Bundle()
	}
	x.Bundle.Source, x.Bundle.Revision, x.Bundle.Hash = b.Source, b.Revision, b.Hash
	if err != nil || x.Input == nil {
		return x, err
	}
	opts := []func(*rego.Rego){
		rego.Query(FindingsQuery),
		rego.Capabilities(Capabilities()),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Store(inmem.NewFromObjectWithOpts(b.data, inmem.OptReturnASTValuesOnRead(true))),
		rego.ParsedInput(x.Input.value()),
	}
	for n, src := range b.modules {
		opts = append(opts, rego.Module(n, src))
	}
	rs, err := rego.New(opts...).Eval(ctx)
	if err != nil {
		return x, fmt.Errorf("evaluating %s: %w", FindingsQuery, err)
	}
	if len(rs) > 0 && len(rs[0].Expressions) > 0 {
		if set, ok := rs[0].Expressions[0].Value.([]any); ok {
			x.Findings = set
		}
	}
	return x, nil
}
