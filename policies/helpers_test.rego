package termgate_test

import data.termgate

# c builds one parsed command, as the gateway's shell parser produces it,
# with what the engine derives: the flags and operands of its arguments
# and the lists that hold its name. (A false flag and an empty path are
# absent, as in the engine's documents.)
c(name, args) := {
	"name": name, "args": args, "wrappers": [], "redirects": [], "assigns": [],
	"listed": sort({k | some k, l in data.termgate.lists; holds(k, l, name)}),
	"flags": sort({f | some a in options(args); some f in flags_of(a)}),
	"operands": array.concat(
		[a | some a in options(args); not startswith(a, "-")],
		array.slice(args, count(options(args)) + 1, count(args)),
	),
}

# options are the arguments before "--".
options(args) := array.slice(args, 0, min({i | some i, a in args; a == "--"} | {count(args)}))

flags_of(a) := {split(a, "=")[0]} if startswith(a, "--")

flags_of(a) := {x | some x in split(substring(regex.find_n(`^-[a-zA-Z0-9]+`, a, 1)[0], 1, -1), "")} if {
	not startswith(a, "--")
	regex.match(`^-[a-zA-Z0-9]`, a)
}

# sh builds a parsed line from commands, every flag off (absent), with what
# the engine derives from the commands (names, listed, words_listed,
# list_commands, name_commands, and dynamic when a command is). Like the
# engine's, its words_listed holds the lists that hold a file the line
# writes (dd of=/dev/sda writes /dev/sda), as the bundle's write_target
# rules find them.
sh(cmds) := object.union(line, {"words_listed": sort({k | some k in line.words_listed} | written_listed(line))}) if {
	line := sh_words(cmds)
}

written_listed(line) := {k |
	some t in data.termgate.write_target with input as {"shell": line}
	some k, l in data.termgate.lists
	holds(k, l, t)
}

sh_words(cmds) := object.union(
	{
		"commands": cmds, "recursive_functions": [],
		"names": sort({x.name | some x in cmds}),
		"listed": sort({k | some k, l in data.termgate.lists; some x in cmds; holds(k, l, x.name)}),
		"words_listed": sort({k | some k, l in data.termgate.lists; some x in cmds; some w in words(x); holds(k, l, w)}),
		"list_commands": {k: [i | some i, x in cmds; holds(k, l, x.name)] |
			some k, l in data.termgate.lists
			some x in cmds
			holds(k, l, x.name)
		},
		"name_commands": {x.name: [i | some i, y in cmds; y.name == x.name] | some x in cmds},
	},
	{"dynamic": true | some x in cmds; x.dynamic},
)

# words are a command's arguments, redirections' operators and targets,
# and assigned names.
# (with the resolved paths of its operands and redirections, as the
# engine marks them too)
words(x) := array.concat(
	array.concat(array.concat(x.args, [w | some r in x.redirects; some w in [r.op, r.target]]), x.assigns),
	array.concat(object.get(x, "paths", []), [r.path | some r in x.redirects; r.path]),
)

# holds: list k (entries l) holds s: a list named *_prefixes holds every
# string that starts with one of its entries, one named *_substrings every
# string that contains one (ignoring case), any other its entries.
holds(k, l, s) if {
	not endswith(k, "_prefixes")
	not endswith(k, "_substrings")
	s in l
}

holds(k, l, s) if {
	endswith(k, "_prefixes")
	strings.any_prefix_match(s, l)
}

holds(k, l, s) if {
	endswith(k, "_substrings")
	some e in l
	contains(lower(s), lower(e))
}

# text_listed: the lists that hold the text, as the engine derives them.
text_listed(text) := sort({k | some k, l in data.termgate.lists; holds(k, l, text)})

# with_text gives a document its text, and what the engine derives from it.
with_text(doc, text) := object.union(doc, {"text": text, "text_listed": text_listed(text)})

# program_listed: the lists that hold the program, as the engine derives them.
program_listed(program) := sort({k | some k, l in data.termgate.lists; holds(k, l, program)})

bash(cmds) := {"action": "input", "program": "bash", "program_listed": program_listed("bash"), "text": "", "text_listed": [], "shell": sh(cmds)}

bash_flags(cmds, flags) := object.union(bash(cmds), {"shell": object.union(sh(cmds), flags)})

typed(program, text) := {"action": "input", "program": program, "program_listed": program_listed(program), "text": text, "text_listed": text_listed(text)}

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

# hosts gives a parsed line the hosts its commands name, as the engine
# derives them (canonical spellings), and the lists that hold them.
hosts(doc, hs) := object.union(doc, {"shell": object.union(doc.shell, {
	"hosts": hs,
	"words_listed": sort({k | some k, l in data.termgate.lists; some h in hs; holds(k, l, h)} | {k | some k in doc.shell.words_listed}),
})})

# at gives a parsed line the directory its commands run in, their
# operands resolved against it, and the lists that hold those (as the
# engine does for plain names).
at(doc, cwd) := object.union(doc, {"shell": object.union(doc.shell, {
	"commands": [object.union(x, {
		"cwd": cwd,
		"paths": [p | some o in x.operands; p := resolve(cwd, o)],
	}) |
		some x in doc.shell.commands
	],
	"words_listed": sort({k |
		some k, l in data.termgate.lists
		some x in doc.shell.commands
		some o in x.operands
		holds(k, l, resolve(cwd, o))
	} | {k | some k in doc.shell.words_listed}),
})})

resolve(cwd, o) := o if startswith(o, "/")

else := o if startswith(o, "~")

else := cwd if o == "."

else := concat("/", [trim_right(cwd, "/"), o])

# sql_doc builds input.sql as the gateway derives it: the statements, and
# the sorted set of their classes.
sql_doc(stmts) := {"dialect": "postgres", "statements": stmts, "classes": sort({k | some s in stmts; some k in s.classes})}

stmt(text, verb, classes) := {"text": text, "verb": verb, "classes": classes}

# typed_sql: SQL typed into a client, with the statements the gateway found.
typed_sql(program, text, stmts) := object.union(typed(program, text), {"sql": sql_doc(stmts)})

# code_doc builds input.code as the gateway derives it: names from the
# calls, listed from the names and modules; flags (dynamic, dynamic_shell,
# reverse_shell, parse_error, …) as given.
code_doc(calls, modules, flags) := object.union(
	{
		"languages": ["python"], "calls": calls, "names": sort({x.name | some x in calls}), "modules": modules,
		"shell_commands": [], "writes": [], "deletes": [], "dynamic_calls": [],
		"listed": sort({k | some k, l in data.termgate.lists; some n in array.concat([x.name | some x in calls], modules); holds(k, l, n)}),
	},
	flags,
)

call(name, args) := {"name": name, "args": args}

# typed_code: code typed into a REPL, with the code document the gateway
# derived and the shell commands it amounts to (embedded).
typed_code(program, text, code, cmds) := object.union(
	typed(program, text),
	{"code": code, "shell": object.union(sh(cmds), {"embedded": true})},
)
