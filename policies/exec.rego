package termgate

# ---- programs the kernel holds (action "exec") ----
#
# Every execve of a session's processes waits in the kernel until the
# gateway answers (the exec gate). The gateway builds input.shell from
# the exec's argv, as a start's argv is built (wrappers, runners, sh -c
# strings and find -exec followed; relative paths from the process's
# directory; the code handed to an interpreter as input.code, as a typed
# one-liner's), with the program named by what its
# executable is (input.program: exec -a x rm is rm; a link, a hard link
# or a copy of rm is rm; a multi-call binary's applet) and the session's
# home as ~ (rm -rf /home/u is rm -rf ~). So every rule of the bundle
# judges an exec as it judges each command of a typed line: one rule set.
# A deny fails the exec with EPERM; a confirm asks the human through the
# call in flight on the session, and fails it when there is none.
#
# What an exec adds to that is below: a program the human already
# confirmed is not asked about again, and a system program renamed to
# pass for another is asked about.

# The human confirmed the session's last line, and this exec is one of
# its commands: every command the exec runs (the program, and what its
# wrappers or sh -c string run) is a command of that line, with its
# arguments among the line's (a glob of the line covers what it
# expanded to), and nothing found here is worse than a confirm. The
# decision (termgate.rego) allows it without asking again.
exec_confirmed_by_line if {
	input.exec.line_confirmed
	every f in findings {
		f.action == "confirm"
	}
	every c in input.shell.commands {
		in_confirmed_line(c)
	}
}

in_confirmed_line(c) if {
	some l in input.exec.line_commands
	l.name == c.name
	every a in c.args {
		covers(l.args, a)
	}
}

covers(largs, a) if a in largs

covers(largs, a) if {
	some g in largs
	regex.match(`^[^\[\]{}\\]*[*?][^\[\]{}\\]*$`, g) # a plain glob: nothing glob.match would reject
	glob.match(g, ["/"], a)
}

# A program identified by its content or inode (a copy or hard link of a
# system program) that runs under another name is passing for something
# it is not: cp /bin/rm ./tidy; ./tidy -rf ~ is judged as rm, and asked
# about as a disguise.
finding contains {
	"rule": "exec.disguised_program",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s is a copy of %s under another name", [input.exec.path, input.program]),
} if {
	input.exec.identified_by in {"content", "inode"}
	not startswith(basename(input.exec.path), input.program)
}

basename(p) := regex.replace(p, `^.*/`, "")
