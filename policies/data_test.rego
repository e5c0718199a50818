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
