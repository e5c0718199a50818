package termgate

# Classes of harm beyond the first rules: secrets read or sent, reverse
# shells, setuid bits, the kernel's SysRq, containers removed en masse or
# the engine's socket, system packages purged, crontabs installed, remote
# branches deleted and history rewritten, processes killed by a looked-up
# pid, deletes by other verbs (mv, shred, tar --remove-files, rsync
# --delete, unlink), and the gateway's own files at their configured
# paths. Every body starts with a guard OPA's rule index uses.

# ---- the gateway's own files ----

# input.shell.gateway_refs are the paths the line names that are, or lie
# under, the gateway's own files (input.gateway.paths: audit log and key,
# recordings, the policy bundle, the log file, the state directory), as
# the engine resolved them against each command's directory.
finding contains {
	"rule": "self.gateway_files",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s is the gateway's own file", [p]),
} if {
	some p in input.shell.gateway_refs
}

# ---- secrets read or sent ----

# The words of a command that may name a credential file: its arguments,
# as written and resolved against its directory, the file of -d @file and
# x=@file, and what it reads by redirection. A word right after an option that
# only uses a key (ssh -i KEY) is not one.
credential_words(c) := ((({w |
	some i, a in c.args
	not after_use_option(c, i)
	not startswith(a, "-")
	some w in {a, resolved(c, a)}
} | {w |
	some a in c.args
	contains(a, "@")
	w := regex.replace(a, `^.*@`, "")
}) | {w |
	some a in c.args
	startswith(a, "-")
	contains(a, "=")
	w := substring(a, indexof(a, "=") + 1, -1)
}) | {r.target | some r in c.redirects; r.op == "<"}) | {w |
	some r in c.redirects
	r.op == "<<<"
	some w in split(r.target, " ")
}

after_use_option(c, i) if c.args[i - 1] in cfg.credential_use_options

credential_glob := concat("", ["{", concat(",", cfg.credential_globs), "}"])

credential(w) if {
	glob.match(credential_glob, ["/"], home_alias(squeezed(w)))
	not credential_example(w)
}

# squeezed(p) is p with its runs of / and its "/./" segments made one /,
# as the kernel reads the path: ~/.aws//credentials and
# ~/.aws/./credentials name ~/.aws/credentials.
squeezed(p) := regex.replace(regex.replace(p, `/(\./)+`, "/"), `/+`, "/")

credential_example(w) if {
	some s in cfg.credential_example_suffixes
	endswith(w, s)
}

credential_reads contains [c.name, w] if {
	"credential_substrings" in input.shell.words_listed
	some c in input.shell.commands
	not "listing_commands" in c.listed
	not "credential_users" in c.listed
	not "data_commands" in c.listed
	c.name != ""
	some w in command_credentials(c)
}

# The engine derives each command's credentials (the words of
# credential_words that are credential(w), as this file defines them) on
# every command of a line whose words_listed holds credential_substrings
# (absent on the others): a lookup instead of a comprehension and a glob
# match per word. A document without them (a bundle's own tests, another
# engine) computes them here.
command_credentials(c) := c.credentials if {
	is_array(c.credentials)
} else := {w |
	some w in credential_words(c)
	credential(w)
}

credential_reads contains [c.name, r.target] if {
	"credential_substrings" in input.shell.words_listed
	some c in input.shell.commands
	c.name == ""
	some r in c.redirects
	r.op == "<"
	credential(r.target)
}

finding contains {
	"rule": "file.credential_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s reads the credential file %s", [r[0], r[1]]),
} if {
	"credential_substrings" in input.shell.words_listed
	some r in credential_reads
	not credential_sent
}

finding contains {
	"rule": "file.credential_send",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s sends the credential file %s over the network", [r[0], r[1]]),
} if {
	"credential_substrings" in input.shell.words_listed
	some r in credential_reads
	credential_sent
}

# A line sends what it reads when it also runs a network client.
credential_sent if "network_clients" in input.shell.listed

# ---- reverse and bind shells ----

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("a shell's input or output goes to the network socket %s", [r.target]),
} if {
	"dev_net_prefixes" in input.shell.words_listed
	some c in input.shell.commands
	some r in c.redirects
	strings.any_prefix_match(r.target, cfg.dev_net_prefixes)
	shell_on_socket
}

shell_on_socket if "interpreters" in input.shell.listed

shell_on_socket if "exec" in input.shell.names

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s runs a program for whoever connects", [c.name]),
} if {
	"net_shell_clients" in input.shell.listed
	some ix in input.shell.list_commands.net_shell_clients
	c := input.shell.commands[ix]
	netcat_exec(c)
}

netcat_exec(c) if {
	c.name in {"nc", "ncat", "netcat"}
	some f in c.flags
	f in {"e", "c", "--exec", "--sh-exec", "--lua-exec"}
}

netcat_exec(c) if {
	c.name == "socat"
	some a in c.args
	regex.match(`(?i)(^|[!,])(exec|system):`, a)
}

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": "a network client is wired to a shell (a fifo, or a pipe into an interpreter)",
} if {
	"net_shell_clients" in input.shell.listed
	wired_to_shell
}

wired_to_shell if input.shell.pipe_to_interpreter

wired_to_shell if "mkfifo" in input.shell.names

wired_to_shell if {
	"mknod" in input.shell.names
	some ix in input.shell.name_commands.mknod
	c := input.shell.commands[ix]
	"p" in c.args
}

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s code opens a socket and runs a shell or a program on it", [c.name]),
} if {
	# The words of the line hold both kinds of call (the lists hold the
	# patterns' words, any case): an unanchored case-blind pattern takes
	# Go 15–25 µs to miss on a 100-byte program, so the rule asks only
	# lines whose words might match.
	"reverse_shell_socket_substrings" in input.shell.words_listed
	"reverse_shell_run_substrings" in input.shell.words_listed
	"interpreters" in input.shell.listed
	some ix in input.shell.list_commands.interpreters
	c := input.shell.commands[ix]
	some a in c.args
	regex.match(`(?i)(socket|fsockopen|tcpsocket|net\.connect|createconnection|/inet/tcp/|/inet/udp/)`, a)
	regex.match(`(?i)(dup2|subprocess|pty\.spawn|exec|spawn|system|popen|/bin/(ba|z|da|k)?sh|cmd\.exe|getline)`, a)
}

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s opens a network connection for the shell", [c.name]),
} if {
	"ztcp" in input.shell.names
	some ix in input.shell.name_commands.ztcp
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "net.reverse_shell",
	"action": "deny",
	"severity": "critical",
	"reason": "gawk opens a network socket (/inet/)",
} if {
	"awk_programs" in input.shell.listed
	some ix in input.shell.list_commands.awk_programs
	c := input.shell.commands[ix]
	some a in c.args
	regex.match(`/inet[46]?/(tcp|udp)/`, a)
}

# ---- setuid and setgid bits ----

finding contains {
	"rule": "perm.setuid",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s sets the setuid bit: the file runs as its owner", [name, m]),
} if {
	"mode_commands" in input.shell.listed
	some [name, m] in line_modes
	setuid_mode(m)
}

finding contains {
	"rule": "perm.setgid",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("%s %s sets the setgid bit", [name, m]),
} if {
	"mode_commands" in input.shell.listed
	some [name, m] in line_modes
	setgid_mode(m)
}

# line_mode holds the modes the line's commands set, each [command, mode]:
# chmod's (and gchmod's) arguments, and the -m/--mode values of the
# commands that may set a mode with them: -m MODE, the mode joined to it
# (-m4755, -m=4755) or to a cluster of flags before it (install -Dm4755,
# -Dm 4755), --mode MODE and --mode=MODE, and their abbreviations (--mo,
# --mod). Those commands are the other mode_commands and those whose name
# is computed at run time: another program's -m is not a mode (git commit
# -m 4755), nor is tar's (--touch). But when one of them takes arguments
# supplied as it runs ("$@", a substitution, xargs), the mode may come
# from any command of the line (set -- -m 4755 x; install "$@", echo -m
# 4755 x | xargs install, f(){ install "$@"; }; f -m 4755 x), and every
# command's -m is read. One set a decision for both rules above, rather
# than a function each calls for every command. The engine derives the
# set by the same bodies (input.shell.modes: these three bodies, with a
# regular expression an argument, put the lines with a mode command at
# the top of the slowest inputs); a document without it computes it here.
line_modes := {m | some m in input.shell.modes} if {
	is_array(input.shell.modes)
} else := {m | some m in line_mode}

line_mode contains [c.name, m] if {
	some name in chmod_programs
	some ix in input.shell.name_commands[name]
	c := input.shell.commands[ix]
	some m in c.args
}

line_mode contains [c.name, m] if {
	some ix in mode_readers
	c := input.shell.commands[ix]
	some i, a in c.args
	mode_option(c.name, a)
	m := c.args[i + 1]
}

line_mode contains [c.name, m] if {
	some ix in mode_readers
	c := input.shell.commands[ix]
	some a in c.args
	startswith(a, "-")
	some m in mode_joined(c.name, a)
}

# chmod's names, whose every argument is a mode, and the programs whose
# -m is not a mode but --touch.
chmod_programs := {"chmod", "gchmod"}

touch_m_programs := {"tar", "gtar", "bsdtar"}

# The commands whose -m and --mode are read, by index: the mode setters,
# and every command of the line when a mode setter takes arguments
# supplied as it runs.
mode_readers contains ix if {
	some ix in mode_setters
}

mode_readers contains ix if {
	some j in mode_setters
	args_supplied(input.shell.commands[j])
	some ix, _ in input.shell.commands
}

# The mode setters: the mode_commands other than chmod and gchmod (whose
# every argument is read), and the commands whose name is computed at
# run time.
mode_setters contains ix if {
	some ix in input.shell.list_commands.mode_commands
	not input.shell.commands[ix].name in chmod_programs
}

mode_setters contains ix if {
	some name, ixs in input.shell.name_commands
	computed_name(name)
	some ix in ixs
}

# A command whose arguments are supplied as it runs: one holds a
# parameter or a substitution, or xargs or parallel runs it.
args_supplied(c) if {
	some a in c.args
	contains(a, "$")
}

args_supplied(c) if {
	some a in c.args
	contains(a, "`")
}

args_supplied(c) if {
	some w in c.wrappers
	w in {"xargs", "parallel"}
}

# An option of the command named name whose value, the next argument, is
# a mode: --mode and its abbreviations; -m, alone or ending a cluster of
# flags, except tar's, which is --touch.
mode_option(_, a) if a in {"--m", "--mo", "--mod", "--mode"}

mode_option(name, a) if {
	not name in touch_m_programs
	regex.match(`^-[A-Za-z]*m$`, a)
}

# The mode an argument carries itself: --mode=MODE (or --mo=MODE, …),
# -mMODE, -m=MODE (the value is =MODE), -DmMODE.
mode_joined(name, a) := [m[1] | some m in regex.find_all_string_submatch_n(`^--m(?:o(?:de?)?)?=(.*)$`, a, 1)] if startswith(a, "--")

else := [m[1] | some m in regex.find_all_string_submatch_n(`^-[A-Za-z]*?m(.+)$`, a, 1)] if not name in touch_m_programs

# A mode that sets the setuid bit: octal, alone or after = or + (chmod
# =4755, +4000, install -m=4755), or symbolic (u+s).
setuid_mode(m) if regex.match(`^[+=]?0*[4-7][0-7]{3}$`, m)

setuid_mode(m) if {
	some part in split(m, ",")
	regex.match(`^[ua]*[+=][rwxXt]*s`, part)
}

setgid_mode(m) if regex.match(`^[+=]?0*[23][0-7]{3}$`, m)

setgid_mode(m) if {
	some part in split(m, ",")
	regex.match(`^[go]*g[go]*[+=][rwxXt]*s`, part)
}

# ---- the kernel's magic SysRq ----

write_finding contains {
	"rule": "system.sysrq",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("writes to %s: the kernel's SysRq reboots, crashes or kills at once", [t]),
} if {
	"sysrq_paths" in input.shell.words_listed
	some t in write_targets
	t in cfg.sysrq_paths
}

finding contains {
	"rule": "system.sysrq",
	"action": "deny",
	"severity": "critical",
	"reason": "sysctl changes the kernel's SysRq",
} if {
	"sysctl" in input.shell.names
	some ix in input.shell.name_commands.sysctl
	c := input.shell.commands[ix]
	some a in c.args
	startswith(a, "kernel.sysrq=")
}

# Kernel settings that name a program the kernel runs as root: a pipe in
# core_pattern, the modprobe or hotplug helper.
finding contains {
	"rule": "system.kernel_helper",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("sysctl %s makes the kernel run a program as root", [a]),
} if {
	"sysctl" in input.shell.names
	some ix in input.shell.name_commands.sysctl
	c := input.shell.commands[ix]
	some a in c.args
	regex.match(`^kernel\.(core_pattern=\||modprobe=|hotplug=)`, a)
}

write_finding contains {
	"rule": "system.kernel_helper",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("writes to %s: the kernel runs the program it names as root", [t]),
} if {
	"kernel_helper_paths" in input.shell.words_listed
	some t in write_targets
	t in cfg.kernel_helper_paths
}

# ---- containers ----

finding contains {
	"rule": "container.volume_wipe",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s deletes container volumes", [c.name, concat(" ", c.args)]),
} if {
	"container_engines" in input.shell.listed
	some ix in input.shell.list_commands.container_engines
	c := input.shell.commands[ix]
	volume_wipe(c)
}

volume_wipe(c) if {
	"volume" in c.args
	some v in c.args
	v in {"prune", "rm"}
}

volume_wipe(c) if {
	"prune" in c.args
	"--volumes" in c.flags
}

volume_wipe(c) if {
	"down" in c.args
	has_flag(c, "v", "--volumes")
}

volume_wipe(c) if {
	"system" in c.args
	"reset" in c.args
}

finding contains {
	"rule": "container.mass_removal",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s %s removes or stops containers or images en masse", [c.name, concat(" ", c.args)]),
} if {
	"container_engines" in input.shell.listed
	some ix in input.shell.list_commands.container_engines
	c := input.shell.commands[ix]
	mass_removal(c)
}

mass_removal(c) if {
	some v in c.args
	v in {"rm", "rmi", "kill", "stop"}
	targets_looked_up(c)
}

mass_removal(c) if {
	"prune" in c.args
	some a in c.args
	a in {"system", "container"}
}

mass_removal(c) if {
	"image" in c.args
	"prune" in c.args
	has_flag(c, "a", "--all")
}

targets_looked_up(c) if "xargs" in c.wrappers

targets_looked_up(c) if {
	c.dynamic
	some a in c.args
	contains(a, "$(")
}

targets_looked_up(c) if {
	c.dynamic
	some a in c.args
	contains(a, "`")
}

finding contains {
	"rule": "container.engine_socket",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s reaches the container engine's socket: root on the host", [c.name]),
} if {
	"engine_socket_substrings" in input.shell.words_listed
	some c in input.shell.commands
	not "listing_commands" in c.listed
	not "data_commands" in c.listed
	not "container_engines" in c.listed # their mounts are container.host_escape
	some a in array.concat(c.args, [r.target | some r in c.redirects])
	some s in cfg.engine_socket_substrings
	contains(a, s)
}

# ---- packages the system needs ----

finding contains {
	"rule": "system.package_purge",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s removes %s, which the system needs to boot or to be managed", [c.name, p]),
} if {
	"package_managers" in input.shell.listed
	some ix in input.shell.list_commands.package_managers
	c := input.shell.commands[ix]
	package_removal(c)
	some p in c.operands
	essential_package(p)
}

package_removal(c) if {
	some v in c.args
	v in {"remove", "purge", "autoremove", "erase", "del", "uninstall", "rm", "autopurge"}
}

package_removal(c) if {
	c.name in {"dpkg", "rpm", "pacman"}
	some f in c.flags
	f in {"r", "P", "e", "R", "--remove", "--purge", "--erase"}
}

# A package named, or a pattern (libc6*, ^lib.*) that names one.
essential_package(p) if regex.replace(p, `[:=].*$`, "") in cfg.essential_packages

essential_package(p) if {
	regex.match(`[*?^$\[]`, p)
	prefix := regex.replace(regex.replace(p, `^\^`, ""), `[*?.\[$].*$`, "")
	some e in cfg.essential_packages
	startswith(e, prefix)
}

# ---- crontabs ----

finding contains {
	"rule": "system.crontab_install",
	"action": "confirm",
	"severity": "high",
	"reason": "crontab installs a schedule that runs commands nobody judges",
} if {
	"crontab" in input.shell.names
	some ix in input.shell.name_commands.crontab
	c := input.shell.commands[ix]
	not has_flag(c, "l", "--list")
	not has_flag(c, "r", "--remove")
	crontab_installs(c)
}

crontab_installs(c) if count(c.operands) > 0

crontab_installs(c) if "-" in c.args

crontab_installs(c) if "e" in c.flags
