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

finding contains {
	"rule": "start.cwd",
	"action": "deny",
	"severity": "medium",
	"reason": sprintf("sessions may not start in %s", [input.start.cwd]),
} if {
	input.action == "start"
	input.start.cwd in cfg.forbidden_cwds
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
