// Package policy judges every input before it reaches a terminal, with a
// Rego policy bundle evaluated by OPA.
//
// # Contract
//
// The engine evaluates the query data.termgate.decision with this input
// document:
//
//	{
//	  "action":  "start | input | keys | exec",
//	  "text":    "the line that will run",
//	  "program": "bash",                       // the terminal's foreground program
//	  "program_listed": ["interpreters"],      // the lists that hold the program
//	  "text_listed": ["metadata_substrings"],  // the lists that hold the text
//	  "shell":   {"commands": [{"name": "rm", "args": ["-rf", "/"], "path": "/bin/rm", "wrappers": ["sudo"],
//	               "dynamic": true, "redirects": [{"op": ">", "target": "/etc/x"}], "assigns": [],
//	               "flags": ["f", "r"], "operands": ["/"]}],
//	              "pipes": true, "pipe_to_interpreter": true, "decode_to_interpreter": true,
//	              "substitutions": true, "process_substitution": true, "eval": true,
//	              "background": true, "recursive_functions": [], "normalized": true,
//	              "parse_error": "…", "incomplete": true, "embedded": true,
//	              "names": ["rm"], "listed": ["delete_commands"],
//	              "words_listed": ["write_redirects"], "dynamic": true},
//	  "secret":  true,                         // typed with echo off: text is withheld
//	  "session": {"id": "…", "name": "…", "argv": ["bash"], "cwd": "…", "profile": "default"},
//	  "start":   {"argv": ["…"], "cwd": "…", "env": ["NAME", …]},
//	  "client":  {"name": "…", "version": "…"},
//	  "cwd":     "/home/dev/project",          // the foreground program's current directory
//	  "gateway": {"paths": ["/var/log/termgate/audit.jsonl*", "/etc/termgate/audit.key", …],
//	              "home": "/home/dev"}
//	}
//
// and, in each command and the shell (derived, see below):
//
//	command:   "cwd": "/", "paths": ["/usr"]    // rm -rf usr after cd /
//	redirect:  "path": "/etc/passwd"            // > passwd, in /etc
//	shell:     "hosts": ["169.254.169.254"], "gateway_refs": ["/var/log/termgate/audit.jsonl"]
//
// cwd is where the terminal's foreground program is now (the gateway
// reads /proc/PID/cwd of the terminal's foreground process group when it
// judges a line); session.cwd is only where the session started. Relative
// paths of a typed line are resolved against cwd, of a start or an exec
// against start.cwd. gateway names the gateway's own files at the paths
// it was configured with (audit log and its rotations, audit key,
// recordings, policy bundle, log file, state directory; a path written
// with a final * stands for every path that starts with it) and the home
// directory that ~ stands for. Both are filled by cmd/termgate; a caller
// of Decide may leave them out (nothing is then resolved, and no file is
// the gateway's).
//
// A flag (every boolean above) is present only when true, a command's path
// only when it was written with a slash, parse_error only when the line
// does not parse: absent reads as false in Rego, the document stays small,
// and a rule guarded by a flag is skipped by OPA's index when it is off.
//
// shell is filled when the program is a shell, and when code typed into a
// REPL hands a string to a shell (os.system, subprocess, child_process):
// then shell.embedded is true. The line is parsed with mvdan.cc/sh as
// bash reads it: its bytes as they are (a fullwidth ＃, ＂ or ＼ is a
// letter to bash, never a comment, quote or escape), quotes removed, $'…'
// decoded (\x, \u, \U, \NNN, \c), brace expansion applied ({rm,-rf,~}
// is three words; at most 64 words a word, beyond that the word is judged
// as written), an unquoted $IFS or ${IFS…} splitting the word. Names and
// arguments are then folded for comparison only (NFKC: ｒｍ is rm;
// zero-width characters removed), and shell.normalized says so.
//
// What a command runs is followed: sh -c and eval strings; find's -exec,
// -execdir, -ok (an rm it runs is rm -r: find walks the tree; {} is the
// start path, or START/{} when a test such as -name narrows what matches)
// and -delete (an rm -r of the start path, or of START/{}); env (its
// NAME=value words, -S); busybox; and the runners of
// data.termgate.runners (sudo, nice, timeout, chrt, taskset, systemd-run,
// ssh HOST CMD, watch, at, npm exec, uv run, poetry run…: their options,
// skipped arguments and subcommands as the data says). The command line in
// an option's value (data.termgate.command_options: tar
// --checkpoint-action=exec=…, ssh -o ProxyCommand=…, git -c alias.x=!…,
// rsync -e…), in a variable some program runs (lists.command_env:
// GIT_PAGER, LESSOPEN, EDITOR…, by assignment or env), in git config's
// command keys, in sed's e and awk's system("…"), in vim's -c '!…' and in
// the literal of a one-liner's system("…"), callCommand "…", run(`…`) is
// parsed and judged as a line of its own; its commands name the program in
// wrappers. A sed e or an awk system() whose command is built at run time
// is a command named "$(computed at run time)". The file an option writes
// (data.termgate.write_options: curl -o F, wget -O F, sort -o F, find
// -fprint F; sed's w F) is a redirection ">" to F of that command. A cd
// (or pushd) with a literal directory moves the commands after it (not
// those of a subshell, a substitution or another pipeline stage): each
// command's cwd.
//
// Every statement of the line reaches shell.commands, wherever it stands:
// in substitutions, pipelines, lists, blocks, subshells, if/for/while/case,
// function bodies, array assignments and indexes (a[$(…)]=1, a=($(…))),
// parameter expansions, tests, arithmetic, here-documents that expand, and
// strings handed to sh -c or eval (normalised as a typed line is). A
// statement with no command name is a command whose name is "" (so ""
// is then in shell.names), holding the statement's assignments and
// redirections (empty lists left out here):
//
//	> /etc/passwd        {"name": "", "redirects": [{"op": ">", "target": "/etc/passwd"}]}
//	x=1 > f              {"name": "", "redirects": [{"op": ">", "target": "f"}], "assigns": ["x"]}
//	x=$(< f)             {"name": "", "redirects": [{"op": "<", "target": "f"}]} and {"name": "", "assigns": ["x"]}
//	{ a; } >> f          {"name": "a", …} and {"name": "", "redirects": [{"op": ">>", "target": "f"}]}
//
// so every rule on redirects (file.sensitive_write, disk.raw_write,
// file.secret_read) judges them as the writes and reads they are, and no
// rule matches a name on them. The redirections of a compound command
// (a block, subshell, loop, if or case) are such a command too. A
// declaration (declare, local, export, readonly, typeset) is a command of
// that name: the names it assigns in assigns, its options and bare names
// in args. A here-document's target is "<<heredoc>>"; `>& file`, whose
// target is not a descriptor, is recorded as `&> file`, which is what
// bash does with it. A here-string or here-document fed to the standard
// input of a shell or an interpreter that reads its code there (bash <<<
// '…', python3 <<EOF, . /dev/stdin <<<) sets pipe_to_interpreter, as a
// pipe into it does, and its body is judged as the code it is: a shell
// line's commands join shell.commands, and so do those that code for
// another interpreter hands to a shell. A node kind of mvdan.cc/sh the
// analysis does not know makes parse_error say so: the line is not judged
// blind.
//
// A list of data.termgate.lists holds its entries; when its name ends in
// _prefixes, every string that starts with one of them; when it ends in
// _substrings, every string that contains one, ignoring case.
//
// program_listed (the lists of data.termgate.lists that hold the program),
// text_listed (the lists that hold the text),
// shell.names (the commands' names), shell.listed (the lists of
// data.termgate.lists that hold one of those names), shell.words_listed
// (the lists that hold one of the commands' other words: an argument, a
// redirection's operator or target, an assigned variable's name),
// shell.dynamic (some command is dynamic) and each command's flags (option
// letters of every cluster, -rf → r and f; long options without their
// value) and operands (the other arguments, all of them after "--") are
// derived by the engine on every decision, whatever the caller sent; so
// are each command's paths (its operands resolved lexically against its
// cwd, ~/… under the home directory; a path with a trailing slash that is
// a symbolic link, as its target; an operand that cannot be resolved
// stays itself), each redirection's path (its target resolved likewise,
// when that differs), shell.hosts (the canonical host of each URL in an
// argument, of a network client's bare host arguments and of /dev/tcp
// redirections: every spelling of an IPv4 address, decimal, hex, octal,
// mixed, IPv4-mapped IPv6, read as dotted decimal; names lower-cased;
// never a URL's path, an echo's argument or a comment) and
// shell.gateway_refs (the resolved paths that are, or lie under, one of
// gateway.paths). shell.words_listed also holds the lists that hold a
// resolved path or a host. A
// list a caller's shell leaves null (commands, args, redirects…) is read
// as empty. Decide never panics: a parse error is a decision, and should a
// bug still panic inside it, the input is denied with an error.
//
// A decision's cost is mostly the rule bodies OPA evaluates, so every rule
// body of the default bundle starts with a guard OPA's rule index can use:
// "<list>" in input.program_listed, "<list>" in input.text_listed,
// "<cmd>" in input.shell.names, "<list>" in input.shell.listed,
// "<list>" in input.shell.words_listed, or a flag (input.shell.pipes).
// (The derived sets are sorted lists, without duplicates: OPA indexes
// "x" in input.shell.names as membership of one reference, so one lookup
// serves every rule guarded on the names, where an object key per command
// was a reference of its own to resolve.) Rules test c.flags and
// c.operands rather than parse c.args with regexes. A bundle's own tests
// must fill all derived fields (the c and sh helpers in helpers_test.rego
// do; TestDerivedArgs and TestDerivedShell keep them in step).
//
// The decision is an object:
//
//	{"action": "allow | deny | confirm", "rule": "id", "reason": "…",
//	 "severity": "low | medium | high | critical", "profile": "…"}
//
// An undefined decision, an evaluation error, or an action other than
// those three is a deny: the engine fails closed.
//
// # Bundles
//
// A bundle is a directory or an OPA bundle (.tar.gz) of Rego files and
// data.json files; the default bundle is embedded (package policies).
// *_test.rego files are loaded by `termgate policy test` and `opa test`,
// never by the engine. The engine compiles with restricted capabilities (no
// http.send, net.*, opa.runtime or other builtins that reach outside the
// process) in strict mode, prepares the query once, and can watch a
// directory and swap in a new bundle when it changes: a bundle that fails
// to load is rejected and the last good one stays in force.
//
// # Bundles for a fleet
//
// A bundle can come from a bundle server, as an OPA agent pulls one
// (Remote): an OPA configuration with services, one bundle and keys
// (ParseRemote), or a bundle's URL alone (RemoteURL). OPA's packages do
// the work: plugins/rest (bearer token or token file, client
// certificate, a CA for the server), download (If-None-Match with the
// ETag in force, long polling where the server offers it, OPA's backoff)
// and bundle (reading, signature verification). A bundle that fails to
// download, read, verify or compile is rejected and the last good one
// stays in force; Watch reports each rejection. The last good bundle is
// kept on disk with its ETag, and a restart that cannot reach the server
// starts from it (verified again); with neither, New fails.
//
// Source.Verify (Verification: OPA's --verification-key, key id, signing
// algorithm, scope) makes signatures mandatory for every bundle read from
// a directory, a .tar.gz or a server: an unsigned bundle, a tampered one
// and one signed with another key are refused. Without it a signed bundle
// is refused too, since its signature cannot be checked. Departing from
// OPA: keys configured without a signing block do not let unsigned
// bundles through.
//
// Every decision names the bundle that made it (Decision.Bundle: source,
// revision, hash) and carries the input document the engine built
// (Decision.Input): with the bundle, `opa eval -d BUNDLE -i input.json
// data.termgate.decision` replays it. Explain adds the rules that matched
// (data.termgate.finding). A .tar.gz bundle's hash is the file's sha256,
// what `sha256sum` prints for the artifact a fleet publishes.
package policy
