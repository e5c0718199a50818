package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// What an agent's session_start and exec carry besides the command — the
// working directory and the environment — is checked here, by one
// function each, for both tools (and the directory for `termgate sandbox
// run` too). Both run before the policy is asked, and what the policy
// then judges is what they return: the real directory, the names of the
// variables.

// checkedDir is a working directory the gateway checked.
type checkedDir struct {
	Path string         // absolute, no link, no "." or ".."
	ID   sandbox.FileID // what was checked: the launcher demands the same directory
	// Scratch: the agent gave no cwd, the gateway's own directory is one
	// no session may start in, and this is the scratch directory.
	Scratch bool
}

// cwdRoot is a directory sessions may start in (or only below, when
// strict).
type cwdRoot struct {
	dir    string
	strict bool
}

// cwdRules are where a session may start.
type cwdRules struct {
	roots     []cwdRoot
	anyRoot   bool     // termgate sandbox run: the human's own directory
	home      string   // the home directory, resolved: never a session's directory, nor any above it
	protected []string // the gateway's own files: never a session's directory, nor any above or below one
}

// defaultSessionRoots are data.termgate.session_roots when the bundle
// names none: the gateway's working directory, and directories below the
// home directory and below the temporary directory.
func defaultSessionRoots() []string { return []string{"{gateway_cwd}", "{home}/*", "{tmp}/*"} }

// sessionRoots reads data.termgate.session_roots: each a directory, with
// {gateway_cwd}, {home} and {tmp} placeholders; "/*" at the end means
// strictly below it. A root that does not exist is left out; a
// {gateway_cwd} of "/", or one that holds the home directory, is too.
func sessionRoots(b *policy.Bundle, gatewayCwd, home string) (cwdRules, error) {
	rules := cwdRules{}
	if home != "" {
		if h, err := sandbox.RealPath(home); err == nil {
			rules.home = h
		}
	}
	list := defaultSessionRoots()
	if b != nil {
		if raw, ok := b.Data("termgate", "session_roots"); ok {
			l, ok := stringList(raw)
			if !ok {
				return rules, errors.New("data.termgate.session_roots must be a list of directories")
			}
			list = l
		}
	}
	vars := strings.NewReplacer("{gateway_cwd}", gatewayCwd, "{home}", home, "{tmp}", os.TempDir())
	for _, e := range list {
		strict := strings.HasSuffix(e, "/*")
		d := vars.Replace(strings.TrimSuffix(e, "/*"))
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		real, err := sandbox.RealPath(d)
		if err != nil {
			continue
		}
		if strings.Contains(e, "{gateway_cwd}") && (real == "/" || rules.home != "" && within(rules.home, real)) {
			continue
		}
		rules.roots = append(rules.roots, cwdRoot{dir: real, strict: strict})
	}
	return rules, nil
}

func stringList(v any) ([]string, bool) {
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// within reports whether path is root or below it.
func within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root+"/")
}

// checkCwd turns the working directory an agent asked for into a checked
// one: absolute against base (the gateway's working directory; base
// itself when cwd is empty), resolved to the real directory (links,
// /proc/self/root, ".." gone), and refused when it is under /proc, /sys
// or /dev or on one of the kernel's own file systems, when it is / or
// the home directory or above it, or when the resolution leaves the
// allowed roots. The device and inode of what was checked go with it.
// It is the one check of session_start's, exec's and sandbox run's cwd.
func checkCwd(cwd, base string, rules cwdRules) (checkedDir, error) {
	asked := cwd
	if cwd == "" {
		cwd, asked = base, "(the gateway's) "+base
	}
	refuse := func(format string, a ...any) (checkedDir, error) {
		return checkedDir{}, fmt.Errorf("cwd %s: %s; nothing was started", quoteText(asked), fmt.Sprintf(format, a...))
	}
	if strings.ContainsFunc(cwd, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return refuse("a path with control characters is refused")
	}
	abs := cwd
	if !filepath.IsAbs(abs) {
		if base == "" {
			return refuse("a relative path needs the gateway's working directory, which is unknown")
		}
		abs = filepath.Join(base, abs)
	}
	abs = filepath.Clean(abs)
	if r := sandbox.UnderMagicRoot(abs); r != "" {
		return refuse("it is under %s, the kernel's own files", r)
	}
	real, err := sandbox.RealPath(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return refuse("not a directory (it does not exist)")
		}
		return refuse("not a directory (%v)", err)
	}
	shown := real
	if real != abs {
		shown = real + " (the real directory of " + abs + ")"
	}
	if r := sandbox.UnderMagicRoot(real); r != "" {
		return refuse("%s is under %s, the kernel's own files", shown, r)
	}
	id, dir, err := sandbox.Identify(real)
	if err != nil {
		return refuse("%v", err)
	}
	if !dir {
		return refuse("%s is not a directory", shown)
	}
	if fs, err := sandbox.PseudoFS(real); err != nil {
		return refuse("%v", err)
	} else if fs != "" {
		return refuse("%s is on %s, the kernel's own file system", shown, fs)
	}
	if real == "/" {
		return refuse("%s is the whole file system: a session may write its working directory", shown)
	}
	if rules.home != "" && within(rules.home, real) {
		return refuse("%s is the home directory or holds it: a session may write its working directory, and the home holds what runs at login (~/.bashrc, ~/.ssh); start it in a project below it", shown)
	}
	if err := sandbox.CheckGrant(real, rules.protected); err != nil {
		return refuse("%s: %v", shown, err)
	}
	if !rules.anyRoot {
		ok := false
		for _, r := range rules.roots {
			if within(real, r.dir) && (!r.strict || real != r.dir) {
				ok = true
				break
			}
		}
		if !ok {
			var names []string
			for _, r := range rules.roots {
				n := r.dir
				if r.strict {
					n += "/*"
				}
				names = append(names, n)
			}
			return refuse("%s is outside the directories sessions may start in (%s; data.termgate.session_roots in the policy bundle)", shown, strings.Join(names, ", "))
		}
	}
	return checkedDir{Path: real, ID: id}, nil
}

// checkStart checks the cwd and env of a session_start or exec against
// the bundle in force: the one place both tools check them.
func (g *gateway) checkStart(b *policy.Bundle, cwd string, env map[string]string) (checkedDir, agentEnv, error) {
	base, err := os.Getwd()
	if err != nil {
		return checkedDir{}, agentEnv{}, fmt.Errorf("finding the gateway's working directory: %w", err)
	}
	rules, err := sessionRoots(b, base, g.getenv("HOME"))
	if err != nil {
		return checkedDir{}, agentEnv{}, err
	}
	rules.protected = g.protected
	scratch := false
	if cwd == "" && homeOrRoot(base, rules.home) {
		// A client that starts the gateway in the home directory (or /)
		// and gives no cwd: the session starts in the gateway's scratch
		// directory, not in the home directory, which no session may
		// write (it holds what runs at login).
		d, err := scratchDir(g.getenv)
		if err != nil {
			return checkedDir{}, agentEnv{}, fmt.Errorf("cwd: the gateway runs in %s, where no session may start, and %v; pass cwd (a project directory); nothing was started", base, err)
		}
		if real, err := sandbox.RealPath(d); err == nil {
			rules.roots = append(rules.roots, cwdRoot{dir: real})
		}
		cwd, scratch = d, true
	}
	dir, err := checkCwd(cwd, base, rules)
	if err != nil {
		return checkedDir{}, agentEnv{}, err
	}
	dir.Scratch = scratch
	agent, err := checkAgentEnv(b, env)
	if err != nil {
		return checkedDir{}, agentEnv{}, err
	}
	return dir, agent, nil
}

// homeOrRoot reports whether dir (the gateway's working directory) is /,
// the home directory, or a directory above it: none may be a session's.
func homeOrRoot(dir, home string) bool {
	real, err := sandbox.RealPath(dir)
	if err != nil {
		return false
	}
	return real == "/" || home != "" && within(home, real)
}

// mergeEnv sets each NAME=value of pairs in a copy of env, replacing a
// variable of the same name (a later pair wins over an earlier one).
func mergeEnv(env []string, pairs ...string) []string {
	last := map[string]int{}
	for i, kv := range pairs {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := make([]string, 0, len(env)+len(pairs))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := last[name]; !set {
			out = append(out, kv)
		}
	}
	for i, kv := range pairs {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}

// ---- the environment an agent sets ----

// agentEnv is the env of a session_start or exec, checked: the names go to
// the policy, the values only to the program, the confirmation's hash
// and the human who confirms.
type agentEnv struct {
	Names []string // sorted
	Pairs []string // NAME=value, in the order of Names
}

// The bounds of an agent's env.
const (
	maxAgentVars     = 64
	maxAgentVarName  = 128
	maxAgentVarValue = 8 << 10
)

// envFloor says why a variable is never accepted from an agent, whatever
// the bundle allows, or "" when the floor does not forbid it. These run
// code or change what runs before anything is judged (imported shell
// functions, prompt, startup and mail variables, the dynamic linker,
// interpreters' start-up hooks and search paths, git's command hooks),
// or are the gateway's to set (HOME, PATH, SHELL, TMPDIR, TERMGATE_*).
func envFloor(name string) string {
	switch {
	case strings.HasPrefix(name, "BASH_FUNC_") || strings.Contains(name, "%"):
		return "it defines a shell function, which bash would import and run in place of a command"
	case !sandbox.PlainName(name):
		return "it is not a plain variable name ([A-Za-z_][A-Za-z0-9_]*)"
	}
	for _, p := range floorPrefixes() {
		if strings.HasPrefix(name, p.prefix) {
			return p.why
		}
	}
	if why, ok := floorNames()[name]; ok {
		return why
	}
	return ""
}

type floorPrefix struct{ prefix, why string }

func floorPrefixes() []floorPrefix {
	return []floorPrefix{
		{"LD_", "it changes what the dynamic linker loads"},
		{"DYLD_", "it changes what the dynamic linker loads"},
		{"GIT_", "git runs commands named by its variables (GIT_SSH_COMMAND, GIT_EDITOR, GIT_CONFIG_*, GIT_DIR's hooks)"},
		{"TERMGATE_", "it is the gateway's own setting"},
		{"XDG_", "it moves where programs read their configuration, which can run commands"},
		{"MALLOC_", "it changes how the C library behaves"},
		{"npm_config_", "npm runs commands its configuration names"},
		{"NPM_CONFIG_", "npm runs commands its configuration names"},
		{"TERMINFO", "it makes programs parse a terminal description the agent wrote"},
	}
}

func floorNames() map[string]string {
	const (
		shellStart = "the shell runs what it names at start"
		prompt     = "the shell expands it at every prompt, running any command substitution in it"
		mail       = "the shell checks and expands it, running any command substitution in it"
		gateway    = "the gateway sets it"
		interp     = "an interpreter loads or runs what it names before the program"
		runs       = "programs run the command it names"
	)
	m := map[string]string{}
	add := func(why string, names ...string) {
		for _, n := range names {
			m[n] = why
		}
	}
	add(prompt, "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "PROMPT", "RPROMPT", "RPS1", "RPS2", "PROMPT2", "PROMPT3", "PROMPT4", "SPROMPT")
	add(mail, "MAIL", "MAILPATH", "MAILCHECK")
	add(shellStart, "BASH_ENV", "ENV", "ZDOTDIR", "HISTFILE", "INPUTRC", "SHELLOPTS", "BASHOPTS", "IFS", "FPATH",
		"BASH_LOADABLES_PATH", "BASH_XTRACEFD", "CDPATH", "GLOBIGNORE", "EXECIGNORE", "TMOUT", "HISTCONTROL", "HISTIGNORE")
	add(gateway, "HOME", "SHELL", "PATH", "USER", "LOGNAME", "PWD", "OLDPWD", "TMPDIR", "TERMGATE_SESSION")
	add(interp, "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT",
		"PYTHONWARNINGS", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR", "PYTHONSAFEPATH",
		"NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
		"RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
		"LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "PHPRC",
		"PHP_INI_SCAN_DIR", "GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "HOSTALIASES", "RESOLV_HOST_CONF",
		"PSQLRC", "MYSQL_HOME", "SQLITE_HISTORY", "EXINIT", "VIMINIT", "MYVIMRC", "VIMRUNTIME", "GVIMINIT",
		"EMACSLOADPATH", "GDBHISTFILE", "SCREENRC", "LESSKEY", "LESSKEYIN", "GNUPGHOME", "KUBECONFIG", "DOCKER_HOST",
		"DOCKER_CONFIG", "CONTAINER_HOST", "BUNDLE_GEMFILE", "GEM_HOME", "GEM_PATH", "CARGO_HOME", "RUSTUP_HOME",
		"GOFLAGS", "GOENV", "GOTOOLCHAIN", "CC", "CXX", "LDFLAGS", "CFLAGS", "CPPFLAGS", "MAKEFLAGS", "MAKEFILES", "SHELL_SESSION_FILE")
	add(runs, "LESS", "LESSOPEN", "LESSCLOSE", "MANPAGER", "MANOPT", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS", "SUDO_EDITOR",
		"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
	return m
}

// envAllowlist is data.termgate.agent_env: names, and name prefixes, each
// with the regular expression its whole value must match.
type envAllowlist struct {
	names    map[string]string
	prefixes map[string]string
}

func agentEnvAllowlist(b *policy.Bundle) (envAllowlist, error) {
	al := envAllowlist{names: map[string]string{}, prefixes: map[string]string{}}
	if b == nil {
		return al, nil
	}
	raw, ok := b.Data("termgate", "agent_env")
	if !ok {
		return al, nil // none: an agent may set nothing
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return al, errors.New("data.termgate.agent_env must be an object {names: {NAME: regex}, prefixes: {PREFIX: regex}}")
	}
	for key, into := range map[string]map[string]string{"names": al.names, "prefixes": al.prefixes} {
		v, ok := m[key]
		if !ok {
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return al, fmt.Errorf("data.termgate.agent_env.%s must be an object of regular expressions", key)
		}
		for k, re := range obj {
			s, ok := re.(string)
			if !ok {
				return al, fmt.Errorf("data.termgate.agent_env.%s.%s must be a regular expression", key, k)
			}
			into[k] = s
		}
	}
	return al, nil
}

// shape returns the value shape for name and whether the list allows it.
func (al envAllowlist) shape(name string) (string, bool) {
	if re, ok := al.names[name]; ok {
		return re, true
	}
	best := ""
	for p := range al.prefixes {
		if strings.HasPrefix(name, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return "", false
	}
	return al.prefixes[best], true
}

// checkAgentEnv checks the env an agent gave: first the floor (envFloor),
// then the bundle's allowlist (data.termgate.agent_env), name and value
// shape. A refusal names the variable and says where the list lives; it
// never quotes a value.
func checkAgentEnv(b *policy.Bundle, env map[string]string) (agentEnv, error) {
	var out agentEnv
	if len(env) == 0 {
		out.Names = []string{}
		return out, nil
	}
	if len(env) > maxAgentVars {
		return out, fmt.Errorf("env: %d variables, over the limit of %d; nothing was started", len(env), maxAgentVars)
	}
	al, err := agentEnvAllowlist(b)
	if err != nil {
		return out, err
	}
	for name := range env {
		out.Names = append(out.Names, name)
	}
	sort.Strings(out.Names)
	for _, name := range out.Names {
		value := env[name]
		shown := quoteText(name)
		switch {
		case name == "" || len(name) > maxAgentVarName:
			return out, fmt.Errorf("env: %s is not a variable name (1 to %d characters); nothing was started", shown, maxAgentVarName)
		case len(value) > maxAgentVarValue:
			return out, fmt.Errorf("env: the value of %s is over %d bytes; nothing was started", shown, maxAgentVarValue)
		case strings.ContainsRune(value, 0):
			return out, fmt.Errorf("env: the value of %s holds a NUL byte; nothing was started", shown)
		}
		if why := envFloor(name); why != "" {
			return out, fmt.Errorf("env: %s is never accepted from an agent: %s (the gateway's fixed list; README, \"What an agent may set in env\"); nothing was started", shown, why)
		}
		re, ok := al.shape(name)
		if !ok {
			return out, fmt.Errorf("env: %s is not a variable an agent may set: the allowlist is data.termgate.agent_env in the policy bundle (policies/data.json); nothing was started", shown)
		}
		rx, err := regexp.Compile(`^(?:` + re + `)$`)
		if err != nil {
			return out, fmt.Errorf("data.termgate.agent_env: the value shape of %s does not compile: %v", shown, err)
		}
		if !rx.MatchString(value) {
			return out, fmt.Errorf("env: the value of %s does not have the shape data.termgate.agent_env allows (%s); nothing was started", shown, re)
		}
		out.Pairs = append(out.Pairs, name+"="+value)
	}
	return out, nil
}

// ---- argv ----

// shellMeta are the characters that make a command line need a shell.
const shellMeta = "|&;<>()$`\\\"'*?[]#~=%{}\n\t!"

// startArgv is what a session_start runs: argv as given, the shell for
// nothing, a command line split on spaces, or run by /bin/sh -c when it
// holds anything a shell would read.
func startArgv(command string, argv []string, shell string) ([]string, error) {
	switch {
	case command != "" && len(argv) > 0:
		return nil, errors.New("give command or argv, not both")
	case len(argv) > 0:
	case strings.TrimSpace(command) == "":
		argv = []string{shell}
	case strings.ContainsAny(command, shellMeta):
		argv = []string{"/bin/sh", "-c", command}
	default:
		argv = strings.Fields(command)
	}
	if argv[0] == "" || strings.ContainsRune(strings.Join(argv, ""), 0) {
		return nil, errors.New("argv must not be empty or hold NUL bytes")
	}
	return argv, nil
}

// startInput is what the policy judges of a session_start.
func startInput(name string, argv []string, dir checkedDir, agent agentEnv) GateInput {
	return GateInput{
		Action:  "start",
		Text:    strings.Join(argv, " "),
		Program: filepath.Base(argv[0]),
		Start:   &GateRef{Name: name, Argv: argv, Cwd: dir.Path, Env: agent.Names, EnvValues: agent.Pairs},
	}
}

// interactiveShell reports whether argv starts a general shell: a shell
// with no command string (-c) and no script.
func interactiveShell(argv []string) bool {
	if len(argv) == 0 || !policy.IsShell(filepath.Base(argv[0])) {
		return false
	}
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			return false // a script
		}
		if a == "-c" || !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return false
		}
	}
	return true
}
