package termgate_test

confined(doc) := object.union(doc, {"session": {"id": "s-1", "profile": "default", "confined": true}})

start_line(cmds, sandboxed) := {
	"action": "start", "program": "bash", "program_listed": program_listed("bash"), "text": "", "text_listed": [],
	"shell": sh(cmds), "start": {"argv": ["bash"], "cwd": "/w", "env": [], "confined": sandboxed},
}

test_privilege_refused_at_once_where_it_cannot_work if {
	denied_by(confined(bash([c("sudo", ["apt", "install", "x"]), wrapped(c("apt", ["install", "x"]), ["sudo"])])), "privilege.escalation")
	denied_by(confined(bash([c("su", ["-"])])), "privilege.escalation")
	denied_by(confined(bash([c("doas", ["ls"])])), "privilege.escalation")
	denied_by(confined(bash([c("pkexec", ["ls"])])), "privilege.escalation")
	decide(confined(bash([c("sudo", ["ls"])]))).reason == "sudo cannot gain privileges here: the session is confined (no capabilities, no_new_privs), so it would only fail; an operator who wants it must give such sessions an unconfined profile"
}

test_privilege_asked_where_it_can_work if {
	# Not confined: the human is asked, as before.
	confirm_by(bash([c("sudo", ["ls"])]), "privilege.escalation")
	confirm_by(object.union(bash([c("sudo", ["ls"])]), {"session": {"id": "s-1", "profile": "none"}}), "privilege.escalation")
}

test_privilege_at_start if {
	denied_by(start_line([c("sudo", ["-i"])], true), "privilege.escalation")
	confirm_by(start_line([c("sudo", ["-i"])], false), "privilege.escalation")

	# An operator's policy that picks an unconfined profile for the start:
	# the human is asked.
	confirm_by(start_line([c("sudo", ["-i"])], true), "privilege.escalation") with data.termgate.profiles.default.unconfined as true
}

test_privilege_commands_without_sudo_are_not_judged_here if {
	allowed(confined(bash([c("ls", ["-l"])])))
}
