package termgate_test

import data.termgate

# c builds one parsed command, as the gateway's shell parser produces it.
c(name, args) := {"name": name, "path": "", "args": args, "wrappers": [], "dynamic": false, "redirects": [], "assigns": []}

# sh builds a parsed line from commands, every flag off.
sh(cmds) := {
	"commands": cmds, "pipes": false, "pipe_to_interpreter": false, "decode_to_interpreter": false,
	"substitutions": false, "process_substitution": false, "eval": false, "background": false,
	"recursive_functions": [], "normalized": false, "parse_error": "", "incomplete": false, "embedded": false,
	"names": {x.name: true | some x in cmds},
	"listed": {k: true | some k, l in data.termgate.lists; some x in cmds; x.name in l},
}

bash(cmds) := {"action": "input", "program": "bash", "text": "", "secret": false, "shell": sh(cmds)}

bash_flags(cmds, flags) := object.union(bash(cmds), {"shell": object.union(sh(cmds), flags)})

typed(program, text) := {"action": "input", "program": program, "text": text, "secret": false}

redir(cmd, op, target) := object.union(cmd, {"redirects": [{"op": op, "target": target}]})

wrapped(cmd, wrappers) := object.union(cmd, {"wrappers": wrappers})

decide(doc) := d if {
	d := termgate.decision with input as doc
}

denied_by(doc, rule) if {
	d := decide(doc)
	d.action == "deny"
	d.rule == rule
}

confirm_by(doc, rule) if {
	d := decide(doc)
	d.action == "confirm"
	d.rule == rule
}

allowed(doc) if decide(doc).action == "allow"
