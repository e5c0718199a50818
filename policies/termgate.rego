# termgate's default policy: every input to a terminal is judged here.
#
# Rules add findings: {"rule", "action" (deny or confirm), "severity",
# "reason"}. The decision is the most severe finding: deny beats confirm,
# then critical > high > medium > low; no finding allows. Lists live in
# data.json (data.termgate.lists) so operators extend them without Rego.
package termgate

# The findings, most severe first: deny beats confirm, then severity
# (critical > high > medium > low), then the rule id, then the finding
# itself, so the decision is always one. A finding with an unknown action
# or severity has no rank: if it is the only one, the decision is
# undefined, and the engine denies. (The rank is one lookup in a literal
# table rather than a sum of two, or a function: each call and each
# arithmetic builtin costs more than the lookup.)
ranked := sort([[
	{
		"deny": {"critical": 0, "high": 1, "medium": 2, "low": 3},
		"confirm": {"critical": 10, "high": 11, "medium": 12, "low": 13},
	}[f.action][f.severity],
	f.rule, f,
] |
	some f in findings
])

# findings is the set of findings, for the rules here to refer to. Every
# reference to finding itself makes OPA look its hundred-odd rules up in
# the rule index again before it reads its cache; a reference to this
# rule looks up one rule.
findings := finding

# METADATA
# title: The gateway's decision on one input
# description: >-
#   What termgate asks of the bundle (query data.termgate.decision): an
#   object with action (allow, deny or confirm), rule, reason, severity and
#   profile. No finding allows; one finding decides; of more, the first
#   ranked does. An exec of a line the human confirmed, with nothing
#   worse than a confirm, is allowed without asking again. (The else chain spares the ranking for the common cases.
#   A finding with an unknown action or severity decides nothing, alone or
#   ranked.)
# entrypoint: true
decision := {
	"action": "allow",
	"rule": "exec.confirmed_line",
	"reason": sprintf("a program of the line the human confirmed (%s)", [concat(", ", sort({f.rule | some f in findings}))]),
	"severity": "low",
	"profile": profile,
} if {
	# An exec of the line a human confirmed is not asked about again (exec.rego).
	input.exec.line_confirmed
	count(findings) > 0
	exec_confirmed_by_line
} else := {
	"action": "allow",
	"rule": "allow.default",
	"reason": "no rule matched",
	"severity": "low",
	"profile": profile,
} if {
	count(findings) == 0
} else := object.union(f, {"profile": profile}) if {
	count(findings) == 1
	some f in findings
	f.action in {"confirm", "deny"}
	f.severity in {"low", "medium", "high", "critical"}
} else := object.union(ranked[0][2], {"profile": profile})

cfg := data.termgate.lists

# The rules ask each command's lists (c.listed), and find one list's or
# one name's commands in input.shell.list_commands and name_commands, all
# of which the engine derives on every decision, whatever the caller
# sent. A document without them (from an engine older than this bundle)
# would pass every rule that asks: it is denied instead. The newest of
# them stands for all (the engine derives all or none, and an engine
# that derives list_commands derives the rest): each check is a rule
# body OPA evaluates on every line, and one costs about 5 % of a short
# line's decision.
finding contains {
	"rule": "policy.input_underived",
	"action": "deny",
	"severity": "high",
	"reason": "the input document lacks what the engine derives for each line (listed, list_commands, name_commands): this bundle needs an engine that derives them",
} if {
	not is_object(object.get(input.shell, "list_commands", null))
}

# The sandbox profile a new session gets, chosen by what the session
# runs: its program, after the wrappers that only run the next command
# (env, nice, nohup, exec, timeout, …) and the gateway's own sh -c around
# a shell line. "network" only for a start that runs exactly one program,
# a network program (ssh, psql, git, …) and neither a shell nor an
# interpreter; a line of several commands, a pipeline, a substitution or
# a background job gets "default", whichever of its commands is a
# network program. (So a general shell never gets ~/.ssh. Both reach the
# network only through the gateway's egress proxy, each new destination
# judged by the connect rules in egress.rego.)
default profile := "default"

profile := "network" if {
	input.action == "start"
	count(start_programs) == 1
	some c in start_programs
	c.name in data.termgate.network_programs
	not "interpreters" in c.listed
	not start_line_hides
}

# The programs a start runs: its commands less the wrappers, and less a
# shell that only runs the line it was handed with -c.
start_programs := [c |
	some c in input.shell.commands
	not "transparent_wrappers" in c.listed
	not runs_line(c)
]

runs_line(c) if {
	"shells" in c.listed
	"c" in c.flags
}

# A start line that runs more than its commands show, or runs them in a
# way a single program does not.
start_line_hides if input.shell.pipes

start_line_hides if input.shell.substitutions

start_line_hides if input.shell.background

start_line_hides if input.shell.parse_error

start_line_hides if input.shell.incomplete

start_line_hides if count(input.shell.recursive_functions) > 0

# ---- helpers over parsed shell commands ----
#
# Rules iterate input.shell.commands directly: a rule of its own for it
# would be one more rule to evaluate in every decision.

# has_flag: a short flag (alone or inside a cluster such as -rf) or the
# long one. The gateway derives c.flags and c.operands from c.args.
has_flag(c, short, _) if short in c.flags

has_flag(c, _, long) if long in c.flags

# clean strips trailing slashes and dots that leave a path the same place.
clean(p) := "/" if regex.match(`^/[/.]*$`, p)

else := trim_right(p, "/") if endswith(p, "/")

else := p

# protected(p): p names a protected path (protected_by_list). The engine
# derives the answer for every operand of a line's commands, as written
# and resolved, and for their redirections' targets and paths
# (input.shell.path_facts, one lookup: cleaning a path and reading the
# list took 10–15 µs a call); any other string, or a document without
# the facts, is judged here.
protected(p) if input.shell.path_facts[p].protected

protected(p) if {
	not input.shell.path_facts[p]
	protected_by_list(p)
}

protected_by_list(p) if clean(p) in cfg.protected_paths

protected_by_list(p) if {
	endswith(p, "/*")
	clean(trim_suffix(p, "/*")) in cfg.protected_paths
}

protected_by_list(p) if {
	endswith(p, "/.")
	clean(trim_suffix(p, "/.")) in cfg.protected_paths
}

# targets are a command's operands as written and as resolved against its
# working directory (c.paths): cd /; rm -rf usr removes /usr.
targets(c) := array.concat(c.operands, object.get(c, "paths", []))

home_alias(p) := concat("", ["~", substring(p, 5, -1)]) if startswith(p, "$HOME")

else := concat("", ["~", substring(p, 7, -1)]) if startswith(p, "${HOME}")

else := p

# The sensitive globs as one {a,b,…} alternation: one match per path, not
# one per glob. (A glob in the list must not hold a comma or braces.)
sensitive_glob := concat("", ["{", concat(",", cfg.sensitive_write_globs), "}"])

# sensitive_path(p): p matches one of the sensitive globs
# (sensitive_by_glob); the engine derives it like protected(p).
sensitive_path(p) if input.shell.path_facts[p].sensitive

sensitive_path(p) if {
	not input.shell.path_facts[p]
	sensitive_by_glob(p)
}

sensitive_by_glob(p) if glob.match(sensitive_glob, ["/"], home_alias(p))

# Targets a command writes to: redirections and the file arguments of
# commands that write (the write_target bodies below). Evaluated once, as
# a complete set. The engine derives the list by the same bodies
# (input.shell.write_targets: building the set here took 30–40 µs of every
# line that writes); a document without it computes it here.
write_targets := {t | some t in input.shell.write_targets} if {
	is_array(input.shell.write_targets)
} else := {t | some t in write_target}

# The rules on written files (file.sensitive_write, disk.raw_write) add to
# write_finding, which finding takes in under the guard of each way a line
# writes, the same guards as write_target's bodies below: OPA's index skips
# them all for a line that writes nothing. A new write_target body needs
# its guard here too (test_every_write_source_is_judged).
finding contains f if {
	"write_redirects" in input.shell.words_listed
	some f in write_finding
}

finding contains f if {
	"tee" in input.shell.names
	some f in write_finding
}

finding contains f if {
	"copy_commands" in input.shell.listed
	some f in write_finding
}

finding contains f if {
	"file_commands" in input.shell.listed
	some f in write_finding
}

finding contains f if {
	"in_place_editors" in input.shell.listed
	some f in write_finding
}

finding contains f if {
	"dd" in input.shell.names
	some f in write_finding
}

write_target contains t if {
	"write_redirects" in input.shell.words_listed
	some c in input.shell.commands
	some r in c.redirects
	r.op in cfg.write_redirects
	some t in {r.target, object.get(r, "path", r.target)}
}

write_target contains t if {
	"tee" in input.shell.names
	some ix in input.shell.name_commands.tee
	c := input.shell.commands[ix]
	some t in array.concat(c.operands, object.get(c, "paths", []))
}

write_target contains t if {
	"copy_commands" in input.shell.listed
	some ix in input.shell.list_commands.copy_commands
	c := input.shell.commands[ix]
	ops := c.operands
	count(ops) >= 2
	some t in {ops[count(ops) - 1], object.get(c, "paths", ops)[count(ops) - 1]}
}

write_target contains t if {
	"file_commands" in input.shell.listed
	some ix in input.shell.list_commands.file_commands
	c := input.shell.commands[ix]
	some t in array.concat(c.operands, object.get(c, "paths", []))
}

write_target contains t if {
	"in_place_editors" in input.shell.listed
	some ix in input.shell.list_commands.in_place_editors
	c := input.shell.commands[ix]
	has_flag(c, "i", "--in-place")
	some t in in_place_files(c)
}

# The files of sed -i, as written and resolved (its paths, one an
# operand): the first operand is the script unless -e gives it.
in_place_files(c) := array.concat(c.operands, object.get(c, "paths", [])) if has_flag(c, "e", "--expression")

else := array.concat(array.slice(c.operands, 1, count(c.operands)), array.slice(object.get(c, "paths", []), 1, count(c.operands)))

# dd's of=FILE, as written and as resolved against its working directory
# (its paths: cd /dev; dd of=sda writes /dev/sda).
write_target contains t if {
	"dd" in input.shell.names
	some ix in input.shell.name_commands.dd
	c := input.shell.commands[ix]
	some a in array.concat(c.args, object.get(c, "paths", []))
	startswith(a, "of=")
	t := substring(a, 3, -1)
}
