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

// sandboxSpec is how a session or exec with the policy's chosen profile
// is confined, or nil with --sandbox=off. The profile comes from the bundle
// in force; a profile it does not define refuses the start (fail closed).
func (g *gateway) sandboxSpec(b *policy.Bundle, profile, cwd string) (*sandbox.Spec, error) {
	if g.cfg.Sandbox == "off" {
		return nil, nil
	}
	if profile == "" {
		profile = "default"
	}
	raw, ok := b.Data("termgate", "profiles")
	if !ok {
		return nil, errors.New("the policy bundle defines no sandbox profiles (data.termgate.profiles); nothing was started")
	}
	profiles, err := sandbox.ParseProfiles(raw)
	if err != nil {
		return nil, err
	}
	p, ok := profiles[profile]
	if !ok {
		return nil, fmt.Errorf("the policy chose sandbox profile %q, which the bundle does not define; nothing was started", profile)
	}
	home := g.getenv("HOME")
	spec, err := p.Resolve(sandbox.Vars{Cwd: cwd, Home: home, Path: g.getenv("PATH")}, g.protected)
	if err != nil {
		return nil, fmt.Errorf("%v; nothing was started", err)
	}
	spec.BestEffort = g.cfg.Sandbox == "best-effort"
	spec.UID, spec.GID = -1, -1
	uid := os.Geteuid()
	if g.cfg.SessionUser != "" {
		u, err := user.Lookup(g.cfg.SessionUser)
		if err != nil {
			return nil, fmt.Errorf("--session-user: %w", err)
		}
		spec.UID, _ = strconv.Atoi(u.Uid)
		spec.GID, _ = strconv.Atoi(u.Gid)
		uid = spec.UID
	}
	spec.NeedsCgroup = uid == 0
	return &spec, nil
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
	switch cfg.AuditLog {
	case "":
		add(state)
	case "off":
	default:
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

// sessionEnv is the environment sessions start from: the gateway's, less
// its own settings (TERMGATE_*) and the variables its secrets come from.
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
