package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// What a confined session's tools get besides the profile's paths: a
// cache directory of the gateway's (the profile's {cache}), the
// placeholders its set_env names, and the deny list its reads of the
// home directory leave out; what the user's rc files failed on; and, for
// an agent that gives no cwd to a gateway started in the home directory,
// a scratch directory to start in.

// sessionCacheDir is {cache}: $XDG_CACHE_HOME/termgate/sessions (default
// ~/.cache/termgate/sessions), made 0700 when missing. Sessions write
// their tools' caches there (GOCACHE, PIP_CACHE_DIR, npm's, cargo's), so
// builds stay fast from one session to the next, and the user's own
// caches (~/.cache/go-build, ~/.npm) are never written by a session.
// "" when there is no home to put it in.
func sessionCacheDir(getenv func(string) string, uid int) (string, error) {
	base := getenv("XDG_CACHE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home := getenv("HOME")
		if home == "" || !filepath.IsAbs(home) {
			return "", nil
		}
		base = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(base, "termgate", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the sessions' cache directory %s: %w", dir, err)
	}
	if uid >= 0 && uid != os.Geteuid() {
		// --session-user: the directory is the session user's to write.
		if err := os.Lchown(dir, uid, -1); err != nil {
			return "", fmt.Errorf("the sessions' cache directory %s: %w", dir, err)
		}
	}
	return dir, nil
}

// toolPlaceholders are the placeholders set_env may name besides the
// profile's own: {gomodcache}, the user's Go module cache (GOMODCACHE,
// else GOPATH's first entry's pkg/mod, else ~/go/pkg/mod), which sessions
// read through GOPROXY=file://… — go checks every module it takes from a
// proxy against go.sum —, and {goproxy}, the proxy list go would use
// outside the session (goProxy).
func toolPlaceholders(getenv func(string) string) map[string]string {
	m := map[string]string{"goproxy": goProxy(getenv)}
	mod := getenv("GOMODCACHE")
	if mod == "" {
		if gp, _, _ := strings.Cut(getenv("GOPATH"), string(filepath.ListSeparator)); gp != "" {
			mod = filepath.Join(gp, "pkg", "mod")
		} else if home := getenv("HOME"); home != "" {
			mod = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	if filepath.IsAbs(mod) && !strings.ContainsAny(mod, ",|") {
		m["gomodcache"] = filepath.Clean(mod)
	}
	return m
}

// readDenyList is data.termgate.read_deny, or sandbox.DefaultReadDeny
// when the bundle names none.
func readDenyList(b *policy.Bundle) ([]string, error) {
	if b != nil {
		if raw, ok := b.Data("termgate", "read_deny"); ok {
			l, ok := stringList(raw)
			if !ok {
				return nil, errors.New("data.termgate.read_deny must be a list of paths")
			}
			return l, nil
		}
	}
	return sandbox.DefaultReadDeny(), nil
}

// scratchDir is where a session starts when the agent gives no cwd and
// the gateway's own directory is one no session may start in (the home
// directory, a directory above it, or /): $XDG_DATA_HOME/termgate-scratch
// (default ~/.local/share/termgate-scratch), made 0700. A session may
// write its working directory; this one is the gateway's, below the
// home, and holds nothing that runs at login. It is not under a
// directory named termgate: the policy keeps the gateway's own files
// there (**/termgate/**), and a session writes its working directory.
func scratchDir(getenv func(string) string) (string, error) {
	base := getenv("XDG_DATA_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home := getenv("HOME")
		if home == "" || !filepath.IsAbs(home) {
			return "", errors.New("no home directory to keep a scratch directory in")
		}
		base = filepath.Join(home, ".local", "share")
	}
	dir := filepath.Join(base, "termgate-scratch")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the scratch directory %s: %w", dir, err)
	}
	return dir, nil
}

// startupOutput reads what a new session's rc files wrote to standard
// error (session.Startup): the sandbox's warnings go to the server log
// (and session_info), the real errors are returned, redacted, to head
// the start's output, within a part of maxOut.
func (g *gateway) startupOutput(s *session.Session, maxOut int) string {
	shown, warnings := s.Startup()
	if len(warnings) > 0 {
		g.log.Info("session start: the user's startup files were refused by the sandbox; see session_info startup_warnings",
			"session", s.ID(), "warnings", g.redactIn(s, strings.Join(warnings, "\n")))
	}
	if len(shown) == 0 || maxOut < 200 {
		return ""
	}
	text := g.redactIn(s, strings.Join(shown, "\n")) + "\n"
	if r := []rune(text); len(r) > maxOut/4 {
		text = string(r[:maxOut/4]) + "…\n"
	}
	return text
}

// sessionRef is how the policy sees the session an input goes to: its
// profile, and whether it runs confined (then nothing in it can gain
// privileges: policies/privilege.rego refuses sudo at once rather than
// ask a human to approve what cannot work).
func (g *gateway) sessionRef(s *session.Session, st session.Status) *GateRef {
	sb := s.Sandbox()
	// Every confined launch sets no_new_privs and drops every capability,
	// degraded or not (Status.Enforced); an unconfined profile's does not.
	// The profile is the one the start's decision chose (profileOf).
	return &GateRef{ID: s.ID(), Name: s.Name(), Argv: st.Argv, Cwd: st.Dir, Profile: g.profileOf(s.ID()), Confined: g.cfg.Sandbox != "off" && sb.Enforced}
}

// fileRefusals are the files a call's output says were refused and the
// session's profile does not grant (session.FileRefusals: read from the
// program's own error, checked against the grants), as the call's
// sandbox_refused lists them.
func (g *gateway) fileRefusals(s *session.Session, output string) []Refusal {
	found := s.FileRefusals(output)
	if len(found) == 0 {
		return nil
	}
	b := g.policy.Bundle()
	var deny sandbox.DenyList
	if l, err := readDenyList(b); err == nil {
		deny, _ = sandbox.NewDenyList(l, g.getenv("HOME"), nil)
	}
	profile := s.Sandbox().Profile
	var out []Refusal
	for _, f := range found {
		r := Refusal{Access: f.Access, Path: g.redactIn(s, f.Path), Profile: profile, Rule: "sandbox.file", Source: "output"}
		switch {
		case f.Access == "write":
			r.Reason = "the profile grants it read-only"
		case deny.Denies(f.Path):
			r.Reason = "the bundle's read_deny keeps it from sessions"
		default:
			r.Reason = "the profile does not grant it"
		}
		out = append(out, r)
	}
	return out
}

// goProxy is the GOPROXY the go command would use with the gateway's
// environment, found as go finds it: the variable, else the user's go env
// file (go env -w), else the defaults of the Go installation on PATH
// ($GOROOT/go.env). With none of them readable it is "direct" (fetch from
// the modules' own hosts).
func goProxy(getenv func(string) string) string {
	if p := getenv("GOPROXY"); p != "" {
		return p
	}
	var files []string
	switch f := getenv("GOENV"); {
	case f == "off": // go env -w is off: no user file
	case f != "":
		files = append(files, f)
	case getenv("XDG_CONFIG_HOME") != "":
		files = append(files, filepath.Join(getenv("XDG_CONFIG_HOME"), "go", "env"))
	case getenv("HOME") != "":
		files = append(files, filepath.Join(getenv("HOME"), ".config", "go", "env"))
	}
	root := getenv("GOROOT")
	if root == "" {
		if goBin, err := exec.LookPath("go"); err == nil {
			if real, err := filepath.EvalSymlinks(goBin); err == nil {
				root = filepath.Dir(filepath.Dir(real))
			}
		}
	}
	if root != "" {
		files = append(files, filepath.Join(root, "go.env"))
	}
	for _, f := range files {
		if p := goEnvValue(f, "GOPROXY"); p != "" {
			return p
		}
	}
	return "direct"
}

// goEnvValue reads name's value from a go env file (NAME=value lines),
// "" when the file or the name is not there.
func goEnvValue(file, name string) string {
	b, err := os.ReadFile(file)
	if err != nil || len(b) > 1<<16 {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+"="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
