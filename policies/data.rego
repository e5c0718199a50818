package termgate

# ---- SQL, typed into a database client or handed to one ----
# The gateway splits the SQL into statements and classifies each on its
# tokens (policy/sql.go): input.sql.classes is the sorted set of the
# statements' classes, and every rule here starts with one of them as its
# guard, so OPA's index skips the SQL rules for any other input. A
# string, a comment or a quoted identifier that mentions DROP is no
# statement and has no class. The shell lines the clients' own commands
# run (\!, \copy … program, .shell, system) reach input.shell and the
# shell rules; the files they write (\o file, .output file, tee) reach the
# write rules as redirections.

finding contains {
	"rule": "sql.drop_database",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("drops a database or schema: %s", [sql_text("drop_database")]),
} if {
	"drop_database" in input.sql.classes
}

finding contains {
	"rule": "sql.destructive",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("destructive SQL: %s", [sql_text("drop")]),
} if {
	"drop" in input.sql.classes
}

finding contains {
	"rule": "sql.destructive",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("destructive SQL: %s", [sql_text("truncate")]),
} if {
	"truncate" in input.sql.classes
}

finding contains {
	"rule": "sql.unbounded_write",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("DELETE or UPDATE without WHERE: %s", [sql_text("delete_all")]),
} if {
	"delete_all" in input.sql.classes
}

finding contains {
	"rule": "sql.unbounded_write",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("DELETE or UPDATE without WHERE: %s", [sql_text("update_all")]),
} if {
	"update_all" in input.sql.classes
}

finding contains {
	"rule": "sql.privilege",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("grants to everyone or makes a superuser: %s", [sql_text("grant_public")]),
} if {
	"grant_public" in input.sql.classes
}

finding contains {
	"rule": "sql.privilege",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("grants to everyone or makes a superuser: %s", [sql_text("superuser")]),
} if {
	"superuser" in input.sql.classes
}

finding contains {
	"rule": "sql.privilege",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("grants every privilege: %s", [sql_text("grant_all")]),
} if {
	"grant_all" in input.sql.classes
}

finding contains {
	"rule": "sql.server_files",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("SQL that runs programs, loads native code or reads or writes the server's files: %s", [sql_text(k)]),
} if {
	some k in cfg.sql_server_classes
	k in input.sql.classes
}

finding contains {
	"rule": "sql.attach",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("attaches another database file: %s", [sql_text("attach")]),
} if {
	"attach" in input.sql.classes
}

finding contains {
	"rule": "sql.unjudged",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("runs SQL or commands the line does not show (%s)", [sql_text("dynamic_sql")]),
} if {
	"dynamic_sql" in input.sql.classes
}

finding contains {
	"rule": "sql.unjudged",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("runs SQL or commands the line does not show (%s)", [sql_text("editor")]),
} if {
	"editor" in input.sql.classes
}

finding contains {
	"rule": "sql.unjudged",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("runs SQL or commands the line does not show (%s)", [sql_text("alter_system")]),
} if {
	"alter_system" in input.sql.classes
}

finding contains {
	"rule": "sql.unjudged",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("runs SQL or commands the line does not show (%s)", [sql_text("client_env")]),
} if {
	"client_env" in input.sql.classes
}

# sql_text is the first statement of a class, for reasons.
sql_text(k) := [s.text | some s in input.sql.statements; k in s.classes][0]

# ---- redis ----

finding contains f if {
	"redis_programs" in input.program_listed
	some f in redis_finding
}

finding contains f if {
	"redis_programs" in input.shell.listed
	some f in redis_finding
}

redis_texts contains upper(input.text) if "redis_programs" in input.program_listed

redis_texts contains upper(concat(" ", c.args)) if {
	"redis_programs" in input.shell.listed
	not "redis_programs" in input.program_listed
	some ix in input.shell.list_commands.redis_programs
	c := input.shell.commands[ix]
}

redis_finding contains {
	"rule": "redis.flush",
	"action": "confirm",
	"severity": "high",
	"reason": "FLUSHALL/FLUSHDB deletes every key",
} if {
	some t in redis_texts
	regex.match(`(^|\s)(FLUSHALL|FLUSHDB)\b`, t)
}

redis_finding contains {
	"rule": "redis.script",
	"action": "confirm",
	"severity": "high",
	"reason": "EVAL, EVALSHA, SCRIPT LOAD or FUNCTION LOAD runs a script inside the server",
} if {
	some t in redis_texts
	regex.match(`(?m)^(\s*-{1,2}[A-Z-]+(\s+[^-\s]\S*)?)*\s*(EVAL|EVALSHA|EVAL_RO|EVALSHA_RO|FCALL|FCALL_RO|SCRIPT\s+LOAD|FUNCTION\s+(LOAD|RESTORE))\b`, t)
}

redis_finding contains {
	"rule": "redis.dangerous",
	"action": "deny",
	"severity": "high",
	"reason": "CONFIG SET, MODULE LOAD, DEBUG, SLAVEOF/REPLICAOF or SHUTDOWN reconfigures or stops the server",
} if {
	some t in redis_texts
	regex.match(`(^|\s)(CONFIG\s+SET|MODULE\s+LOAD|DEBUG|SLAVEOF|REPLICAOF|SHUTDOWN)\b`, t)
}

# ---- mongo ----

finding contains {
	"rule": "mongo.drop",
	"action": "confirm",
	"severity": "high",
	"reason": "drops a database or collection, or deletes every document",
} if {
	"mongo_programs" in input.program_listed
	regex.match(`\.(dropDatabase|drop)\s*\(|\.(deleteMany|remove)\s*\(\s*\{\s*\}\s*\)`, input.text)
}

# ---- REPL code the gateway does not analyse ----
# Python and JavaScript are parsed, Perl, Ruby, awk and PHP one-liners
# tokenized (policy/code*.go): their calls reach input.code and the shell
# commands they amount to input.shell (embedded), judged by the rules in
# code.rego and the shell rules. For a REPL without an analyser (lua, …)
# the strings handed to a shell are still found; one built at run time
# cannot be judged: ask.

finding contains {
	"rule": "repl.dynamic_shell_out",
	"action": "confirm",
	"severity": "medium",
	"reason": "code runs a shell command built at run time",
} if {
	"repl_programs" in input.program_listed
	not input.code
	regex.match(`\b(os\.system|os\.popen|subprocess\.\w+|execSync|child_process|system|popen|shell_exec|passthru)\s*\(\s*[A-Za-z_$]`, input.text)
	not input.shell.embedded
}

# ---- session start ----

finding contains {
	"rule": "start.dangerous_env",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("the environment variable %s changes what programs load or run", [e]),
} if {
	input.action in {"start", "exec"}
	some e in input.start.env
	e in cfg.dangerous_env
}

# The working directory of a start or an exec is the real directory the
# gateway resolved and checked (no link, no ".."): a session writes it.
finding contains {
	"rule": "start.cwd",
	"action": "deny",
	"severity": "medium",
	"reason": sprintf("sessions may not start in %s", [input.start.cwd]),
} if {
	input.action in {"start", "exec"}
	input.start.cwd in cfg.forbidden_cwds
}

# A start line (or an exec) that sets a variable that runs code before
# anything is judged: an imported function (BASH_FUNC_x%%), a prompt,
# startup or mail variable, the dynamic linker's or an interpreter's
# hooks; by an assignment before the command, env NAME=value, or export.
# (What an agent sets in env is checked by the gateway against
# data.termgate.agent_env before the policy is asked.)
finding contains {
	"rule": "start.env_code",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("the start line sets %s, which runs code before anything is judged", [n]),
} if {
	input.action in {"start", "exec"}
	input.start # a start line, or the exec tool's; not a program the kernel holds
	some n in set_names
	code_env(n)
}

# set_names are the variables the line's commands set: their assignments,
# and the NAME=value arguments of env, export and the like. One set a
# decision, rather than a function called for every command.
set_names contains n if {
	some c in input.shell.commands
	some n in c.assigns
}

set_names contains split(a, "=")[0] if {
	some ix in input.shell.list_commands.env_setters
	some a in input.shell.commands[ix].args
	not startswith(a, "-")
	contains(a, "=")
}

code_env(n) if n in cfg.code_env

code_env(n) if strings.any_prefix_match(n, cfg.code_env_prefixes)

code_env(n) if contains(n, "%")

# A shell told to read a startup file the agent chose runs it before
# anything is judged: bash --rcfile x, --init-file x, fish -C/--init-command.
finding contains {
	"rule": "start.shell_startup_file",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s runs a startup file the agent chose, before anything is judged", [c.name, o]),
} if {
	"shell_startup_options" in input.shell.words_listed
	some ix in input.shell.list_commands.shells
	c := input.shell.commands[ix]
	some o in c.flags
	o in cfg.shell_startup_options
}

finding contains {
	"rule": "start.shell_startup_file",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("fish %s runs a command the agent chose, before anything is judged", [o]),
} if {
	"fish" in input.shell.names
	some ix in input.shell.name_commands.fish
	c := input.shell.commands[ix]
	some o in c.flags
	o in cfg.fish_startup_flags
}

# Secret input (typed while the terminal's echo is off) is never judged as
# text: it is allowed as typed, and never logged.
finding contains {
	"rule": "secret.withheld",
	"action": "confirm",
	"severity": "low",
	"reason": "secret input carries text for the policy",
} if {
	input.secret
	input.text != ""
}
