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
	"syscall"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// sandboxMain is `termgate sandbox check` and `termgate sandbox run`.
func sandboxMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] != "check" && args[0] != "run" {
		fmt.Fprint(stderr, "usage: termgate sandbox check | termgate sandbox run [--profile P] [--policy-dir D] [--sandbox MODE] [--session-user U] -- CMD...\n")
		return 2
	}
	if args[0] == "check" {
		s := sandbox.Probe()
		fmt.Fprint(stdout, s.Report())
		if s.LandlockABI < sandbox.MinABI || s.SeccompAPI == 0 {
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
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
	spec := l.spec
	tmp, err := os.MkdirTemp("", sandbox.TempPattern("run"))
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	spec.Argv, spec.Dir = append([]string{path}, argv[1:]...), dir.Path
	spec.Env = l.env
	_, cg, err := spec.Attach(fmt.Sprintf("run-%d", os.Getpid()), tmp)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	if cg != nil {
		defer func() { _ = cg.Kill(); _ = cg.Remove() }()
	}
	cmd := exec.Command(path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	launch, err := sandbox.Prepare(cmd, *spec)
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	if err := launch.Started(cmd); err != nil {
		_ = cmd.Wait()
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 126
	}
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
