package termgate

# ---- privileges a session cannot have ----
#
# A confined session holds no capability and runs with no_new_privs: a
# setuid program (sudo, su, doas, pkexec) gains nothing in it, so such a
# command can only fail. Asking a human to approve it would be a false
# promise, so it is refused at once, with the reason. (Where the session
# is not confined — the operator's policy chose an unconfined profile,
# or the gateway runs with --sandbox=off — privilege.escalation in
# shell.rego asks the human instead.)

finding contains {
	"rule": "privilege.escalation",
	"action": "deny",
	"severity": "medium",
	"reason": sprintf("%s cannot gain privileges here: the session is confined (no capabilities, no_new_privs), so it would only fail; an operator who wants it must give such sessions an unconfined profile", [c.name]),
} if {
	"privilege_commands" in input.shell.listed
	no_privileges
	some ix in input.shell.list_commands.privilege_commands
	c := input.shell.commands[ix]
}

# no_privileges: the session the input goes to runs confined, or the one
# a start would make will (the gateway confines, and the profile this
# policy picks for it is not an unconfined one).
no_privileges if input.session.confined

no_privileges if {
	input.action == "start"
	input.start.confined
	not data.termgate.profiles[profile].unconfined
}
