package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// profileFor returns the bundle's sandbox profile by name (default when
// the policy named none); a profile the bundle does not define refuses
// the start (fail closed).
func profileFor(b *policy.Bundle, name string) (sandbox.Profile, error) {
	if name == "" {
		name = "default"
	}
	raw, ok := b.Data("termgate", "profiles")
	if !ok {
		return sandbox.Profile{}, errors.New("the policy bundle defines no sandbox profiles (data.termgate.profiles); nothing was started")
	}
	profiles, err := sandbox.ParseProfiles(raw)
	if err != nil {
		return sandbox.Profile{}, err
	}
	p, ok := profiles[name]
	if !ok {
		return sandbox.Profile{}, fmt.Errorf("the policy chose sandbox profile %q, which the bundle does not define; nothing was started", name)
	}
	return p, nil
}

// launch is how one session or exec starts: its confinement (nil with
// --sandbox=off), its environment, and its egress proxy (for a profile
// with network proxy: the caller ends it with g.egress.end when the
// launch is over, or did not happen).
type launch struct {
	spec   *sandbox.Spec
	env    []string
	egress *sandbox.EgressSession
}

// prepareLaunch resolves the policy's chosen profile for a start in cwd:
// the sandbox spec, and the environment the profile allows (with the
// sandbox off too). A general shell never gets ~/.ssh, whatever the
// profile says.
func (g *gateway) prepareLaunch(b *policy.Bundle, profile string, cwd checkedDir, argv []string) (launch, error) {
	p, err := profileFor(b, profile)
	if err != nil {
		return launch{}, err
	}
	l := launch{env: p.Environ(g.env, sessionEnvDeny(b))}
	if g.cfg.Sandbox == "off" {
		return l, nil
	}
	home := g.getenv("HOME")
	spec, err := p.Resolve(sandbox.Vars{Cwd: cwd.Path, CwdID: cwd.ID, Home: home, Path: g.getenv("PATH")}, g.protected)
	if err != nil {
		return launch{}, fmt.Errorf("%v; nothing was started", err)
	}
	if interactiveShell(argv) && home != "" {
		if ssh, err := sandbox.RealPath(filepath.Join(home, ".ssh")); err == nil {
			for _, grant := range append(append(append([]string{}, spec.Read...), spec.Write...), spec.Devices...) {
				if within(grant, ssh) || within(ssh, grant) {
					return launch{}, fmt.Errorf("profile %s would give a general shell (%s) %s; nothing was started", p.Name, filepath.Base(argv[0]), ssh)
				}
			}
		}
	}
	spec.BestEffort = g.cfg.Sandbox == "best-effort"
	spec.UID, spec.GID = -1, -1
	uid := os.Geteuid()
	if g.cfg.SessionUser != "" {
		u, err := user.Lookup(g.cfg.SessionUser)
		if err != nil {
			return launch{}, fmt.Errorf("--session-user: %w", err)
		}
		spec.UID, _ = strconv.Atoi(u.Uid)
		spec.GID, _ = strconv.Atoi(u.Gid)
		uid = spec.UID
	}
	spec.NeedsCgroup = uid == 0
	if spec.Network == "proxy" && g.egress != nil {
		l.egress = g.egress.newSession()
		spec.Egress = l.egress
	}
	l.spec = &spec
	return l, nil
}

// sessionEnvDeny is data.termgate.session_env_deny, or
// sandbox.DefaultEnvDeny when the bundle names none: variables no session
// gets, whatever its profile allows.
func sessionEnvDeny(b *policy.Bundle) []string {
	if raw, ok := b.Data("termgate", "session_env_deny"); ok {
		if l, ok := stringList(raw); ok {
			return l
		}
	}
	return sandbox.DefaultEnvDeny()
}

// protectedPaths are the gateway's own files, which no session may reach.
func protectedPaths(cfg Config, getenv func(string) string) []string {
	state := stateDir(getenv)
	var out []string
	add := func(p string) {
		if p != "" && p != "off" {
			if abs, err := filepath.Abs(p); err == nil {
				out = append(out, abs)
			}
		}
	}
	// The state directory holds the audit key unless --audit-key moves
	// it, and the log unless --audit-log does: it is the gateway's always.
	add(state)
	if cfg.AuditLog != "" && cfg.AuditLog != "off" {
		add(filepath.Dir(cfg.AuditLog))
	}
	if cfg.AuditKey != "" {
		add(cfg.AuditKey)
	}
	add(cfg.RecordDir)
	add(cfg.PolicyDir)
	add(cfg.LogFile)
	return out
}

func sandboxStatusOf(spec *sandbox.Spec, st sandbox.Status) string {
	if spec == nil {
		return "none: --sandbox=off, sessions are not confined"
	}
	return st.String()
}

// sessionEnv is the environment sessions' profiles choose from: the
// gateway's, less its own settings (TERMGATE_*) and the variables its
// secrets come from, whatever a profile allows.
func sessionEnv(env []string, secretSpecs []string) []string {
	drop := map[string]bool{}
	for _, spec := range secretSpecs {
		if _, src, ok := strings.Cut(spec, "="); ok {
			if v, ok := strings.CutPrefix(src, "env:"); ok {
				drop[v] = true
			}
		}
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TERMGATE_") || drop[name] {
			continue
		}
		out = append(out, kv)
	}
	return out
}
