# termgate's default policy: every input to a terminal is judged here.
#
# Rules add findings: {"rule", "action" (deny or confirm), "severity",
# "reason"}. The decision is the most severe finding: deny beats confirm,
# then critical > high > medium > low; no finding allows. Lists live in
# data.json (data.termgate.lists) so operators extend them without Rego.
package termgate

severity_rank := {"low": 1, "medium": 2, "high": 3, "critical": 4}

action_rank := {"confirm": 1, "deny": 2}

score(f) := (action_rank[f.action] * 10) + severity_rank[f.severity]

# The full set of findings, evaluated once.
findings := {f | some f in finding}

top_score := max({score(f) | some f in findings})

top_rule := min({f.rule | some f in findings; score(f) == top_score})

decision := object.union(f, {"profile": profile}) if {
	some f in findings
	f.rule == top_rule
	score(f) == top_score
}

decision := {
	"action": "allow",
	"rule": "allow.default",
	"reason": "no rule matched",
	"severity": "low",
	"profile": profile,
} if {
	count(findings) == 0
}

cfg := data.termgate.lists

# The sandbox profile a new session gets: network programs get "network".
default profile := "default"

profile := "network" if {
	input.action == "start"
	some c in input.shell.commands
	c.name in data.termgate.network_programs
}

# ---- helpers over parsed shell commands ----

default commands := []

commands := input.shell.commands

# has_flag: a short flag inside a cluster (-rf), or the long one.
has_flag(c, short, _) if {
	some a in c.args
	regex.match(`^-[a-zA-Z0-9]+$`, a)
	contains(a, short)
}

has_flag(c, _, long) if {
	some a in c.args
	long != ""
	a == long
}

has_flag(c, _, long) if {
	some a in c.args
	long != ""
	startswith(a, concat("", [long, "="]))
}

operands(c) := [a | some a in c.args; not startswith(a, "-")]

# clean strips trailing slashes and dots that leave a path the same place.
clean(p) := "/" if regex.match(`^/[/.]*$`, p)

clean(p) := trim_right(p, "/") if {
	not regex.match(`^/[/.]*$`, p)
	endswith(p, "/")
}

clean(p) := p if {
	not regex.match(`^/[/.]*$`, p)
	not endswith(p, "/")
}

protected(p) if clean(p) in cfg.protected_paths

protected(p) if {
	endswith(p, "/*")
	clean(trim_suffix(p, "/*")) in cfg.protected_paths
}

protected(p) if {
	endswith(p, "/.")
	clean(trim_suffix(p, "/.")) in cfg.protected_paths
}

home_alias(p) := concat("", ["~", substring(p, 5, -1)]) if startswith(p, "$HOME")

home_alias(p) := concat("", ["~", substring(p, 7, -1)]) if startswith(p, "${HOME}")

home_alias(p) := p if {
	not startswith(p, "$HOME")
	not startswith(p, "${HOME}")
}

sensitive_path(p) if {
	some g in cfg.sensitive_write_globs
	glob.match(g, ["/"], home_alias(p))
}

# Targets a command writes to: redirections and the file arguments of
# commands that write. Evaluated once, as a complete set.
write_targets := {t | some t in write_target}

write_target contains r.target if {
	some c in commands
	some r in c.redirects
	r.op in {">", ">>", "&>", "&>>", ">|", "<>"}
}

write_target contains t if {
	some c in commands
	c.name == "tee"
	some t in operands(c)
}

write_target contains t if {
	some c in commands
	c.name in {"cp", "mv", "install", "ln", "rsync"}
	ops := operands(c)
	count(ops) >= 2
	t := ops[count(ops) - 1]
}

write_target contains t if {
	some c in commands
	c.name in {"truncate", "touch", "shred"}
	some t in operands(c)
}

write_target contains t if {
	some c in commands
	c.name in {"sed", "perl", "ruby"}
	has_flag(c, "i", "--in-place")
	some t in in_place_files(c)
}

# The files of sed -i: the first operand is the script unless -e gives it.
in_place_files(c) := operands(c) if has_flag(c, "e", "--expression")

in_place_files(c) := array.slice(operands(c), 1, count(operands(c))) if not has_flag(c, "e", "--expression")

write_target contains t if {
	some c in commands
	c.name == "dd"
	some a in c.args
	startswith(a, "of=")
	t := substring(a, 3, -1)
}

# The text, lower-cased once for the rules that scan it.
lower_text := lower(input.text)
