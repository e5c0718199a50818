package termgate_test

test_sql if {
	confirm_by(typed_sql("psql", "DROP TABLE users;", [stmt("DROP TABLE users", "DROP", ["drop"])]), "sql.destructive")
	denied_by(typed_sql("psql", "drop database prod;", [stmt("drop database prod", "DROP", ["drop_database"])]), "sql.drop_database")
	confirm_by(typed_sql("mysql", "truncate orders", [stmt("truncate orders", "TRUNCATE", ["truncate"])]), "sql.destructive")
	confirm_by(typed_sql("sqlite3", "DELETE FROM users;", [stmt("DELETE FROM users", "DELETE", ["delete_all"])]), "sql.unbounded_write")
	confirm_by(typed_sql("psql", "update users set admin = true", [stmt("update users set admin = true", "UPDATE", ["update_all"])]), "sql.unbounded_write")
	denied_by(typed_sql("psql", "COPY t TO PROGRAM 'id'", [stmt("COPY t TO PROGRAM 'id'", "COPY", ["copy_program"])]), "sql.server_files")
	denied_by(typed_sql("psql", "GRANT SELECT ON t TO PUBLIC", [stmt("GRANT SELECT ON t TO PUBLIC", "GRANT", ["grant_public"])]), "sql.privilege")
	denied_by(typed_sql("psql", "ALTER ROLE bob SUPERUSER", [stmt("ALTER ROLE bob SUPERUSER", "ALTER", ["superuser"])]), "sql.privilege")
	confirm_by(typed_sql("mysql", "GRANT ALL PRIVILEGES ON *.* TO bob", [stmt("GRANT ALL PRIVILEGES ON *.* TO bob", "GRANT", ["grant_all"])]), "sql.privilege")
	confirm_by(typed_sql("sqlite3", "ATTACH DATABASE '/tmp/x' AS x", [stmt("ATTACH DATABASE '/tmp/x' AS x", "ATTACH", ["attach"])]), "sql.attach")
	confirm_by(typed_sql("psql", "\\gexec", [stmt("\\gexec", "\\gexec", ["dynamic_sql"])]), "sql.unjudged")
	every k in data.termgate.lists.sql_server_classes {
		denied_by(typed_sql("psql", "x", [stmt("x", "X", [k])]), "sql.server_files")
	}
	allowed(typed_sql("psql", "DELETE FROM users WHERE id = 1;", [stmt("DELETE FROM users WHERE id = 1", "DELETE", [])]))
	allowed(typed_sql("psql", "SELECT 'drop table x' FROM t;", [stmt("SELECT 'drop table x' FROM t", "SELECT", [])]))
	allowed(typed_sql("psql", "/* DROP TABLE x */ SELECT 1;", [stmt("SELECT 1", "SELECT", [])]))
	allowed(typed("psql", "DROP TABLE x"))
}

test_redis if {
	confirm_by(typed("redis-cli", "FLUSHALL"), "redis.flush")
	denied_by(typed("redis-cli", "config set dir /root/.ssh"), "redis.dangerous")
	confirm_by(bash([c("redis-cli", ["flushdb"])]), "redis.flush")
	confirm_by(typed("redis-cli", "EVAL \"return redis.call('flushall')\" 0"), "redis.script")
	confirm_by(typed("redis-cli", "function load \"#!lua name=x\""), "redis.script")
	denied_by(typed("redis-cli", "MODULE LOAD /tmp/x.so"), "redis.dangerous")
	denied_by(typed("redis-cli", "REPLICAOF 10.0.0.1 6379"), "redis.dangerous")
	denied_by(typed("redis-cli", "CONFIG SET dbfilename authorized_keys"), "redis.dangerous")
	allowed(typed("redis-cli", "GET eval"))
	allowed(typed("redis-cli", "GET k"))
}

test_mongo if {
	confirm_by(typed("mongosh", "db.users.drop()"), "mongo.drop")
	confirm_by(typed("mongosh", "db.users.deleteMany({})"), "mongo.drop")
	allowed(typed("mongosh", "db.users.find({})"))
}

test_repl_shell_out if {
	embedded := object.union(sh([c("rm", ["-rf", "/"])]), {"embedded": true})
	denied_by(object.union(typed("lua", "os.execute('rm -rf /')"), {"shell": embedded}), "fs.rm_protected")
	confirm_by(typed("lua", "system(cmd)"), "repl.dynamic_shell_out")
	allowed(object.union(typed("python3", "os.system(cmd)"), {"code": code_doc([call("os.system", ["$cmd"])], ["os"], {})}))
	allowed(typed("lua", "print('rm -rf /')"))
}

start(argv, cwd, env) := with_text(
	{"action": "start", "program": argv[0], "program_listed": program_listed(argv[0]), "shell": sh([c(argv[0], array.slice(argv, 1, count(argv)))]), "start": {"argv": argv, "cwd": cwd, "env": env}},
	concat(" ", argv),
)

test_start if {
	d := decide(start(["bash"], "/work", []))
	d.action == "allow"
	d.profile == "default"
	decide(start(["ssh", "host"], "/work", [])).profile == "network"
	denied_by(start(["bash"], "/work", ["LD_PRELOAD"]), "start.dangerous_env")
	denied_by(start(["bash"], "/", []), "start.cwd")
}

test_secret_input if {
	allowed(with_text({"action": "input", "program": "bash", "program_listed": program_listed("bash"), "secret": true}, ""))
	confirm_by(with_text({"action": "input", "program": "bash", "program_listed": program_listed("bash"), "secret": true}, "leaked"), "secret.withheld")
}

test_most_severe_wins if {
	# rm -rf / (deny, critical) beats sudo (confirm, high).
	d := decide(bash([c("sudo", ["rm", "-rf", "/"]), wrapped(c("rm", ["-rf", "/"]), ["sudo"])]))
	d.rule == "fs.rm_protected"
}

# The sensitive globs are joined into one {a,b,…} glob: a glob holds no
# comma or braces. Substrings are matched ignoring case, and written in
# lower case.
test_lists_are_plain if {
	every e in data.termgate.lists.metadata_substrings {
		lower(e) == e
	}
	every g in data.termgate.lists.sensitive_write_globs {
		not contains(g, ",")
		not contains(g, "{")
		not contains(g, "}")
	}
}

# Every way a line writes a file reaches the write rules: each body of
# write_target has its guard among finding's write_finding bodies.
test_every_write_source_is_judged if {
	every op in data.termgate.lists.write_redirects {
		denied_by(bash([redir(c("echo", ["k"]), op, "/etc/passwd")]), "file.sensitive_write")
	}
	every n in data.termgate.lists.copy_commands {
		denied_by(bash([c(n, ["x", "/etc/passwd"])]), "file.sensitive_write")
	}
	every n in data.termgate.lists.file_commands {
		denied_by(bash([c(n, ["/etc/passwd"])]), "file.sensitive_write")
	}
	every n in data.termgate.lists.in_place_editors {
		denied_by(bash([c(n, ["-i", "s/a/b/", "/etc/passwd"])]), "file.sensitive_write")
	}
	denied_by(bash([c("tee", ["/etc/passwd"])]), "file.sensitive_write")
	denied_by(bash([c("dd", ["of=/etc/passwd"])]), "file.sensitive_write")
	denied_by(bash([c("dd", ["of=/dev/sda"])]), "disk.raw_write")
}

test_container_host_env if {
	every v in data.termgate.lists.container_host_env {
		denied_by(bash([object.union(c("podman", ["ps"]), {"assigns": [v]})]), "container.host_escape")
	}
	allowed(bash([object.union(c("docker", ["ps"]), {"assigns": ["DOCKER_CONFIG"]})]))
}

test_metadata_endpoints if {
	every e in data.termgate.lists.metadata_substrings {
		denied_by(typed("python3", sprintf("requests.get('http://%s/')", [upper(e)])), "net.cloud_metadata")
	}
	allowed(typed("python3", "print('169.254.169.25')"))
}

# A finding with an unknown action or severity decides nothing: alone, the
# decision is undefined (the engine denies); beside a valid one, the valid
# one decides.
test_a_finding_off_the_scale_decides_nothing if {
	huge := {"rule": "x", "action": "confirm", "severity": "huge", "reason": "r"}
	maybe := {"rule": "x", "action": "maybe", "severity": "high", "reason": "r"}
	low := {"rule": "y", "action": "deny", "severity": "low", "reason": "r"}
	not data.termgate.decision with data.termgate.finding as {huge} with input as bash([])
	not data.termgate.decision with data.termgate.finding as {maybe} with input as bash([])
	d := data.termgate.decision with data.termgate.finding as {huge, low} with input as bash([])
	d.rule == "y"
}

# A line that runs several database clients is judged client by client
# (one text per client, not one text that conflicts).
test_several_clients_in_one_line if {
	q := {"sql": sql_doc([stmt("SELECT 1", "SELECT", []), stmt("DROP TABLE users", "DROP", ["drop"])])}
	confirm_by(object.union(bash([c("psql", ["-c", "SELECT 1"]), c("psql", ["-c", "DROP TABLE users"])]), q), "sql.destructive")
	allowed(bash([c("psql", ["-c", "SELECT 1"]), c("psql", ["-c", "SELECT 2"])]))
	confirm_by(bash([c("redis-cli", ["get", "a"]), c("redis-cli", ["flushall"])]), "redis.flush")
	denied_by(bash([c("redis-cli", ["get", "a"]), c("redis-cli", ["config", "set", "dir", "/root"])]), "redis.dangerous")
}

# ---- what a start runs, as the gateway's parser hands it over ----

# line is a start of a shell line (the gateway runs it with /bin/sh -c):
# the sh, then the line's commands.
line(text, cmds) := with_text(
	{
		"action": "start", "program": "sh", "program_listed": program_listed("sh"),
		"shell": object.union(sh(array.concat([object.union(c("sh", ["-c", text]), {"path": "/bin/sh"})], cmds)), {"eval": true}),
		"start": {"argv": ["/bin/sh", "-c", text], "cwd": "/work/p", "env": []},
	},
	text,
)

flagged(doc, flags) := object.union(doc, {"shell": object.union(doc.shell, flags)})

# (Each test stays small: OPA's runner gives a test five seconds.)

test_profile_network_for_one_network_program if {
	decide(start(["ssh", "host"], "/work", [])).profile == "network"
	decide(line("env FOO=1 psql db", [c("env", ["FOO=1", "psql", "db"]), wrapped(c("psql", ["db"]), ["env"])])).profile == "network"
	decide(line("exec ssh h", [c("exec", ["ssh", "h"]), wrapped(c("ssh", ["h"]), ["exec"])])).profile == "network"
}

test_profile_network_behind_wrappers if {
	decide(line("timeout 9 nice ssh h", [c("timeout", ["9", "nice", "ssh", "h"]), wrapped(c("nice", ["ssh", "h"]), ["timeout"]), wrapped(c("ssh", ["h"]), ["timeout", "nice"])])).profile == "network"
	decide(object.union(start(["bash", "-c", "ssh h"], "/work", []), {"shell": sh([c("bash", ["-c", "ssh h"]), c("ssh", ["h"])])})).profile == "network"
}

# Look-alikes: a network program beside a shell, or among others.
test_profile_look_alikes if {
	decide(line("git --version >/dev/null; exec bash", [
		redir(c("git", ["--version"]), ">", "/dev/null"),
		c("exec", ["bash"]), wrapped(c("bash", []), ["exec"]),
	])).profile == "default"
	decide(line("ssh h; bash", [c("ssh", ["h"]), c("bash", [])])).profile == "default"
	decide(line("git clone x && psql", [c("git", ["clone", "x"]), c("psql", [])])).profile == "default"
	decide(line("sudo ssh h", [c("sudo", ["ssh", "h"]), wrapped(c("ssh", ["h"]), ["sudo"])])).profile == "default"
}

test_profile_lines_that_hide_what_runs if {
	decide(flagged(line("ssh h | tee log", [c("ssh", ["h"]), c("tee", ["log"])]), {"pipes": true})).profile == "default"
	decide(flagged(line("ssh h &", [c("ssh", ["h"])]), {"background": true})).profile == "default"
	decide(flagged(line("ssh $(bash)", [c("ssh", ["$(bash)"]), c("bash", [])]), {"substitutions": true})).profile == "default"
}

test_profile_lines_that_do_not_parse if {
	decide(flagged(line("ssh 'h", [c("ssh", ["'h"])]), {"parse_error": "unclosed quote"})).profile == "default"
	decide(flagged(line("ssh h; f", [c("ssh", ["h"])]), {"recursive_functions": ["f"]})).profile == "default"
	decide(flagged(line("ssh h \\", [c("ssh", ["h"])]), {"incomplete": true})).profile == "default"
}

# A shell or an interpreter never gets network, even if a bundle lists it
# as a network program; a wrapper alone runs nothing; only starts choose.
test_profile_never_for_a_shell if {
	decide(start(["bash"], "/work", [])).profile == "default"
	d := data.termgate.decision with input as start(["bash"], "/work", []) with data.termgate.network_programs as ["bash", "ssh"]
	d.profile == "default"
	decide(line("timeout 5", [c("timeout", ["5"])])).profile == "default"
	decide(bash([c("ssh", ["h"])])).profile == "default"
}

test_start_env_code_functions_and_prompts if {
	denied_by(line("env 'BASH_FUNC_printf%%=() { :; }' bash", [c("env", ["BASH_FUNC_printf%%=() { :; }", "bash"]), wrapped(c("bash", []), ["env"])]), "start.env_code")
	denied_by(line("PS1='$(rm -rf ~)' bash", [object.union(c("bash", []), {"assigns": ["PS1"]})]), "start.env_code")
	denied_by(line("MAILPATH=x bash", [object.union(c("bash", []), {"assigns": ["MAILPATH"]})]), "start.env_code")
	denied_by(line("HOME=/tmp/h bash", [object.union(c("bash", []), {"assigns": ["HOME"]})]), "start.env_code")
}

test_start_env_code_linkers_and_hooks if {
	denied_by(line("env LD_PRELOAD=/x.so ls", [c("env", ["LD_PRELOAD=/x.so", "ls"]), wrapped(c("ls", []), ["env"])]), "start.env_code")
	denied_by(line("export GIT_SSH_COMMAND=x; git fetch", [c("export", ["GIT_SSH_COMMAND=x"]), c("git", ["fetch"])]), "start.env_code")
	e := object.union(line("env PYTHONPATH=. python3", [c("env", ["PYTHONPATH=.", "python3"]), wrapped(c("python3", []), ["env"])]), {"action": "exec"})
	denied_by(e, "start.env_code")
}

test_start_env_code_allows_the_harmless if {
	allowed(line("env TZ=UTC date", [c("env", ["TZ=UTC", "date"]), wrapped(c("date", []), ["env"])]))
	allowed(line("env -u PS1 bash", [c("env", ["-u", "PS1", "bash"]), wrapped(c("bash", []), ["env"])]))

	# Typed into a session, the same assignment is judged as what it runs.
	not denied_by(bash([object.union(c("ls", []), {"assigns": ["PS1"]})]), "start.env_code")
}

test_start_shell_startup_file if {
	denied_by(start(["bash", "--rcfile", "x.sh"], "/work", []), "start.shell_startup_file")
	denied_by(start(["bash", "--init-file", "x.sh", "-i"], "/work", []), "start.shell_startup_file")
	denied_by(bash([c("bash", ["--rcfile", "x.sh"])]), "start.shell_startup_file")
}

test_start_fish_init_command if {
	denied_by(start(["fish", "-C", "rm -rf ~"], "/work", []), "start.shell_startup_file")
	denied_by(start(["fish", "-iC", "x"], "/work", []), "start.shell_startup_file")
	denied_by(start(["fish", "--init-command=x"], "/work", []), "start.shell_startup_file")
}

test_start_options_that_are_not_startup_files if {
	allowed(start(["bash", "-C"], "/work", [])) # noclobber, not a startup file
	allowed(start(["git", "-C", "dir", "log"], "/work", []))
	allowed(start(["bash", "--norc"], "/work", []))
}

test_exec_cwd if {
	e := {"action": "exec", "program": "bash", "program_listed": program_listed("bash"), "text": "ls", "text_listed": [], "shell": sh([c("ls", [])]), "start": {"argv": ["bash", "-c", "ls"], "cwd": "/", "env": []}}
	denied_by(e, "start.cwd")
	denied_by(object.union(e, {"start": {"argv": ["bash", "-c", "ls"], "cwd": "/tmp", "env": []}}), "start.cwd")
	allowed(object.union(e, {"start": {"argv": ["bash", "-c", "ls"], "cwd": "/tmp/project", "env": []}}))
}
