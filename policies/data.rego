package termgate

# ---- SQL, typed into a database shell or passed with -c / -e ----

# The SQL a line runs: typed into a database shell, or passed to each
# database client the line runs (a set: a line may run several).
sql_texts contains input.text if "sql_programs" in input.program_listed

sql_texts contains concat(" ", c.args) if {
	"sql_programs" in input.shell.listed
	not "sql_programs" in input.program_listed
	some c in input.shell.commands
	c.name in cfg.sql_programs
}

# The SQL rules add to sql_finding, which finding takes in only for a
# database shell or a line that runs one: OPA's rule index skips both
# bodies for any other input, and the SQL rules are never evaluated.
finding contains f if {
	"sql_programs" in input.program_listed
	some f in sql_finding
}

finding contains f if {
	"sql_programs" in input.shell.listed
	some f in sql_finding
}

# Statements, comments removed, upper-cased.
sql_statements contains trim_space(s) if {
	some t in sql_texts
	no_strings := regex.replace(t, `'([^']|'')*'`, "''")
	clean_sql := regex.replace(regex.replace(upper(no_strings), `--[^\n]*`, " "), `/\*.*?\*/`, " ")
	some s in split(clean_sql, ";")
	trim_space(s) != ""
}

sql_finding contains {
	"rule": "sql.drop_database",
	"action": "deny",
	"severity": "critical",
	"reason": "DROP DATABASE/SCHEMA",
} if {
	some s in sql_statements
	regex.match(`\bDROP\s+(DATABASE|SCHEMA)\b`, s)
}

sql_finding contains {
	"rule": "sql.destructive",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("destructive SQL: %s", [substring(s, 0, 80)]),
} if {
	some s in sql_statements
	regex.match(`\b(DROP\s+(TABLE|VIEW|INDEX|USER|ROLE|OWNED)|TRUNCATE)\b`, s)
}

sql_finding contains {
	"rule": "sql.unbounded_write",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("DELETE or UPDATE without WHERE: %s", [substring(s, 0, 80)]),
} if {
	some s in sql_statements
	regex.match(`^\s*(WITH\b.*\b)?(DELETE\s+FROM|UPDATE\s+\S+\s+SET)\b`, s)
	not regex.match(`\bWHERE\b`, s)
}

sql_finding contains {
	"rule": "sql.server_files",
	"action": "deny",
	"severity": "high",
	"reason": "SQL that runs programs or writes server files",
} if {
	some s in sql_statements
	regex.match(`\b(COPY\s+.*\b(TO|FROM)\s+PROGRAM|INTO\s+(OUT|DUMP)FILE|LOAD_FILE\s*\(|XP_CMDSHELL|ATTACH\s+DATABASE)\b`, s)
}

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
	some c in input.shell.commands
	c.name in cfg.redis_programs
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

# ---- REPL code that shells out ----
# The gateway parses the strings code hands to a shell (os.system,
# subprocess, child_process) into input.shell with embedded = true, so every
# shell rule above judges them too. A shell-out whose command is built at
# run time cannot be judged: ask.

finding contains {
	"rule": "repl.dynamic_shell_out",
	"action": "confirm",
	"severity": "medium",
	"reason": "code runs a shell command built at run time",
} if {
	"repl_programs" in input.program_listed
	regex.match(`\b(os\.system|os\.popen|subprocess\.\w+|execSync|child_process)\s*\(\s*[A-Za-z_f]`, input.text)
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
	some c in input.shell.commands
	some n in set_names(c)
	code_env(n)
}

# set_names are the variables a command sets: its assignments, and the
# NAME=value arguments of env, export and the like.
set_names(c) := {n | some n in c.assigns} | {n |
	c.name in cfg.env_setters
	some a in c.args
	not startswith(a, "-")
	contains(a, "=")
	n := split(a, "=")[0]
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
	some c in input.shell.commands
	c.name in cfg.shells
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
	some c in input.shell.commands
	c.name == "fish"
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
