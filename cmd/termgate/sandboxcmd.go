package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// sandboxMain is `termgate sandbox check` and `termgate sandbox run`.
func sandboxMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] != "check" && args[0] != "run" {
		fmt.Fprint(stderr, "usage: termgate sandbox check | termgate sandbox run [--profile P] [--policy-dir D] [--sandbox MODE] [--exec-gate MODE] [--session-user U] -- CMD...\n")
		return 2
	}
	if args[0] == "check" {
		s := sandbox.Probe()
		fmt.Fprint(stdout, s.Report())
		if s.LandlockABI < sandbox.MinABI || s.SeccompAPI == 0 || s.ExecNotify != nil {
			fmt.Fprintln(stdout, "this kernel cannot confine sessions fully: termgate refuses them unless --sandbox=best-effort")
			return 1
		}
		fmt.Fprintln(stdout, "sessions can be confined")
		return 0
	}
	fs := flag.NewFlagSet("termgate sandbox run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultConfig()
	profile := fs.String("profile", "default", "the bundle's sandbox profile")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", getenv("TERMGATE_POLICY_DIR"), "policy bundle (default: the embedded bundle)")
	fs.StringVar(&cfg.Sandbox, "sandbox", "enforce", "enforce or best-effort")
	fs.StringVar(&cfg.SessionUser, "session-user", "", "run as this user")
	gateMode := fs.String("exec-gate", "enforce", "judge every program the command runs: enforce, audit (record, refuse nothing) or off")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *gateMode != "enforce" && *gateMode != "audit" && *gateMode != "off" {
		fmt.Fprintf(stderr, "termgate: --exec-gate must be enforce, audit or off, not %q\n", *gateMode)
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "termgate sandbox run: name a command after --")
		return 2
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 127
	}
	engine, err := policy.New(context.Background(), policySource(cfg.PolicyDir))
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	// The human's own directory, checked as a session's is (resolved,
	// never /, the home, or the kernel's files), without session roots.
	home := getenv("HOME")
	rules, err := sessionRoots(nil, cwd, home)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	rules.anyRoot = true
	rules.protected = protectedPaths(cfg, getenv)
	dir, err := checkCwd("", cwd, rules)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	g := &gateway{cfg: cfg, getenv: getenv, protected: protectedPaths(cfg, getenv), env: sessionEnv(os.Environ(), nil),
		policy: engine, stages: Stages{Decider: engineDecider{e: engine, gateway: policyGateway(cfg, getenv)}}, log: slog.New(slog.NewTextHandler(stderr, nil))}
	// A proxy profile's destinations are judged by the policy; no human
	// is asked, and each refusal is said on stderr.
	if g.egress, err = newEgressGate(g, nil); err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	defer g.egress.close()
	g.egress.noHuman = "termgate sandbox run asks no human: allow the destination in the policy"
	g.egress.notify = func(r Refusal) { fmt.Fprintf(stderr, "termgate: sandbox refused %s\n", r) }
	l, err := g.prepareLaunch(engine.Bundle(), *profile, dir, argv)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	defer g.egress.end(l.egress)
	if l.spec == nil {
		fmt.Fprintln(stderr, "termgate: sandbox run confines; --sandbox=off is not for it")
		return 2
	}
	spec := *l.spec
	spec.Argv, spec.Dir = append([]string{path}, argv[1:]...), dir.Path
	spec.Env = l.env
	cmd := exec.Command(path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o := sandbox.Options{Name: fmt.Sprintf("run-%d", os.Getpid()), TmpKind: "run"}
	if *gateMode != "off" {
		o.Judge, o.GateMode = runJudge(engine, policyGateway(cfg, getenv), *gateMode, home, stderr), *gateMode
		o.GateBestEffort = cfg.Sandbox == "best-effort" || *gateMode == "audit"
		o.Programs = sandbox.NewProgramIndex(append(sandbox.SystemProgramDirs(), filepath.SplitList(getenv("PATH"))...))
	} else {
		o.Refused = newRefusalTeller(stderr).tell // the calls seccomp refused, named without the gate
	}
	launch, err := sandbox.Start(cmd, spec, o, cmd.Start)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 126
	}
	defer launch.End()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	return 0
}

// runJudge judges the programs a `termgate sandbox run` command starts
// with the bundle's rules, as a session's are. There is no call to ask a
// human through (the command has the terminal): what the policy wants
// confirmed is refused. Each refusal is told on stderr.
func runJudge(engine *policy.Engine, gw policy.Gateway, mode, home string, stderr io.Writer) sandbox.ExecJudge {
	told := newRefusalTeller(stderr)
	return func(ctx context.Context, r *sandbox.ExecRequest) sandbox.ExecVerdict {
		if r.Refusal != nil {
			told.tell(r.Refusal) // a call seccomp refused, already answered
			return sandbox.ExecVerdict{}
		}
		if r.Launcher {
			return sandbox.ExecVerdict{Allow: true}
		}
		rule, reason := "exec.unreadable", ""
		if r.Unreadable != nil {
			reason = "the exec could not be read whole: " + r.Unreadable.Error()
		} else {
			d, err := engine.Decide(ctx, policy.Input{Action: "exec", Program: r.Program, Exec: &policy.Exec{
				Argv: r.Argv, Path: r.Executable, Cwd: r.Cwd, Parents: r.Parents, IdentifiedBy: r.IdentifiedBy, Home: home}, Gateway: &gw})
			switch {
			case err == nil && d.Action == "allow":
				return sandbox.ExecVerdict{Allow: true}
			case err != nil:
				rule, reason = "policy.error", err.Error()
			case d.Action == "confirm":
				rule, reason = d.Rule, d.Reason+" (needs a human's confirmation, which sandbox run cannot ask)"
			default:
				rule, reason = d.Rule, d.Reason
			}
		}
		if mode == "audit" {
			fmt.Fprintf(stderr, "termgate: exec would be refused (--exec-gate=audit): %s by %s: %s\n", policy.QuoteArgv(r.Argv), rule, reason)
			return sandbox.ExecVerdict{Allow: true}
		}
		fmt.Fprintf(stderr, "termgate: exec refused: %s (%s) by %s: %s\n", r.Program, policy.QuoteArgv(r.Argv), rule, reason)
		return sandbox.ExecVerdict{}
	}
}
