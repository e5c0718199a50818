package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	seccomp "github.com/seccomp/libseccomp-golang"
)

// commands describes each command for `termgate help CMD` and
// `termgate CMD --help`; the flags follow, as the command defines them.
func commands() map[string]struct{ synopsis, text string } {
	return map[string]struct{ synopsis, text string }{
		"serve": {"termgate [serve] [flags]",
			"Serve MCP over stdio (the default command): terminal sessions for an agent, every input judged by the\n" +
				"policy, every session confined, every result redacted, everything recorded in the audit log.\n" +
				"The policy bundle is the embedded one, --policy-dir, or a bundle server (--policy-url or\n" +
				"--policy-config, as an OPA agent pulls one); --verification-key makes signed bundles mandatory."},
		"policy": {"termgate policy eval [--explain] [--policy-dir D] [--program P] [--action A] [--jsonl] [TEXT]\n  termgate policy test [--policy-dir D] [-v]",
			"eval prints the decision for TEXT (or, with --jsonl, for each input document on stdin);\n" +
				"--explain prints the input document the engine built (parsed commands, derived lists), the rules\n" +
				"that matched and the bundle that decided: the input is what `opa eval -I` replays.\n" +
				"test runs the bundle's Rego tests, as `opa test` does."},
		"redact": {"termgate redact [--policy-dir D] [--secret NAME=env:VAR]",
			"Mask secrets from stdin to stdout with the gateway's rules (gitleaks' and the terminal's) and its secrets."},
		"audit": {"termgate audit verify [--audit-key F] FILE...",
			"Check an audit log's hash chain: OK, or which record was edited, deleted, inserted or reordered,\n" +
				"and whether the chain ends with the gateway's closing checkpoint. Exit 0 intact, 1 tampered, 2 usage."},
		"sandbox": {"termgate sandbox check\n  termgate sandbox run [--profile P] [--policy-dir D] [--exec-gate MODE] -- CMD...",
			"check says what this kernel can enforce (Landlock ABI, seccomp, cgroups, the exec gate);\n" +
				"run runs one command confined exactly as a session would be, every program it starts judged\n" +
				"by the policy (--exec-gate enforce, the default; audit; off); what it refuses is said on stderr."},
		"version": {"termgate version",
			"Print the version, the commit and its date, and the versions of what is built in: OPA, gitleaks' rules, libseccomp."},
		"help": {"termgate help [COMMAND]", "Describe termgate, or one command."},
	}
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// helpMain prints the description of a command and its flags.
func helpMain(cmd string, stdout io.Writer, getenv func(string) string) int {
	c, ok := commands()[cmd]
	if !ok {
		fmt.Fprintf(stdout, "termgate: no command %q\n\n%s", cmd, usage)
		return 2
	}
	fmt.Fprintf(stdout, "usage:\n  %s\n\n%s\n", c.synopsis, c.text)
	var flags bytes.Buffer
	switch cmd {
	case "serve":
		fs := flag.NewFlagSet("termgate serve", flag.ContinueOnError)
		cfg := defaultConfig()
		cfg.flags(fs)
		fs.SetOutput(&flags)
		fs.PrintDefaults()
	case "policy":
		policyMain([]string{"eval", "-h"}, strings.NewReader(""), io.Discard, &flags, getenv)
		policyMain([]string{"test", "-h"}, strings.NewReader(""), io.Discard, io.Discard, getenv)
	case "redact":
		redactMain([]string{"-h"}, strings.NewReader(""), io.Discard, &flags, getenv)
	case "audit":
		auditMain([]string{"verify", "-h"}, io.Discard, &flags, getenv)
	case "sandbox":
		sandboxMain([]string{"run", "-h"}, strings.NewReader(""), io.Discard, &flags, getenv)
	}
	if flags.Len() > 0 {
		fmt.Fprint(stdout, "\nflags:\n")
		for _, l := range strings.SplitAfter(flags.String(), "\n") {
			if !strings.HasPrefix(l, "Usage of ") {
				fmt.Fprint(stdout, l)
			}
		}
	}
	if cmd == "serve" {
		fmt.Fprint(stdout, "\nEvery flag has a TERMGATE_* environment twin (--max-sessions: TERMGATE_MAX_SESSIONS).\n")
	}
	return 0
}

// versionText is what `termgate version` prints: what this binary is and
// what it embeds, from the build information Go records.
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "termgate %s\n", version())
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b.String()
	}
	setting := func(k string) string {
		for _, s := range bi.Settings {
			if s.Key == k {
				return s.Value
			}
		}
		return ""
	}
	dep := func(path string) string {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version + " (replaced)"
				}
				return d.Version
			}
		}
		return "unknown"
	}
	commit := setting("vcs.revision")
	if commit == "" {
		commit = "unknown (no VCS stamp: built outside a git clone, or with -buildvcs=false)"
	} else if setting("vcs.modified") == "true" {
		commit += " (with uncommitted changes)"
	}
	date := setting("vcs.time")
	if date == "" {
		date = "unknown"
	}
	cgo := "cgo " + map[bool]string{true: "on", false: "off"}[setting("CGO_ENABLED") == "1"]
	lib := "unknown"
	if ma, mi, mc := seccomp.GetLibraryVersion(); ma > 0 {
		lib = fmt.Sprintf("%d.%d.%d", ma, mi, mc)
	}
	fmt.Fprintf(&b, "  commit:          %s\n", commit)
	fmt.Fprintf(&b, "  commit date:     %s (the build date of a reproducible build)\n", date)
	fmt.Fprintf(&b, "  go:              %s %s/%s, %s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH, cgo)
	fmt.Fprintf(&b, "  opa:             %s (github.com/open-policy-agent/opa)\n", dep("github.com/open-policy-agent/opa"))
	fmt.Fprintf(&b, "  gitleaks rules:  %s (github.com/zricethezav/gitleaks/v8)\n", dep("github.com/zricethezav/gitleaks/v8"))
	fmt.Fprintf(&b, "  libseccomp:      %s\n", lib)
	return b.String()
}
