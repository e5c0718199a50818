package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/termgate/termgate/policies"
	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

func policySource(dir string) policy.Source {
	if dir == "" {
		return policy.Source{FS: policies.FS}
	}
	return policy.Source{Dir: dir}
}

const usage = `termgate: an MCP server for persistent, interactive terminal sessions, and a security gateway

usage: termgate [COMMAND] [flags]

commands:
  serve      serve MCP over stdio (the default): sessions judged by the policy, confined, redacted, audited
  policy     eval: the decision for an input (--explain: the input document and the rules that matched);
             test: the bundle's Rego tests
  redact     mask secrets: stdin to stdout, with the gateway's rules
  audit      verify: check an audit log's chain
  sandbox    check: what this kernel can enforce; run: one command confined as a session would be
  version    the version, commit, build date, and the OPA, gitleaks rules and libseccomp built in
  help       this text; "termgate help COMMAND" or "termgate COMMAND --help" describes a command and its flags

Every flag has a TERMGATE_* environment twin (--max-sessions: TERMGATE_MAX_SESSIONS).
`

// run is the whole program; main only passes it the process's parts.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd := "serve"
	if len(args) > 0 && (args[0] == "" || args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	// CMD --help, and CMD SUB --help for the commands with subcommands.
	if _, known := commands()[cmd]; known && cmd != "help" && len(args) > 0 &&
		(isHelpFlag(args[0]) || len(args) > 1 && isHelpFlag(args[1]) && (cmd == "policy" || cmd == "audit" || cmd == "sandbox")) {
		return helpMain(cmd, stdout, getenv)
	}
	switch cmd {
	case "serve":
		return serveMain(args, stdin, stdout, stderr, getenv)
	case "policy":
		return policyMain(args, stdin, stdout, stderr, getenv)
	case "redact":
		return redactMain(args, stdin, stdout, stderr, getenv)
	case "audit":
		return auditMain(args, stdout, stderr, getenv)
	case "sandbox":
		return sandboxMain(args, stdin, stdout, stderr, getenv)
	case "version":
		fmt.Fprint(stdout, versionText())
		return 0
	case "help":
		if len(args) > 0 {
			return helpMain(args[0], stdout, getenv)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "termgate: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, rest, err := parseConfig("termgate serve", args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 2
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "termgate: unexpected arguments %q\n", rest)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, stdin, stdout, stderr, getenv); err != nil {
		fmt.Fprintf(stderr, "termgate: %v\n", err)
		return 1
	}
	return 0
}

// serve runs the MCP server until the client disconnects (stdin EOF) or ctx
// ends (SIGINT, SIGTERM), then closes every session so that no process of
// any session outlives the server.
func serve(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	logw, closeLog, err := cfg.logOutput(stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))

	gw, auditor, engine, err := assemble(ctx, cfg, logger, getenv)
	if err != nil {
		return err
	}
	stages := gw.stages
	// Sessions must not read this process's memory or environment.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_DUMPABLE: %w", err)
	}
	bg := context.Background()
	// What gateways killed before they could close their sessions left
	// behind (private directories, cgroups, processes in them) goes now;
	// only what is tagged with a gateway process that is gone.
	startFields := map[string]any{}
	sw, err := sandbox.Sweep()
	if err != nil {
		logger.Error("sweeping what dead gateways left", "err", err)
	}
	if len(sw.Dirs)+len(sw.Cgroups)+sw.Processes > 0 {
		logger.Warn("removed what dead gateways left behind", "directories", len(sw.Dirs), "cgroups", len(sw.Cgroups), "processes_killed", sw.Processes)
		startFields["termgate.sweep.directories"] = len(sw.Dirs)
		startFields["termgate.sweep.cgroups"] = len(sw.Cgroups)
		startFields["termgate.sweep.processes"] = sw.Processes
	}
	if err := stages.record(bg, AuditEvent{Kind: KindServerStart, Fields: startFields}); err != nil {
		return err
	}
	if err := stages.record(bg, AuditEvent{Kind: KindPolicyLoad}); err != nil {
		return err
	}
	defer func() {
		if auditor == nil {
			return
		}
		_ = stages.record(bg, AuditEvent{Kind: KindServerStop})
		if err := auditor.close(); err != nil {
			logger.Error("closing the audit log", "err", err)
		}
	}()
	defer gw.shutdown()
	srv := gw.server()

	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if cfg.PolicyReload <= 0 {
			return
		}
		engine.Watch(watchCtx, cfg.PolicyReload, func(b *policy.Bundle, err error) {
			if err != nil {
				logger.Error("policy reload rejected; the last good bundle stays in force", "err", err, "revision", engine.Bundle().Revision)
				_ = stages.record(bg, AuditEvent{Kind: KindPolicyReload, Err: err.Error()})
				return
			}
			logger.Info("policy reloaded", "source", b.Source, "revision", b.Revision, "hash", b.Hash)
			_ = stages.record(bg, AuditEvent{Kind: KindPolicyReload})
		})
	}()
	defer func() { stopWatch(); <-watched }()

	logger.Info("termgate serving on stdio", "version", version(), "stages", gw.stages.describe())
	tr := &lineTransport{in: stdin, out: stdout, maxLine: maxMessage(cfg.MaxInput), maxInput: cfg.MaxInput, log: logger}
	err = srv.Run(ctx, protocolTransport{Transport: tr, log: logger, dropped: gw.droppedResult})
	switch {
	case err == nil, errors.Is(err, io.EOF):
		logger.Info("client disconnected; closing sessions")
	case ctx.Err() != nil:
		logger.Info("signal received; closing sessions")
	default:
		logger.Error("server stopped", "err", err)
	}
	if serr := gw.shutdown(); serr != nil {
		logger.Error("closing sessions", "err", serr)
	}
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return err
	}
	return nil
}

// assemble builds the gateway from the configuration: the policy engine,
// confirmation, redaction and the audit log (nil with --audit-log=off).
// serve runs it over stdio; tests wire the same gateway to in-memory
// transports.
func assemble(ctx context.Context, cfg Config, logger *slog.Logger, getenv func(string) string) (*gateway, *ecsAuditor, *policy.Engine, error) {
	src, err := cfg.policySourceFor(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	src.Validate = validateBundle(getenv)
	engine, err := policy.New(ctx, src)
	if err != nil {
		return nil, nil, nil, err
	}
	b := engine.Bundle()
	logger.Info("policy loaded", "source", b.Source, "revision", b.Revision, "hash", b.Hash, "signed", b.Signed, "from_cache", b.Cached)
	if b.Cached {
		logger.Warn("the bundle server was not reached at start: the cached bundle is in force until it is", "source", b.Source, "revision", b.Revision)
	}
	confirmer, err := newHumanConfirmer(cfg.ConfirmTTL)
	if err != nil {
		return nil, nil, nil, err
	}
	confirmer.agentMode = cfg.ConfirmMode == "agent"
	if confirmer.agentMode {
		logger.Warn("--confirm-mode=agent: the agent may confirm, with a written justification, what a human would be asked")
	}
	specs, err := bundleSecrets(b)
	if err != nil {
		return nil, nil, nil, err
	}
	secrets, err := loadSecrets(append(specs, cfg.Secrets...), getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	redactor, err := newRedactor(b, secrets)
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info("redaction ready", "rules", redactor.Rules(), "secrets_held", len(secrets))
	confirmer.redact = redactor.Redact
	stages := Stages{Decider: engineDecider{e: engine, gateway: policyGateway(cfg, getenv)}, Confirmer: confirmer, Redactor: redactor}
	var auditor *ecsAuditor
	if cfg.AuditLog != "off" {
		auditor, err = newAuditor(cfg, redactor, engine, logger, getenv)
		if err != nil {
			return nil, nil, nil, err
		}
		stages.Auditor = auditor
		logger.Info("audit log", "path", auditor.log.Path())
	} else {
		logger.Warn("the audit log is off (--audit-log=off): nothing is recorded")
	}
	gw := newGateway(cfg, logger, stages)
	if auditor != nil {
		auditor.taints = gw.taintOf
	}
	gw.redactor, gw.secrets, gw.policy, gw.getenv = redactor, secrets, engine, getenv
	gw.confirmer = confirmer
	gw.protected = protectedPaths(cfg, getenv)
	gw.env = sessionEnv(gw.env, append(specs, cfg.Secrets...))
	gw.gate = newExecGate(gw, cfg.ExecGate) // the exec gate (execgate.go)
	gw.stages.Judged = func(in GateInput, d Decision) {
		gw.gate.judged(in, d)
		gw.teachHidden(in, d)
	}
	gw.stages.ExecGate = cfg.ExecGate
	hosts, err := readEgressHosts(cfg.EgressHosts)
	if err != nil {
		return nil, nil, nil, err
	}
	if gw.egress, err = newEgressGate(gw, hosts); err != nil {
		return nil, nil, nil, err
	}
	gw.landlock = newLandlockGate(gw)
	return gw, auditor, engine, nil
}

// gateway holds the server's parts: the session manager, the pipeline
// stages and the configuration. Handlers are its methods.
type gateway struct {
	cfg    Config
	log    *slog.Logger
	mgr    *session.Manager
	stages Stages
	env    []string // the environment sessions start from

	redactor  *redact.Engine    // masks output at the source, in every session
	secrets   map[string]string // the secrets session_send can type by name
	policy    *policy.Engine    // its bundle holds the sandbox profiles
	getenv    func(string) string
	protected []string // the gateway's own files: no session reaches them
	confirmer *humanConfirmer
	gate      *execGate     // the exec gate; nil with --exec-gate=off
	egress    *egressGate   // the egress proxy's judge; nil: no proxy sessions
	landlock  *landlockGate // Landlock's denials read from the kernel's audit (landlockrefused.go); nil: inferred only

	// ends counts the watchers that record each session's end.
	ends sync.WaitGroup
	// recordings holds each recorded session's tap, by session id.
	recordings sync.Map

	// unfinished holds, per session, the text its next input continues
	// (a shell command left unfinished, pipe-mode text without Enter):
	// each continuation is judged with it.
	unfinishedMu sync.Mutex
	unfinished   map[string]string
	// profiles holds each session's sandbox profile, by id, for the
	// policy input (session.profile).
	profiles sync.Map
	// unjudged holds, per session, the lines its shell refused for want
	// of a ticket, for its next result (unjudged.go).
	unjudged unjudgedNotes

	// testOnlyPanic, when a test sets it, is called at points on a
	// request's path ("tool NAME", "resource URI") and may panic there.
	testOnlyPanic func(where string)
}

func newGateway(cfg Config, logger *slog.Logger, stages Stages) *gateway {
	if stages.Log == nil {
		stages.Log = logger
	}
	g := &gateway{cfg: cfg, log: logger, stages: stages, env: os.Environ(), unfinished: map[string]string{}}
	g.mgr = session.NewManager(cfg.limits(), func(s *session.Session) {
		logger.Info("closed idle session", "session", s.ID(), "idle_timeout", cfg.IdleTimeout)
	})
	g.mgr.OnPanic(func(id, where string, v any, stack []byte) {
		logger.Error("a session goroutine panicked; the session was ended", "session", id, "where", where, "panic", fmt.Sprint(v), "stack", string(stack))
		ev := AuditEvent{Kind: KindToolError, Err: "internal error in the session's " + where + " (the server log has the stack); the session was ended", Input: GateInput{Session: &GateRef{ID: id}}}
		if err := g.stages.record(context.Background(), ev); err != nil {
			logger.Error("audit: recording a session's internal error", "session", id, "err", err)
		}
	})
	// What the gateway keeps per session goes when the manager lets the
	// session go.
	g.mgr.OnForget(func(id string) {
		g.recordings.Delete(id)
		g.profiles.Delete(id)
		g.unfinishedMu.Lock()
		delete(g.unfinished, id)
		g.unfinishedMu.Unlock()
		g.forgetUnjudged(id)
	})
	return g
}

// shutdown closes every session and waits for their end to be recorded;
// it is safe to call more than once.
func (g *gateway) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := g.mgr.Shutdown(ctx)
	g.ends.Wait()
	g.gate.stop() // every session's execs are recorded
	g.landlock.close()
	if g.egress != nil {
		g.egress.close() // every session's proxy is gone with its session; this is the rest
	}
	sandbox.ReleaseOwner()
	return err
}

func (g *gateway) server() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "termgate", Title: "termgate terminal gateway", Version: version()}, &mcp.ServerOptions{
		Logger:       g.log,
		Instructions: serverInstructions,
	})
	for _, t := range g.tools() {
		t.register(srv)
	}
	g.addResources(srv)
	g.addTestHooks(srv)
	srv.AddReceivingMiddleware(g.middleware)
	return srv
}

const serverInstructions = `termgate runs persistent terminal sessions. Start one with session_start (default: bash), ` +
	`then session_send a line: the call returns when the command finishes (with its exit code in bash and zsh), ` +
	`when a REPL shows its prompt again, or when wait_for matches. Use session_keys for ctrl+c, arrows and other keys, ` +
	`session_read to see new output, the screen of a full-screen program (vim, top, less) or the scrollback. ` +
	`A result with complete:false means the command is still running: call session_read with timeout_ms to wait for more. ` +
	`Close sessions you no longer need with session_close.`
