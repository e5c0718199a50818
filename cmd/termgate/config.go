package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/termgate/termgate/session"
)

// Config is everything the server is told at start. Every flag has a
// TERMGATE_* environment twin (--max-sessions ⇔ TERMGATE_MAX_SESSIONS); a
// flag given on the command line wins over its twin.
type Config struct {
	Shell          string        // program for session_start without a command
	MaxSessions    int           // live sessions at once
	IdleTimeout    time.Duration // close a session after this long without input
	MaxOutput      int           // characters of output per result before head+tail capping
	MaxInput       int           // bytes one call may send
	Scrollback     int           // lines of history per session
	CloseGrace     time.Duration // between the steps of closing a session
	DefaultTimeout time.Duration // how long a send waits for completion by default
	MaxTimeout     time.Duration // the longest wait a call may ask for
	Quiet          time.Duration // last-resort quiet period
	ExecTimeout    time.Duration // wall-clock limit of the exec tool by default
	LogLevel       string
	LogFile        string
	PolicyDir      string        // bundle directory or .tar.gz; empty: the embedded default
	PolicyReload   time.Duration // how often to check the bundle for changes; 0: never
	ConfirmTTL     time.Duration // how long a human has to answer a confirmation
	Secrets        secretList    // NAME=env:VAR or NAME=file:PATH: secrets session_send types by name
	AuditLog       string        // the audit log; empty: $XDG_STATE_HOME/termgate/audit.jsonl; "off": none
	AuditKey       string        // the chain key file; empty: beside the default log
	AuditMaxSize   int64         // rotate the audit log past this many bytes
	AuditSync      time.Duration // fsync non-security records this often
	AuditSyslog    string        // also forward records: udp://h:p, tcp://h:p, tls://h:p, unix:///path
	AuditFail      string        // refuse (default) or continue when the audit log cannot be written
	RecordDir      string        // write an asciicast per session here
	Sandbox        string        // enforce (default), best-effort, off
	ConfirmMode    string        // human (default), agent
	SessionUser    string        // run sessions as this user
	ExecGate       string        // enforce (default), audit, off: judge every program a session runs
	EgressHosts    string        // hosts(5) file the egress proxy resolves names from before DNS

	PolicyURL         string // a bundle server: the bundle's URL (polled as OPA polls)
	PolicyConfig      string // a bundle server: an OPA configuration file (services, bundles, keys)
	PolicyTokenFile   string // --policy-url: a bearer token file, read for every request
	PolicyClientCert  string // --policy-url: a client certificate (PEM)
	PolicyClientKey   string // --policy-url: its key (PEM)
	PolicyCACert      string // --policy-url: the CA that signs the server's certificate
	PolicyCache       string // where the last good bundle from a server is kept
	VerificationKey   string // a PEM public key (or HMAC secret) file: bundles must be signed with it
	VerificationKeyID string // the key's id, as OPA's --verification-key-id
	VerificationAlg   string // as OPA's --signing-alg
	VerificationScope string // as OPA's --scope
	AuditSyslogCA     string // tls:// syslog: the CA that signs the collector's certificate
	AuditSyslogCert   string // tls:// syslog: the gateway's client certificate
	AuditSyslogKey    string // tls:// syslog: its key
	AuditSyslogBuffer int64  // bytes the on-disk syslog buffer may hold
	AuditSyslogSpool  string // the on-disk syslog buffer's directory
	AuditMaxRecord    int    // bytes one audit record may take
	// How much output a call may get, and how much history is kept for
	// session_read to page.
	MaxOutputCeiling int   // the largest max_output a call may ask for
	OutputLogMax     int64 // bytes of output history each session keeps on disk; 0: none
}

func defaultConfig() Config {
	l := session.DefaultLimits()
	return Config{
		Shell:          "bash",
		MaxSessions:    l.MaxSessions,
		IdleTimeout:    l.IdleTimeout,
		MaxOutput:      16000,
		MaxInput:       64 << 10,
		Scrollback:     l.Scrollback,
		CloseGrace:     l.CloseGrace,
		DefaultTimeout: 30 * time.Second,
		MaxTimeout:     10 * time.Minute,
		Quiet:          300 * time.Millisecond,
		ExecTimeout:    60 * time.Second,
		LogLevel:       "info",
		PolicyReload:   2 * time.Second,
		ConfirmTTL:     2 * time.Minute,
		AuditMaxSize:   100 << 20,
		AuditSync:      time.Second,
		AuditFail:      "refuse",
		Sandbox:        "enforce",
		ConfirmMode:    "human",
		ExecGate:       "enforce",

		VerificationKeyID: "default",
		VerificationAlg:   "RS256",
		AuditSyslogBuffer: 64 << 20,
		AuditMaxRecord:    7680,
		MaxOutputCeiling:  200000,
		OutputLogMax:      session.DefaultOutputLogMax,
	}
}

func (c *Config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Shell, "shell", c.Shell, "program a session runs when session_start names none")
	fs.IntVar(&c.MaxSessions, "max-sessions", c.MaxSessions, "live sessions at once")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close a session after this long without input (0: never)")
	fs.IntVar(&c.MaxOutput, "max-output", c.MaxOutput, "characters of output per result; longer output keeps its head and tail")
	fs.IntVar(&c.MaxInput, "max-input", c.MaxInput, "bytes one call may send to a terminal")
	fs.IntVar(&c.Scrollback, "scrollback", c.Scrollback, "lines of history kept per session")
	fs.DurationVar(&c.CloseGrace, "close-grace", c.CloseGrace, "wait between EOF, SIGHUP, SIGTERM and SIGKILL when closing a session")
	fs.DurationVar(&c.DefaultTimeout, "timeout", c.DefaultTimeout, "how long a send waits for its command to complete by default")
	fs.DurationVar(&c.MaxTimeout, "max-timeout", c.MaxTimeout, "the longest wait one call may ask for")
	fs.DurationVar(&c.Quiet, "quiet", c.Quiet, "quiet period that ends a wait when nothing better tells completion")
	fs.DurationVar(&c.ExecTimeout, "exec-timeout", c.ExecTimeout, "wall-clock limit of the exec tool by default")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFile, "log-file", c.LogFile, "write the server's log here (0600, appended) instead of stderr")
	fs.StringVar(&c.PolicyDir, "policy-dir", c.PolicyDir, "policy bundle: a directory or an OPA .tar.gz bundle (default: the embedded bundle)")
	fs.DurationVar(&c.ConfirmTTL, "confirm-timeout", c.ConfirmTTL, "how long a human has to answer a confirmation; unanswered is declined")
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, `audit log file (default $XDG_STATE_HOME/termgate/audit.jsonl; "off" writes none, and every result says so)`)
	fs.StringVar(&c.AuditKey, "audit-key", c.AuditKey, "the audit chain's key file, created 0600 when missing (default: audit.key beside the default log)")
	fs.Int64Var(&c.AuditMaxSize, "audit-max-size", c.AuditMaxSize, "rotate the audit log when it passes this many bytes (0: never)")
	fs.DurationVar(&c.AuditSync, "audit-sync", c.AuditSync, "fsync records that are not security events this often (security events: at once)")
	fs.StringVar(&c.AuditSyslog, "audit-syslog", c.AuditSyslog, "also forward every record as RFC 5424 syslog: udp://host:port, tcp://host:port, tls://host:port (RFC 5425) or unix:///dev/log")
	fs.StringVar(&c.AuditFail, "audit-fail", c.AuditFail, "when the audit log cannot be written: refuse the input (default) or continue unrecorded")
	fs.StringVar(&c.RecordDir, "record-dir", c.RecordDir, "record every session as an asciicast v2 file (0600) in this directory")
	fs.StringVar(&c.Sandbox, "sandbox", c.Sandbox, "confine sessions: enforce (refuse a session the kernel cannot confine), best-effort (run it degraded, and say so), off (unconfined, and say so)")
	fs.StringVar(&c.ConfirmMode, "confirm-mode", c.ConfirmMode, "who may confirm what the policy wants confirmed: human (through the MCP client; refused when it cannot ask) or agent (weaker: a client that cannot ask a human gets a one-time token the agent redeems with the confirm tool and a written justification)")
	fs.StringVar(&c.SessionUser, "session-user", c.SessionUser, "run sessions as this user (the gateway must be root)")
	fs.StringVar(&c.ExecGate, "exec-gate", c.ExecGate, "judge every program a session runs, held in the kernel until the policy decides: enforce (refuse what the policy refuses; a kernel that cannot hold execs refuses sessions unless --sandbox=best-effort), audit (judge and record, refuse nothing), off")
	fs.StringVar(&c.EgressHosts, "egress-hosts", c.EgressHosts, "a hosts(5) file: names the egress proxy resolves from it before DNS (an internal registry's address, say); the policy still judges each name and each address that is not public")
	fs.Var(&c.Secrets, "secret", "a secret the gateway holds, typed by session_send {secret_ref: NAME} and masked everywhere: NAME=env:VAR or NAME=file:PATH (repeatable; the env twin takes a comma-separated list)")
	fs.DurationVar(&c.PolicyReload, "policy-reload", c.PolicyReload, "check the policy bundle for changes this often and reload it (0: never)")
	fs.StringVar(&c.PolicyURL, "policy-url", c.PolicyURL, "pull the policy bundle from this URL (https://host/bundles/termgate.tar.gz), as an OPA agent does: ETag, long polling, last good bundle cached for offline restarts")
	fs.StringVar(&c.PolicyConfig, "policy-config", c.PolicyConfig, "pull the policy bundle as an OPA configuration file (YAML or JSON: services, one bundle, keys) says")
	fs.StringVar(&c.PolicyTokenFile, "policy-token-file", c.PolicyTokenFile, "--policy-url: send the bearer token in this file (read for every request; https only)")
	fs.StringVar(&c.PolicyClientCert, "policy-client-cert", c.PolicyClientCert, "--policy-url: authenticate with this client certificate (PEM)")
	fs.StringVar(&c.PolicyClientKey, "policy-client-key", c.PolicyClientKey, "--policy-url: the client certificate's key (PEM)")
	fs.StringVar(&c.PolicyCACert, "policy-ca-cert", c.PolicyCACert, "--policy-url: verify the server with this CA (PEM) instead of the system's")
	fs.StringVar(&c.PolicyCache, "policy-cache", c.PolicyCache, "keep the last good bundle from the server here (default $XDG_STATE_HOME/termgate/bundles)")
	fs.StringVar(&c.VerificationKey, "verification-key", c.VerificationKey, "bundles must be signed (opa build --signing-key): the PEM public key, or HMAC secret, file to verify them with; unsigned or tampered bundles are refused")
	fs.StringVar(&c.VerificationKeyID, "verification-key-id", c.VerificationKeyID, "the verification key's id (as OPA's --verification-key-id)")
	fs.StringVar(&c.VerificationAlg, "verification-alg", c.VerificationAlg, "the signing algorithm (as OPA's --signing-alg): RS256, ES256, HS256, …")
	fs.StringVar(&c.VerificationScope, "verification-scope", c.VerificationScope, "the scope a bundle's signature must carry (as OPA's --scope)")
	fs.StringVar(&c.AuditSyslogCA, "audit-syslog-ca", c.AuditSyslogCA, "tls:// syslog: verify the collector with this CA (PEM) instead of the system's")
	fs.StringVar(&c.AuditSyslogCert, "audit-syslog-cert", c.AuditSyslogCert, "tls:// syslog: present this client certificate (PEM)")
	fs.StringVar(&c.AuditSyslogKey, "audit-syslog-key", c.AuditSyslogKey, "tls:// syslog: the client certificate's key (PEM)")
	fs.Int64Var(&c.AuditSyslogBuffer, "audit-syslog-buffer", c.AuditSyslogBuffer, "bytes of records kept on disk while the collector is unreachable; past that, records are dropped and counted")
	fs.StringVar(&c.AuditSyslogSpool, "audit-syslog-spool", c.AuditSyslogSpool, "the directory of that buffer (default $XDG_STATE_HOME/termgate/syslog-buffer)")
	fs.IntVar(&c.AuditMaxRecord, "audit-max-record", c.AuditMaxRecord, "bytes one audit record may take; longer fields are cut with their length and sha256")
	fs.IntVar(&c.MaxOutputCeiling, "max-output-ceiling", c.MaxOutputCeiling, "the largest max_output a call may ask for (--max-output is the default)")
	fs.Int64Var(&c.OutputLogMax, "output-log-max", c.OutputLogMax, "bytes of output history each session keeps on disk for session_read mode log, the newest kept (0: none, only the scrollback)")
}

// envName is a flag's environment twin.
func envName(flagName string) string {
	return "TERMGATE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig reads the environment twins, then the command line.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (Config, []string, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return c, nil, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	return c, fs.Args(), c.validate()
}

func (c Config) validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	check(c.MaxSessions >= 1 && c.MaxSessions <= 4096, "--max-sessions must be 1 to 4096, not %d", c.MaxSessions)
	check(c.IdleTimeout >= 0, "--idle-timeout must not be negative")
	check(c.MaxOutput >= 200, "--max-output must be at least 200, not %d", c.MaxOutput)
	check(c.MaxInput >= 1 && c.MaxInput <= 16<<20, "--max-input must be 1 byte to 16 MiB, not %d", c.MaxInput)
	check(c.Scrollback >= 100 && c.Scrollback <= 1_000_000, "--scrollback must be 100 to 1000000 lines, not %d", c.Scrollback)
	check(c.CloseGrace > 0, "--close-grace must be positive")
	check(c.DefaultTimeout > 0 && c.DefaultTimeout <= c.MaxTimeout, "--timeout must be positive and at most --max-timeout")
	check(c.Quiet >= 10*time.Millisecond, "--quiet must be at least 10ms")
	check(c.ExecTimeout > 0, "--exec-timeout must be positive")
	check(c.Shell != "", "--shell must name a program")
	check(c.PolicyReload >= 0, "--policy-reload must not be negative")
	check(c.ConfirmTTL > 0, "--confirm-timeout must be positive")
	check(c.AuditFail == "refuse" || c.AuditFail == "continue", "--audit-fail must be refuse or continue, not %q", c.AuditFail)
	check(c.AuditSync > 0, "--audit-sync must be positive")
	check(c.ConfirmMode == "human" || c.ConfirmMode == "agent", "--confirm-mode must be human or agent, not %q", c.ConfirmMode)
	check(c.Sandbox == "enforce" || c.Sandbox == "best-effort" || c.Sandbox == "off", "--sandbox must be enforce, best-effort or off, not %q", c.Sandbox)
	check(c.ExecGate == "enforce" || c.ExecGate == "audit" || c.ExecGate == "off", "--exec-gate must be enforce, audit or off, not %q", c.ExecGate)
	check(c.AuditMaxSize >= 0, "--audit-max-size must not be negative")
	check(c.MaxOutputCeiling >= c.MaxOutput && c.MaxOutputCeiling <= 16<<20, "--max-output-ceiling must be at least --max-output (%d) and at most 16777216, not %d", c.MaxOutput, c.MaxOutputCeiling)
	check(c.OutputLogMax == 0 || c.OutputLogMax >= session.MinOutputLogMax && c.OutputLogMax <= 1<<40, "--output-log-max must be 0 (none) or %d bytes to 1 TiB, not %d", session.MinOutputLogMax, c.OutputLogMax)
	errs = append(errs, c.fleetErrors()...)
	return errors.Join(errs...)
}

func (c Config) limits() session.Limits {
	return session.Limits{
		MaxSessions: c.MaxSessions,
		IdleTimeout: c.IdleTimeout,
		CloseGrace:  c.CloseGrace,
		Scrollback:  c.Scrollback,
	}
}

// logOutput opens the log destination: stderr, or a file opened for
// appending with mode 0600 (stdout is the protocol and never carries logs).
func (c Config) logOutput(stderr io.Writer) (io.Writer, func() error, error) {
	if c.LogFile == "" {
		return stderr, func() error { return nil }, nil
	}
	f, err := os.OpenFile(c.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening log file: %w", err)
	}
	return f, f.Close, nil
}
