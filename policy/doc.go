// Package policy judges every input before it reaches a terminal, with a
// Rego policy bundle evaluated by OPA.
//
// # Contract
//
// The engine evaluates the query data.termgate.decision with this input
// document:
//
//	{
//	  "action":  "start | input | keys | exec | connect",
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
//	  "code":    {"languages": ["python"], "calls": [{"name": "shutil.rmtree", "args": ["~"], "dynamic": true}],
//	              "names": ["shutil.rmtree"], "modules": ["shutil"], "shell_commands": ["rm -rf /"],
//	              "writes": ["~/.bashrc"], "deletes": ["~"], "dynamic_calls": ["getattr(os, name)"],
//	              "dynamic": true, "dynamic_shell": true, "reverse_shell": true,
//	              "parse_error": "…", "incomplete": true, "listed": ["code_signal_calls"],
//	              "hosts": ["169.254.169.254"]},
//	  "sql":     {"dialect": "postgres", "statements": [{"text": "DROP TABLE t", "verb": "DROP",
//	              "object": "TABLE", "where": true, "classes": ["drop"]}],
//	              "classes": ["drop"], "incomplete": true},
//	  "secret":  true,                         // sent as secret or secret_ref: text is withheld
//	  "session": {"id": "…", "name": "…", "argv": ["bash"], "cwd": "…", "profile": "default",
//	              "confined": true},                // no capabilities, no_new_privs: sudo cannot work
//	  "start":   {"argv": ["…"], "cwd": "…", "env": ["NAME", …],
//	              "confined": true},                // the sandbox is on (unless the profile is unconfined)
//	  "exec":    {"argv": ["rm", "-rf", "/home/u"], "path": "/usr/bin/rm", "cwd": "…",
//	              "parents": ["bash", "python3.11"], "line": "…", "line_confirmed": true,
//	              "line_commands": [{"name": "rm", "args": ["-rf", "~"]}], "identified_by": "path"},
//	  "connect": {"host": "packages.example.com", "port": 443, "program": "python3.11", "via": "connect",
//	              "address": "…", "address_class": "public | loopback | private | link_local | …",
//	              "resolved": true},
//	  "client":  {"name": "…", "version": "…"},
//	  "terminal": {"reads_lines": true, "judged": true, "echo": true,
//	              "ahead": true, "readers": ["sleep", "bash"]},
//	  "cwd":     "/home/dev/project",          // the foreground program's current directory
//	  "gateway": {"paths": ["/var/log/termgate/audit.jsonl*", "/etc/termgate/audit.key", …],
//	              "home": "/home/dev"}
//	}
//
// and, in each command and the shell (derived, see below):
//
//	command:   "cwd": "/", "paths": ["/usr"]    // rm -rf usr after cd /
//	command:   "credentials": ["~/.ssh/id_rsa"] // the words that name credential files
//	command:   "listed": ["delete_commands"]    // the lists that hold its name
//	redirect:  "path": "/etc/passwd"            // > passwd, in /etc
//	shell:     "hosts": ["169.254.169.254"], "gateway_refs": ["/var/log/termgate/audit.jsonl"]
//	shell:     "path_facts": {"/usr": {"protected": true}, "~/.bashrc": {"sensitive": true}, "build": {}}
//	shell:     "write_targets": ["/etc/passwd", "passwd"] // cd /etc && echo x >> passwd
//	shell:     "modes": [["install", "4755"]]        // install -m4755 sh bin/sh
//	shell:     "list_commands": {"delete_commands": [1]}, "name_commands": {"cd": [0], "rm": [1]} // cd /; rm -rf usr
//
// The shell's list_commands give, for each list of its listed, the
// indexes in commands of the commands whose name the list holds, and
// name_commands, for each of its names, the indexes of the commands of
// that name. A rule about one list's commands iterates them (some i in
// input.shell.list_commands.delete_commands) instead of every command of
// the line, each asked about its lists: OPA evaluates each step of a rule
// body at a cost, and a line of five commands made every such rule take
// ten steps to find its one command. A document without list_commands is
// denied (policy.input_underived): it comes from an engine older than the
// bundle.
//
// A command's credentials are what the bundle's credential_words and
// credential(w) (classes.rego) find among its words, derived by the
// engine with the glob library OPA's glob.match uses: a list (possibly
// empty) on every command of a line whose words_listed holds
// credential_substrings, absent on the others; the rules compute them
// themselves for a document without them. They were the largest part of
// the evaluation of every line that names a credential file.
//
// The shell's path_facts say, for each operand of its commands (as written
// and resolved) and each redirection's target and path, whether the
// bundle's protected(p) and sensitive_path(p) (termgate.rego) hold: the
// rules read a word's fact when it has one and compute the answer
// themselves for any other string, or a document without facts. The
// engine derives them from protected_paths and sensitive_write_globs with
// OPA's own glob library (pathIndex); absent when the bundle lacks either
// list. A path's fact also says leaves when the path reaches, through a
// symbolic link, a place outside its command's working directory where
// its words do not (ln -s ~ x && rm -rf x/.ssh), which only the engine can
// tell: the rules read it where it is and judge the words alone without
// it. The links followed are the ones the line makes (ln -s; mv A B,
// after which a path under B reaches what one under A did; cp -a, -d,
// -P or -r, which copy a link as a link; cp -s) and, for the commands
// that delete, write, copy or change permissions, the ones on the disk,
// read as the kernel reads them: a .. goes up from where a link led
// (x/../passwd, with x a link to /etc/ssh, is /etc/passwd) and a dangling
// link leads to the file a write through it creates. The shell's write_targets are the files its commands write, found
// by the same bodies as termgate.rego's write_target (Bundle.writeTargets),
// and its modes the [command, mode] pairs its commands set, found by the
// same bodies as classes.rego's line_mode (lineModes); the rules compute
// both for a document without them.
//
// program is the program that reads the input, identified by its
// executable (/proc/PID/exe), not by the name it gives itself, and behind
// the relays it runs (script, python's pty.spawn: the program in front of
// the inner terminal). terminal describes the PTY a session input goes to
// (absent for pipe sessions, starts, execs and connects): reads_lines, the
// program reads a line at a time (canonical mode, or a line editor
// termgate knows); judged, termgate knows its lines and judges each at
// Enter (a shell or a known REPL); echo, false while the terminal reads
// with echo off (a password prompt: the text is judged all the same; only
// secret input is withheld); ahead, the input is typed while an earlier
// command runs, and readers are the programs that may read it (the one in
// front, and the session's own once it ends): the gateway asks about it as
// each of them and keeps the most severe decision.
//
// cwd is where the program that reads the input is now (the gateway reads
// its /proc/PID/cwd when it judges a line); session.cwd is only where the session started. Relative
// paths of a typed line are resolved against cwd, of a start or an exec
// against start.cwd. gateway names the gateway's own files at the paths
// it was configured with (audit log and its rotations, audit key,
// recordings, policy bundle, log file, state directory; a path written
// with a final * stands for every path that starts with it) and the home
// directory that ~ stands for. Both are filled by cmd/termgate; a caller
// of Decide may leave them out (nothing is then resolved, and no file is
// the gateway's).
//
// connect is a session's new outbound destination, as the egress proxy
// (package sandbox) saw it: text and program are empty then, so the rules
// on typed input never judge it; session names the session and its
// profile. address is set for an address literal (in any spelling) and
// when the proxy asks again about the address a name resolved to that is
// not public. See sandbox.Destination.
//
// exec is a program a session's process asked the kernel to run (action
// "exec", the exec gate); shell (and code or sql, for an interpreter's -c
// or a client's -e) is then built from its argv by the analysis a typed
// line's commands get, its relative paths resolved against exec.cwd;
// program is what its executable is, and the home (gateway.home) reads ~
// in its arguments (see Exec in exec.go).
//
// A flag (every boolean above) is present only when true, a command's path
// only when it was written with a slash, parse_error only when the line
// does not parse: absent reads as false in Rego, the document stays small,
// and a rule guarded by a flag is skipped by OPA's index when it is off.
//
// shell is filled when the program is a shell, and with the shell commands
// that code, SQL clients' commands and interactive programs' escapes
// amount to (see Code, SQL and Shell escapes below): then shell.embedded
// is true. code and sql are present when the input holds code or SQL;
// their sorted lists (code.names, code.listed, sql.classes) and flags are
// the guards of the rules on them, and code.names, code.listed,
// code.dynamic and sql.classes are derived by the engine on every
// decision, whatever the caller sent. The line is parsed with mvdan.cc/sh
// as bash reads it: its bytes as they are (a fullwidth ＃, ＂ or ＼ is a
// letter to bash, never a comment, quote or escape), quotes removed, $'…'
// decoded (\x, \u, \U, \NNN, \c), brace expansion applied ({rm,-rf,~} is
// three words; at most 64 words a word, beyond that the word is judged as
// written), an unquoted $IFS or ${IFS…} splitting the word. Names and
// arguments are then folded for comparison only (NFKC: ｒｍ is rm;
// zero-width characters removed), and shell.normalized says so.
//
// What a command runs is followed: sh -c and eval strings; find's -exec,
// -execdir, -ok (an rm it runs is rm -r: find walks the tree; {} is the
// start path, or START/{} when a test such as -name narrows what matches)
// and -delete (an rm -r of the start path, or of START/{}); env (its
// NAME=value words, -S); busybox; and the runners of data.termgate.runners
// (sudo, nice, timeout, chrt, taskset, systemd-run, ssh HOST CMD, watch,
// at, npm exec, uv run, poetry run…: their options, skipped arguments and
// subcommands as the data says; a runner marked each, such as tmux or a
// terminal emulator's -e, takes one word as a shell line and several as a
// program, any word that reads as a command judged too; one marked lines,
// such as hyperfine, has every word judged as a shell line). The command line in an option's value
// (data.termgate.command_options: tar --checkpoint-action=exec=…, ssh -o
// ProxyCommand=…, git -c alias.x=!…, rsync -e…), in a variable some
// program runs (lists.command_env: GIT_PAGER, LESSOPEN, EDITOR…, by
// assignment or env), in git config's command keys, in sed's e, in vim's
// -c '!…' and in the literal of a one-liner's system("…"), callCommand
// "…", run(`…`) (R, guile, julia…: the interpreters no parser below reads)
// is parsed and judged as a line of its own; its commands name the program
// in wrappers. The code a runner or wrapper hands to python, node, perl,
// ruby, php or awk (-c, -e, -r, the awk program, a here-document) reaches
// the code analysis below, wherever the runner stands (timeout 5 python3
// -c …, ssh HOST node -e …), and only it: the literal scan skips those
// programs' code. A sed e (or, for an awk program the code analysis does
// not get, a system()) whose command is built at run time is a command
// named "$(computed at run time)". The file an option writes
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
// stays itself; what a path reaches through symbolic links, made by the
// line or on the disk, counts in its path_facts), each redirection's path (its target resolved likewise,
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
// "<list>" in input.shell.words_listed, or a flag (input.shell.pipes);
// rules that several such guards lead to sit in a set of their own
// (write_finding, rebind_finding), which finding takes in under each
// guard, so the set is evaluated once, and only for a line a guard holds
// for. A rule on the text's own patterns is guarded by a list of the
// substrings its pattern needs (integration_substrings,
// ticket_builtin_substrings; a Rego test keeps such a list in step with
// the rule).
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
// # Code
//
// Code typed into a REPL (python, python3, ipython, node; perl, irb and
// php too) and the code of one-liners a shell line hands to an
// interpreter (python3 -c, node -e/-p, perl -e, ruby -e, awk PROGRAM,
// php -r, and here-documents or here-strings fed to one) is analysed, and
// input.code says what it does:
//
//   - calls: the calls the analysis knows, resolved through imports and
//     simple aliases (import os as o; o.system → os.system; from shutil
//     import rmtree; __import__('os'), importlib.import_module('os'),
//     getattr(os, 'system'); require('child_process'), import … from,
//     destructuring {execSync: x}, cp['exec'+'Sync']), with their string
//     arguments constant-folded (concatenation, f-strings and template
//     literals, % and .format, ' '.join, os.path.join and path.join,
//     constants bound earlier in the code; the home directory in all its
//     spellings — os.path.expanduser('~'), os.environ['HOME'],
//     os.getenv('HOME'), Path.home(), os.homedir(), process.env.HOME — as
//     ~; os.getppid() and process.ppid as $PPID). A part known only at run
//     time reads as a shell parameter ($name), so a line built from it has
//     a run-time part where it stood.
//   - what the calls do reaches input.shell as the shell commands it
//     amounts to, marked embedded, each with a wrapper naming its origin
//     ("python:shutil.rmtree"): a command string (os.system, subprocess
//     with shell=True, child_process.exec, system, backticks, qx, awk's
//     "cmd" | getline) is parsed as a shell line; an argument list
//     (subprocess.run([…]), spawn(file, args), os.execv) is a command;
//     shutil.rmtree(p) and fs.rmSync(p, {recursive: true}) are rm -r -- p,
//     os.remove(p) is rm -- p, os.rmdir is rmdir; a file opened for
//     writing or written (open(p, 'w'), Path.write_text, fs.writeFileSync,
//     File.write) is a command with no name and the redirection > p;
//     copies, moves and links are cp, mv and ln -s; os.chmod is chmod with
//     the mode in octal; os.kill(pid, sig) and process.kill are kill
//     -sig pid. One rule set judges a delete, a write or a signal however
//     it was spelt.
//   - dynamic_calls (and the flag dynamic): what cannot be resolved —
//     getattr(x, name), eval or exec of a string built at run time (one
//     that is constant is analysed as code), compile, globals()[…],
//     vars(m)[…], m.__dict__, sys.modules[…], ctypes and cffi, pickle
//     loads, require(name), import(name), new Function, vm, process.binding,
//     x.constructor.constructor(…), code an interpreter gets only at run
//     time (python3 -c "$CODE"), node's .load FILE.
//   - dynamic_shell: a shell or process call whose command is built at
//     run time (os.system(cmd)); reverse_shell: the code connects a socket
//     and hands it a shell or its standard streams (dup2, stdin=
//     s.fileno(), a spawned shell piped to a socket).
//   - parse_error: the code does not parse (the facts are then what the
//     tree's valid parts and a lexical scan still find, and modules lists
//     the code's dotted names); incomplete: the code is unfinished (an
//     open block, bracket or string): the REPL runs nothing yet, and it is
//     judged on what it shows all the same.
//   - hosts (present when there is one): the hosts the code names, in
//     shell.hosts' canonical spelling: the host of each URL in its text,
//     and each string literal that is an IP address in any spelling or a
//     dotted host name (a run of host characters between two equal
//     quotes, so an apostrophe in a comment cannot hide one). A string
//     that only mentions an address names no host. Code is judged on its
//     hosts for the cloud metadata service, not on its text.
//
// A line that names none of the names the analysis resolves calls to or
// builds them from (print(x), [x*2 for x in y]) is not parsed: it cannot
// hold a call the analysis would report. Input is analysed up to 64 KiB,
// 20 000 nodes and nesting 200, and a Python parse gives up after 250 ms
// (some input makes tree-sitter's error recovery take seconds): code
// left unparsed is judged as code that does not parse. Code nested in
// code (exec of a string that runs python3 -c …) is followed to the depth
// shell strings are.
//
// The parsers were chosen by measurement (the same 20 REPL lines and
// one-liners per language, CPU time on this project's two-core machine,
// loaded): Python is parsed with tree-sitter's grammar
// (github.com/tree-sitter/go-tree-sitter v0.25 and tree-sitter-python,
// cgo), the only candidate that parses the Python agents type today:
// gpython's parser (pure Go, 14 µs a line) is Python 3.4 and failed 8 of
// the 20 (f-strings, :=, match, async def, annotated assignments);
// smacker's older tree-sitter bindings walked a tree at twice the cost.
// tree-sitter costs 15-30 µs to parse a one-line statement (about 2 MB/s
// here), and asking the bindings about each node cost as much again, a
// call into C per question; so the tree is copied out of C in one call
// (tstree.go: kind, span, field and error flag of each node, children
// linked in Go) and walked in Go, by kind and field id, skipping
// punctuation. TestTSTreeAsBindings and FuzzTSTree hold the copy to the
// bindings' answers. tree-sitter keeps a tree for a partial line (ERROR
// and MISSING nodes) where the others stop, and builds its C sources once
// per build cache (about a minute, with gcc, which scripts/dev installs).
// JavaScript is parsed with github.com/tdewolff/parse/v2/js (pure Go,
// ES2020+): 2 µs a line, where tree-sitter's JavaScript grammar took 60
// times as long and goja's parser failed 7 of 20 (ES modules, top-level
// await). Perl, Ruby, awk and PHP have no parser in Go: a small tokenizer
// (code_oneliner.go) reads their strings, names and punctuation, and
// judges the literal arguments of system, exec, backticks, qx, %x, open
// with a pipe, IO.popen, awk's pipes and redirections, unlink, rmtree,
// FileUtils.rm_rf, File.write and kill.
//
// # SQL
//
// SQL typed into psql, mysql/mariadb and sqlite3 (and duckdb, pgcli,
// mycli, litecli, clickhouse-client, sqlcmd), or handed to one by a shell
// line (psql -c, mysql -e, sqlite3 DB SQL…, a here-document fed to psql),
// is split into statements and classified: input.sql. The splitter knows
// each dialect's strings (a doubled quote, E-strings and mysql's
// backslash escapes), quoted and backquoted identifiers, dollar quoting
// ($tag$…$tag$), comments
// (--, mysql's #, /* */ nested in Postgres), and mysql's executable
// comments (/*! … */, whose content runs). Each statement gets its verb,
// its object (after CREATE, ALTER, DROP), whether it has a WHERE at its
// own level, and classes: drop_database, drop, truncate, delete_all,
// update_all (no WHERE and no LIMIT), grant_public, grant_all, superuser
// (ROLE/USER with SUPERUSER, CREATEROLE, BYPASSRLS, REPLICATION),
// alter_system, copy_program, copy_file (server-side COPY to or from a
// file), server_file (pg_read_file, pg_ls_dir, lo_import, LOAD_FILE …),
// server_shell (xp_cmdshell, sys_exec), load_data, outfile (INTO
// OUTFILE/DUMPFILE), attach, load_extension, untrusted_code (a function
// in an untrusted language), shutdown. A data-modifying CTE (WITH d AS
// (DELETE …)) is classified as the statement it holds. The clients' own
// commands are statements too (verb \!, .shell, system …): psql's \!,
// \copy … program, \o, \g and \w with |cmd, sqlite3's .shell, .system,
// .once and .output with |cmd, .import and .read with "|cmd", mysql's
// system, \! and pager run shell lines (class client_shell), judged as
// shell lines in input.shell, and as a pipe into an interpreter when the
// client's output feeds one (\o |sh); the files they write (\o file,
// \copy … to 'file', .output, .once, .save, .backup, tee) are writes
// (class client_write) with a redirection in input.shell; \gexec (SQL
// built from query results), \e, \setenv and .load have classes of their
// own. input.sql.classes is the sorted set of the statements' classes,
// the guard of every SQL rule.
//
// This is a tokenizer, not a SQL parser, because no parser fits: measured
// on 16 statements of the three dialects, TiDB's MySQL parser (5.4 µs a
// statement) rejected 7 (every Postgres and SQLite form: GRANT … ON
// DATABASE … TO PUBLIC, ALTER ROLE … SUPERUSER, COPY … PROGRAM, dollar
// quoting, ATTACH, ON CONFLICT, a data-modifying CTE), xwb1989/sqlparser
// (22.6 µs) rejected 9, MySQL's own LOAD DATA and INTO OUTFILE among
// them; pg_query compiled to WebAssembly (go-pgquery) took 92 µs a
// statement and 1.7 s for the first, and rejected the MySQL and SQLite
// forms; pg_query_go (cgo, 14 µs) compiles Postgres's parser, 5 minutes a
// cold build here, for one dialect of three. A parser that rejects a
// statement classifies nothing, so each would still need this tokenizer
// behind it; the tokenizer classifies a statement in 1-4 µs in every
// dialect, and FuzzSQLAnalysis checks that a statement ended by ";" keeps
// its class whatever follows it.
//
// Redis commands are matched by the bundle (EVAL, EVALSHA, FCALL,
// SCRIPT LOAD and FUNCTION LOAD run scripts in the server; CONFIG SET,
// MODULE LOAD, SLAVEOF/REPLICAOF reconfigure it).
//
// # Shell escapes
//
// A line typed into an interactive program that runs a shell line through
// its escape is judged as that shell line (input.shell, embedded): vim and
// ex (:!cmd, :r !cmd, :w !cmd, :{range}!cmd, :silent and :execute forms,
// :terminal cmd, :call system('cmd'), :python code), less, more, most and
// man (!cmd, |m cmd), ftp, sftp, ed and others (!cmd; ed's r/w/e !cmd), gdb
// and lldb (shell cmd, !cmd, pipe … | cmd, call system("cmd"), python
// code), IPython (!cmd, !!cmd, x = !cmd, %system, %sx, %%bash and %%sh
// cells). When the program's output or buffer feeds the command (:w !cmd,
// a range filtered through cmd, |m cmd, pipe), a command that reads code
// there makes it a pipe into an interpreter. The program is the
// terminal's foreground program, input.program.
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
