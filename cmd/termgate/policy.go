package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/termgate/termgate/policy"
)

// engineDecider adapts the policy engine to the pipeline's Decider seam.
// gateway is what every input document says of the gateway itself
// (input.gateway): its own files at their configured paths, and the home
// directory.
type engineDecider struct {
	e       *policy.Engine
	gateway policy.Gateway
}

// policyGateway is input.gateway for this configuration: the gateway's
// own files at their configured paths: the state directory (the default
// audit log and key), the audit log and its rotations, the key,
// recordings, the policy bundle, the log file, and the files that decide
// what it trusts (the egress hosts file, the bundle server's
// configuration, token, certificates and cache, the verification key,
// the syslog certificates and spool).
func policyGateway(cfg Config, getenv func(string) string) policy.Gateway {
	home, _ := os.UserHomeDir()
	var paths []string
	add := func(p, suffix string) {
		if p != "" && p != "off" {
			if abs, err := filepath.Abs(p); err == nil {
				paths = append(paths, abs+suffix)
			}
		}
	}
	add(stateDir(getenv), "")
	add(cfg.AuditLog, "*")
	add(cfg.AuditKey, "")
	add(cfg.RecordDir, "")
	add(cfg.PolicyDir, "")
	add(cfg.LogFile, "")
	// The files that decide what the gateway trusts: where bundles come
	// from and how they are checked, where names resolve, where the
	// audit is forwarded and spooled.
	for _, p := range []string{cfg.EgressHosts, cfg.PolicyConfig, cfg.PolicyTokenFile, cfg.PolicyClientCert,
		cfg.PolicyClientKey, cfg.PolicyCACert, cfg.PolicyCache, cfg.VerificationKey,
		cfg.AuditSyslogCA, cfg.AuditSyslogCert, cfg.AuditSyslogKey, cfg.AuditSyslogSpool} {
		add(p, "")
	}
	return policy.Gateway{Paths: paths, Home: home}
}

// foregroundCwd is the current directory of the foreground process group
// of the terminal whose session process is pid (its leader's
// /proc/PID/cwd; tpgid is field 8 of /proc/PID/stat), or of pid itself
// without a terminal; "" when it cannot be read.
func foregroundCwd(pid int) string {
	if pid <= 0 {
		return ""
	}
	target := pid
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			// after "pid (comm)": state ppid pgrp session tty_nr tpgid
			if f := strings.Fields(string(b[i+1:])); len(f) > 5 {
				if tpgid, err := strconv.Atoi(f[5]); err == nil && tpgid > 0 {
					target = tpgid
				}
			}
		}
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(target) + "/cwd")
	if err != nil || !strings.HasPrefix(cwd, "/") {
		return ""
	}
	return cwd
}

func (d engineDecider) Name() string { return d.e.Name() }

func (d engineDecider) Decide(ctx context.Context, in GateInput) (Decision, error) {
	pin := toPolicyInput(in)
	gw := d.gateway
	pin.Gateway = &gw
	pd, err := d.e.Decide(ctx, pin)
	out := Decision{Action: Verdict(pd.Action), Rule: pd.Rule, Reason: pd.Reason, Severity: pd.Severity, Profile: pd.Profile}
	if b := pd.Bundle; b != nil {
		out.Policy = &DecisionSource{Source: b.Source, Revision: b.Revision, Hash: b.Hash}
		if pd.Input != nil {
			out.Policy.Input = pd.Input
		}
	}
	return out, err
}

// toPolicyInput is what the policy is shown of an input.
func toPolicyInput(in GateInput) policy.Input {
	pin := policy.Input{
		Action:  string(in.Action),
		Text:    in.Text,
		Program: in.Program,
		Secret:  in.Secret,
		Client:  policy.Client{Name: in.Client.Name, Version: in.Client.Version},
		Cwd:     in.Cwd,
	}
	if in.Secret {
		pin.Text = "" // secret input is never shown to the policy as text
	}
	if in.Session != nil {
		profile := in.Session.Profile
		if profile == "" {
			profile = "default"
		}
		pin.Session = &policy.Session{ID: in.Session.ID, Name: in.Session.Name, Argv: in.Session.Argv, Cwd: in.Session.Cwd, Profile: profile, Confined: in.Session.Confined}
	}
	if c := in.Connect; c != nil {
		// A destination is judged by the egress rules alone: no text, no
		// program for the rules on typed input.
		pin.Text, pin.Program = "", ""
		pin.Connect = &policy.Connect{Host: c.Host, Port: c.Port, Program: c.Program, Via: c.Via, Address: c.Address, AddressClass: c.AddressClass, Resolved: c.Resolved}
		if pin.Session != nil {
			pin.Session.Profile = c.Profile
		}
	}
	if in.Start != nil {
		env := in.Start.Env
		if env == nil {
			env = []string{}
		}
		pin.Start = &policy.Start{Argv: in.Start.Argv, Cwd: in.Start.Cwd, Env: env, Confined: in.Start.Confined}
	}
	if x := in.Exec; x != nil {
		pin.Exec = &policy.Exec{Argv: x.Argv, Path: x.Path, Cwd: x.Cwd, Parents: x.Parents, Line: x.Line,
			LineConfirmed: x.LineConfirmed, IdentifiedBy: x.IdentifiedBy, Home: x.Home, Env: x.Env}
	}
	if t := in.Terminal; t != nil {
		pin.Terminal = &policy.Terminal{ReadsLines: t.ReadsLines, Judged: t.Judged, Echo: t.Echo, Ahead: t.Ahead, Readers: t.Readers}
	}
	return pin
}
