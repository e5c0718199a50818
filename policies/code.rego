package termgate

# ---- code typed into a REPL or handed to an interpreter ----
#
# The gateway parses Python and JavaScript, and tokenizes Perl, Ruby, awk
# and PHP one-liners (policy/code*.go). What the code does to the system
# reaches input.shell as the shell commands it amounts to (os.system(s) is
# the line s, shutil.rmtree(p) is rm -r p, open(p, 'w') a redirection to
# p, os.kill(pid, 9) is kill -9 pid), so the shell rules judge it; what has
# no shell spelling is judged here. Every rule starts with a guard OPA's
# index uses: a flag of input.code, present only when true, or a list in
# input.code.listed.

finding contains {
	"rule": "code.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": "the code connects a socket and hands it a shell or its standard streams (a reverse shell)",
} if {
	input.code.reverse_shell
}

finding contains {
	"rule": "code.dynamic",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("the code chooses what it runs at run time (%s): it cannot be judged", [input.code.dynamic_calls[0]]),
} if {
	input.code.dynamic
	not input.exec # at an exec (python -m venv's ensurepip runs runpy): what it runs is judged at its own exec
}

finding contains {
	"rule": "code.dynamic_shell_out",
	"action": "confirm",
	"severity": "medium",
	"reason": "the code runs a shell command or program built at run time",
} if {
	input.code.dynamic_shell
	not input.exec # the program it builds is judged at its own exec
}

finding contains {
	"rule": "code.signal",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("the code sends a signal to another process (%s)", [concat(", ", [n | some n in input.code.names; n in cfg.code_signal_calls])]),
} if {
	"code_signal_calls" in input.code.listed
}

finding contains {
	"rule": "code.unparseable",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("the code does not parse (%s) and names modules that run programs or change files: it cannot be judged reliably", [input.code.parse_error]),
} if {
	input.code.parse_error
	"code_modules" in input.code.listed
	not input.exec # as input.unparseable: each program it runs is judged at its own exec
}
