package termgate_test

# ex builds the document of a program the kernel holds, as the gateway
# builds it: input.program is what the executable is, input.shell the
# commands of its argv (see policy/exec.go), x the exec's other fields.
ex(cmds, x) := {
	"action": "exec", "program": cmds[0].name, "program_listed": program_listed(cmds[0].name),
	"text": "", "text_listed": [], "shell": sh(cmds),
	"exec": object.union({"argv": [], "path": concat("/", ["/usr/bin", cmds[0].name]), "cwd": "/w", "parents": ["bash", "bash"]}, x),
}

# Judged as each command of a typed line is: the same rules, the same
# findings.
test_exec_same_rules if {
	denied_by(ex([c("rm", ["-rf", "~"])], {}), "fs.rm_protected")
	denied_by(ex([c("dash", ["-c", "rm -rf ~"]), c("rm", ["-rf", "~"])], {}), "fs.rm_protected")
	denied_by(ex([c("find", ["~", "-exec", "rm", "-rf", "{}", ";"]), wrapped(c("rm", ["-rf", "~"]), ["find"])], {}), "fs.rm_protected")
	confirm_by(ex([c("rm", ["-rf", "/tmp/build"])], {}), "fs.rm_recursive_outside")
	denied_by(ex([c("dd", ["if=/dev/zero", "of=/dev/sda"])], {}), "disk.raw_write")
	allowed(ex([c("true", [])], {}))
	allowed(ex([c("cc1", ["-quiet", "main.c", "-o", "/tmp/ccX.s"])], {}))
}

# What a typed line cannot see (a command computed at run time, a line
# that does not parse) is seen at each exec: not asked about at an exec
# of sh -c '"$@"'.
test_exec_sees_what_a_line_hides if {
	dyn := object.union(c("$1", []), {"dynamic": true})
	confirm_by(bash([dyn]), "shell.dynamic_command")
	allowed(ex([c("sh", ["-c", "\"$@\"", "sh", "make"]), dyn], {}))
	unparsed := object.union(ex([c("sh", ["-c", "if then"]), c("if", ["then"])], {}), {"shell": object.union(sh([c("sh", ["-c", "if then"]), c("if", ["then"])]), {"parse_error": "1:4: syntax error"})})
	allowed(unparsed)
	confirm_by(object.union(object.remove(unparsed, ["exec"]), {"action": "input"}), "input.unparseable")
}

# The start rules judge starts (the exec tool's too), not what a session
# runs: env BASH_ENV=x bash run by a script is judged as the command it
# is.
test_exec_is_not_a_start if {
	cmd := object.union(c("bash", []), {"assigns": ["BASH_ENV"]})
	allowed(ex([c("env", ["BASH_ENV=/x", "bash"]), cmd], {}))
	start := {"action": "start", "program": "bash", "text": "", "text_listed": [], "program_listed": [], "shell": sh([c("env", ["BASH_ENV=/x", "bash"]), cmd]), "start": {"argv": ["env", "BASH_ENV=/x", "bash"], "cwd": "/w", "env": []}}
	denied_by(start, "start.env_code")
}

confirmed(line_cmds) := {"line": "the line", "line_confirmed": true, "line_commands": line_cmds}

# A program of the line the human confirmed is not asked about again.
test_exec_confirmed_line if {
	rm := c("rm", ["-rf", "/tmp/build"])
	d := decide(ex([rm], confirmed([{"name": "rm", "args": ["-rf", "/tmp/build"]}])))
	d.action == "allow"
	d.rule == "exec.confirmed_line"
	contains(d.reason, "fs.rm_recursive_outside")

	# A glob of the line covers what it expanded to.
	allowed(ex([c("rm", ["-rf", "/tmp/b1", "/tmp/b2"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/b*"]}])))

	# Through a wrapper: every command the exec runs is the line's.
	allowed(ex([c("sudo", ["rm", "-rf", "/tmp/build"]), wrapped(rm, ["sudo"])], confirmed([
		{"name": "sudo", "args": ["rm", "-rf", "/tmp/build"]},
		{"name": "rm", "args": ["-rf", "/tmp/build"]},
	])))
}

test_exec_confirmed_line_only_that if {
	rm := c("rm", ["-rf", "/tmp/build"])

	# Not confirmed: asked.
	confirm_by(ex([rm], {"line": "rm -rf /tmp/build"}), "fs.rm_recursive_outside")

	# Another target, another program, more than the line's arguments.
	confirm_by(ex([c("rm", ["-rf", "/tmp/other"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/build"]}])), "fs.rm_recursive_outside")
	confirm_by(ex([rm], confirmed([{"name": "rmdir", "args": ["-rf", "/tmp/build"]}])), "fs.rm_recursive_outside")
	confirm_by(ex([c("rm", ["-rf", "/tmp/build", "/tmp/more"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/build"]}])), "fs.rm_recursive_outside")

	# A glob does not cross a directory, and a pattern glob.match would
	# reject is never a glob.
	confirm_by(ex([c("rm", ["-rf", "/tmp/b/c"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/b*"]}])), "fs.rm_recursive_outside")
	confirm_by(ex([c("rm", ["-rf", "/tmp/b"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/[b*"]}])), "fs.rm_recursive_outside")

	# A deny is never waived.
	denied_by(ex([c("rm", ["-rf", "~"])], confirmed([{"name": "rm", "args": ["-rf", "~"]}])), "fs.rm_protected")

	# A wrapper the line did not run.
	confirm_by(ex([c("sudo", ["rm", "-rf", "/tmp/build"]), wrapped(rm, ["sudo"])], confirmed([{"name": "rm", "args": ["-rf", "/tmp/build"]}])), "privilege.escalation")
}

# A copy of a system program under another name is asked about, and
# judged as the program it is.
test_exec_disguised if {
	tidy := {"path": "/w/tidy", "identified_by": "content"}
	confirm_by(ex([c("rm", ["notes.txt"])], tidy), "exec.disguised_program")
	denied_by(ex([c("rm", ["-rf", "~"])], tidy), "fs.rm_protected")
	confirm_by(ex([c("rm", ["x"])], {"path": "/w/keep", "identified_by": "inode"}), "exec.disguised_program")

	# Under its own name (a venv's copy of python3), or identified by its
	# path: nothing to ask.
	allowed(ex([c("python3", ["-V"])], {"path": "/w/venv/bin/python3", "identified_by": "content"}))
	allowed(ex([c("python3.11", ["-V"])], {"path": "/w/venv/bin/python3.11", "identified_by": "path"}))
}

# Code handed to an interpreter that chooses at run time what it runs
# (python -m venv's ensurepip: python -c "…runpy.run_module('pip')…") is
# asked about when typed, not at an exec: every program it runs is
# judged at its own exec, and what it does in process is the sandbox's
# to bound.
test_exec_code_computed_at_run_time if {
	dynamic := object.union(ex([c("python3", ["-c", "import runpy; runpy.run_module('pip')"])], {}), {"code": {"dynamic": true, "dynamic_calls": ["runpy.run_module"], "listed": []}})
	allowed(dynamic)
	confirm_by(object.union(object.remove(dynamic, ["exec"]), {"action": "input"}), "code.dynamic")
	shell_out := object.union(ex([c("python3", ["-c", "os.system(cmd)"])], {}), {"code": {"dynamic_shell": true, "listed": []}})
	allowed(shell_out)
	confirm_by(object.union(object.remove(shell_out, ["exec"]), {"action": "input"}), "code.dynamic_shell_out")
	unparsed := object.union(ex([c("python3", ["-c", "import os; os.("])], {}), {"code": {"parse_error": "1:14", "listed": ["code_modules"]}})
	allowed(unparsed)
	confirm_by(object.union(object.remove(unparsed, ["exec"]), {"action": "input"}), "code.unparseable")
}
