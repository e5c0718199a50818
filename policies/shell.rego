package termgate

# ---- input that cannot be judged as text ----

finding contains {
	"rule": "input.unparseable",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("the line does not parse as shell (%s): it cannot be judged reliably", [input.shell.parse_error]),
} if {
	input.shell.parse_error # absent when the line parses: a guard for OPA's index
	input.shell.parse_error != ""
	not input.shell.embedded
	not input.exec # an exec's sh -c string: each program it runs is judged at its own exec
}

finding contains {
	"rule": "shell.dynamic_command",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("the command name %q is computed at run time", [c.name]),
} if {
	input.shell.dynamic
	not input.exec # an exec's sh -c '"$@"': the program it computes is judged at its own exec
	some c in input.shell.commands
	c.dynamic
	computed_name(c.name)
}

computed_name(n) if contains(n, "$")

# A pattern the shell expands to a file name: /usr/bin/su*o is sudo.
computed_name(n) if regex.match(`[*?\[]`, n)

# ---- recursive / forced delete ----

finding contains {
	"rule": "fs.rm_protected",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("recursive delete of %s", [p]),
} if {
	"delete_commands" in input.shell.listed
	some ix in input.shell.list_commands.delete_commands
	c := input.shell.commands[ix]
	some flag in c.flags
	flag in {"r", "R", "--recursive"} # a recursive delete
	some p in array.concat(c.operands, object.get(c, "paths", [])) # targets(c), without the call
	protected(p)
}

finding contains {
	"rule": "fs.rm_no_preserve_root",
	"action": "deny",
	"severity": "critical",
	"reason": "rm --no-preserve-root",
} if {
	"rm" in input.shell.names
	some ix in input.shell.name_commands.rm
	c := input.shell.commands[ix]
	"--no-preserve-root" in c.args
}

finding contains {
	"rule": "fs.rm_recursive_outside",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("recursive delete of %s, outside the working directory", [p]),
} if {
	"rm" in input.shell.names
	some ix in input.shell.name_commands.rm
	c := input.shell.commands[ix]
	some flag in c.flags
	flag in {"r", "R", "--recursive"} # a recursive delete
	some p in c.operands
	not protected(p)
	outside_cwd(p)
}

# A recursive delete of a relative path from a directory the line does
# not tell (after cd "$d", cd -, popd or a sourced file): the path may
# name a protected one (rm -rf etc, when the cd went to /). Asked, not
# refused: the directory is most often the project's.
finding contains {
	"rule": "fs.rm_unknown_dir",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("recursive delete of %s from a directory the line does not tell (it may be /%s)", [p, p]),
} if {
	"delete_commands" in input.shell.listed
	some ix in input.shell.list_commands.delete_commands
	c := input.shell.commands[ix]
	not c.cwd
	some flag in c.flags
	flag in {"r", "R", "--recursive"} # a recursive delete
	some p in c.operands
	not outside_cwd(p)
	protected_by_list(from_root(p))
}

# CDPATH makes a relative cd search other directories first (CDPATH=/ cd
# home goes to /home), and cdable_vars makes cd take a variable's value,
# in this line and every later one, while the rules resolve a cd by its
# words. A line that names either anywhere (an assignment, read, printf
# -v, a for loop, a nameref, ${CDPATH:=…}) is asked about.
finding contains cdpath_finding if "cdpath_substrings" in input.text_listed

finding contains cdpath_finding if "cdpath_substrings" in input.shell.words_listed

cdpath_finding := {
	"rule": "shell.cdpath",
	"action": "confirm",
	"severity": "medium",
	"reason": "names CDPATH or cdable_vars: a later cd may go elsewhere than its words say",
}

# from_root is a relative path taken from /, its empty and . parts left
# out (./etc and .//etc are /etc).
from_root(p) := concat("/", array.concat([""], [s | some s in split(p, "/"); not s in {"", "."}]))

# (A recursive delete is one of the flags r, R or --recursive: the rules
# test each flag of the command against the three, which a function of
# three bodies did at the cost of a call and a rule lookup a command.)

outside_cwd(p) if startswith(p, "/")

outside_cwd(p) if startswith(p, "~")

outside_cwd(p) if startswith(p, "$")

outside_cwd(p) if contains(concat("", ["/", p, "/"]), "/../")

# A path whose words stay in the working directory but which reaches
# outside it through a symbolic link (ln -s ~ x && rm -rf x/.ssh; rm -rf
# cache/ with cache a link to ~/.cache): the engine's fact, which only it
# can derive from the links.
outside_cwd(p) if input.shell.path_facts[p].leaves

finding contains {
	"rule": "fs.find_delete",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("find -delete under %s", [p]),
} if {
	"find" in input.shell.names
	some ix in input.shell.name_commands.find
	c := input.shell.commands[ix]
	"-delete" in c.args
	some p in c.operands
	outside_cwd(p)
}

# ---- disks, raw devices, mounts ----

finding contains {
	"rule": "disk.format",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s changes disks or filesystems", [c.name]),
} if {
	"disk_commands" in input.shell.listed
	some ix in input.shell.list_commands.disk_commands
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "disk.format",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s changes disks or filesystems", [c.name]),
} if {
	"disk_command_prefixes" in input.shell.listed
	some c in input.shell.commands
	strings.any_prefix_match(c.name, cfg.disk_command_prefixes)
}

write_finding contains {
	"rule": "disk.raw_write",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("writes to the raw device %s", [t]),
} if {
	"raw_device_prefixes" in input.shell.words_listed
	some t in write_targets
	strings.any_prefix_match(t, cfg.raw_device_prefixes)
}

finding contains {
	"rule": "disk.mount",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s changes what is mounted", [c.name]),
} if {
	"mount_commands" in input.shell.listed
	some ix in input.shell.list_commands.mount_commands
	c := input.shell.commands[ix]
	count(c.args) > 0
}

# ---- power, services, processes ----

finding contains {
	"rule": "system.power",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s stops or restarts the machine", [c.name]),
} if {
	"power_commands" in input.shell.listed
	some ix in input.shell.list_commands.power_commands
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "system.power",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s stops or restarts the machine", [c.name, c.args[0]]),
} if {
	"init_commands" in input.shell.listed
	some ix in input.shell.list_commands.init_commands
	c := input.shell.commands[ix]
	c.args[0] in {"0", "6", "1", "s", "S"}
}

finding contains {
	"rule": "system.power",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("systemctl %s stops or restarts the machine", [c.args[0]]),
} if {
	"systemctl" in input.shell.names
	some ix in input.shell.name_commands.systemctl
	c := input.shell.commands[ix]
	c.args[0] in {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue"}
}

finding contains {
	"rule": "system.service_stop",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("systemctl %s changes a service", [verb]),
} if {
	"service_commands" in input.shell.listed
	some ix in input.shell.list_commands.service_commands
	c := input.shell.commands[ix]
	some verb in c.args
	verb in {"stop", "disable", "mask", "restart", "kill", "isolate"}
}

finding contains {
	"rule": "process.kill_broad",
	"action": "deny",
	"severity": "high",
	"reason": "kill of every process (-1) or of init",
} if {
	"kill" in input.shell.names
	some ix in input.shell.name_commands.kill
	c := input.shell.commands[ix]
	not kill_lists(c)
	some a in kill_targets(c)
	a in {"-1", "1", "0", "-0"}
}

# kill -l and -L list signals, and killall -l; they send none. Only the
# option itself: the letters of a signal name (-KILL, -SIGALRM) are no
# list option, and pkill -l kills all the same.
kill_lists(c) if {
	c.name == "kill"
	count(c.args) > 0
	list_option(c.args[0])
}

kill_lists(c) if {
	c.name == "killall"
	some a in c.args
	a in {"-l", "--list"}
}

list_option(a) if a in {"-l", "-L", "--list", "--table"}

list_option(a) if startswith(a, "--list=")

# The processes kill signals: its arguments after the signal (-9, -KILL,
# -s KILL, -n 9, --signal KILL) and "--". kill -1 %% sends signal 1 to a
# job; kill -9 -1 sends signal 9 to every process.
kill_targets(c) := array.slice(c.args, 2, count(c.args)) if {
	c.args[0] in {"-s", "-n", "--signal"}
} else := array.slice(c.args, 1, count(c.args)) if {
	c.args[0] == "--"
} else := kill_after_signal(array.slice(c.args, 1, count(c.args))) if {
	startswith(c.args[0], "-")
	count(c.args) > 1
} else := c.args

kill_after_signal(rest) := array.slice(rest, 1, count(rest)) if rest[0] == "--"

else := rest

finding contains {
	"rule": "process.kill_by_name",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("%s kills processes by name", [c.name]),
} if {
	"kill_by_name_commands" in input.shell.listed
	some ix in input.shell.list_commands.kill_by_name_commands
	c := input.shell.commands[ix]
	count(c.operands) > 0
	not kill_lists(c)
}

finding contains {
	"rule": "process.fork_bomb",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("the function %q calls itself: a fork bomb", [input.shell.recursive_functions[0]]),
} if {
	input.shell.background
	count(input.shell.recursive_functions) > 0
}

finding contains {
	"rule": "system.cron_wipe",
	"action": "confirm",
	"severity": "medium",
	"reason": "crontab -r deletes every scheduled job",
} if {
	"crontab" in input.shell.names
	some ix in input.shell.name_commands.crontab
	c := input.shell.commands[ix]
	has_flag(c, "r", "--remove")
}

# ---- privilege and accounts ----

finding contains {
	"rule": "privilege.escalation",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s runs a command with other privileges", [c.name]),
} if {
	"privilege_commands" in input.shell.listed
	not no_privileges # privilege.rego: where nothing can gain them, sudo is refused at once
	some ix in input.shell.list_commands.privilege_commands
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "privilege.accounts",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s changes accounts, passwords or capabilities", [c.name]),
} if {
	"account_commands" in input.shell.listed
	some ix in input.shell.list_commands.account_commands
	c := input.shell.commands[ix]
}

# ---- permissions ----

finding contains {
	"rule": "perm.world_writable",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("chmod %s makes files writable by everyone", [mode]),
} if {
	"chmod" in input.shell.names
	some ix in input.shell.name_commands.chmod
	c := input.shell.commands[ix]
	some mode in c.args
	world_writable(mode)
}

world_writable(m) if regex.match(`^[0-7]?[0-7][0-7][2367]$`, m)

world_writable(m) if regex.match(`^[ugoa]*[oa][ugoa]*[+=][rwxXst]*w`, m)

world_writable(m) if regex.match(`^\+[rwxXst]*w`, m)

finding contains {
	"rule": "perm.recursive_protected",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s -R on %s", [c.name, p]),
} if {
	"permission_commands" in input.shell.listed
	some ix in input.shell.list_commands.permission_commands
	c := input.shell.commands[ix]
	has_flag(c, "R", "--recursive")
	some p in array.concat(c.operands, object.get(c, "paths", [])) # targets(c), without the call
	protected(p)
}

# ---- remote code execution ----

finding contains {
	"rule": "rce.pipe_to_shell",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("output of %s is piped into an interpreter", [c.name]),
} if {
	input.shell.pipe_to_interpreter
	some ix in input.shell.list_commands.fetchers
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "rce.fetch_and_run",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s output runs as code (process substitution or eval)", [c.name]),
} if {
	"fetchers" in input.shell.listed
	some ix in input.shell.list_commands.fetchers
	c := input.shell.commands[ix]
	some jx in input.shell.list_commands.interpreters
	i := input.shell.commands[jx]
	fetched_into(i)
}

fetched_into(_) if input.shell.process_substitution

fetched_into(_) if input.shell.eval

fetched_into(i) if {
	input.shell.substitutions
	i.dynamic
}

finding contains {
	"rule": "rce.decode_and_run",
	"action": "deny",
	"severity": "critical",
	"reason": "a decoded payload is piped into an interpreter",
} if {
	input.shell.decode_to_interpreter
}

finding contains {
	"rule": "rce.pipe_to_interpreter",
	"action": "confirm",
	"severity": "high",
	"reason": "output is piped into a shell or interpreter",
} if {
	input.shell.pipe_to_interpreter
	not input.shell.decode_to_interpreter
}

# ---- sensitive files ----

write_finding contains {
	"rule": "file.sensitive_write",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("writes to %s", [t]),
} if {
	some t in write_targets
	sensitive_path(t)
}

finding contains {
	"rule": "file.secret_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads %s", [a]),
} if {
	"sensitive_read_paths" in input.shell.words_listed
	some c in input.shell.commands
	not "listing_commands" in c.listed
	some a in c.args
	a in cfg.sensitive_read_paths
}

finding contains {
	"rule": "file.secret_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads %s", [r.target]),
} if {
	"sensitive_read_paths" in input.shell.words_listed
	some c in input.shell.commands
	some r in c.redirects
	r.target in cfg.sensitive_read_paths
}

# The same files named relative to the directory the command runs in, or
# in another spelling (cd /etc; cat shadow, cat /etc//shadow): the paths
# the engine resolves.
finding contains {
	"rule": "file.secret_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads %s", [p]),
} if {
	"sensitive_read_paths" in input.shell.words_listed
	some c in input.shell.commands
	not "listing_commands" in c.listed
	some p in object.get(c, "paths", [])
	p in cfg.sensitive_read_paths
}

finding contains {
	"rule": "file.secret_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads %s", [r.path]),
} if {
	"sensitive_read_paths" in input.shell.words_listed
	some c in input.shell.commands
	some r in c.redirects
	r.path in cfg.sensitive_read_paths
}

# ---- network ----

finding contains {
	"rule": "net.firewall",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s flushes or disables the firewall", [c.name]),
} if {
	"firewall_commands" in input.shell.listed
	some ix in input.shell.list_commands.firewall_commands
	c := input.shell.commands[ix]
	firewall_off(c)
}

firewall_off(c) if has_flag(c, "F", "--flush")

firewall_off(c) if has_flag(c, "X", "--delete-chain")

firewall_off(c) if {
	c.name == "nft"
	"flush" in c.args
}

firewall_off(c) if {
	c.name == "ufw"
	some a in c.args
	a in {"disable", "reset"}
}

firewall_off(c) if {
	c.name == "firewall-cmd"
	"--panic-off" in c.args
}

# A shell line reaches the metadata service when a host its commands
# name is one (shell.hosts: every spelling of an address read as one, the
# hosts of URLs, not their paths); code when a host it names is one
# (code.hosts: its URLs' hosts and its string literals that are
# addresses, read alike). What other programs are typed (a database
# client, a REPL the gateway has no analysis for) is matched on its text.
finding contains {
	"rule": "net.cloud_metadata",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("reaches the cloud metadata endpoint %s", [h]),
} if {
	"metadata_hosts" in input.shell.words_listed
	some h in input.shell.hosts
	h in cfg.metadata_hosts
}

finding contains {
	"rule": "net.cloud_metadata",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("reaches the cloud metadata endpoint %s", [h]),
} if {
	some h in input.code.hosts
	h in cfg.metadata_hosts
}

finding contains {
	"rule": "net.cloud_metadata",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("reaches the cloud metadata endpoint %s", [e]),
} if {
	"metadata_substrings" in input.text_listed
	not "shells" in input.program_listed
	not input.action in {"start", "exec"}
	not input.code
	some e in cfg.metadata_substrings
	contains(lower(input.text), e)
}

# ---- git ----

finding contains {
	"rule": "git.destructive",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("git %s discards work", [concat(" ", c.args)]),
} if {
	"git_risky_words" in input.shell.words_listed
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	git_destructive(c)
}

git_destructive(c) if {
	"reset" in c.args
	"--hard" in c.args
}

git_destructive(c) if {
	"clean" in c.args
	has_flag(c, "f", "--force")
}

git_destructive(c) if {
	"branch" in c.args
	has_flag(c, "D", "")
}

git_destructive(c) if {
	"checkout" in c.args
	"--" in c.args
	"." in c.args
}

finding contains {
	"rule": "git.config_exec",
	"action": "deny",
	"severity": "high",
	"reason": "git options that run arbitrary programs",
} if {
	"git_exec_substrings" in input.shell.words_listed # a word holds one of the options below, in any case
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	some a in c.args

	# The options that make git run a program, one pattern an argument (a
	# function of five bodies cost a call and a rule lookup an argument):
	# --upload-pack, --receive-pack, an ext:: URL, --exec-path=; and keys,
	# in any case, that name a directory of programs or let any URL run
	# one. Keys whose value is a command line (core.pager, core.sshCommand,
	# alias.x=!…) are judged as the lines they are.
	regex.match(
		`^(?:--upload-pack|--receive-pack|ext::|--exec-path=|(?i:core\.(?:hookspath|fsmonitor)|protocol\.ext\.allow|protocol\.allow)=)`,
		a,
	)
}

# ---- containers ----

finding contains {
	"rule": "container.host_escape",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s reaches the container host", [c.name, a]),
} if {
	"container_engines" in input.shell.listed
	some ix in input.shell.list_commands.container_engines
	c := input.shell.commands[ix]
	some a in c.args

	# One pattern an argument (a function of four bodies cost a call and a
	# rule lookup an argument): the options that share the host's
	# namespaces or devices, or talk to another engine (-H, --host); a
	# mount of / or of the engine's socket; the engine's socket anywhere
	# in a mount (-v /run/podman/podman.sock:/s, --mount
	# type=bind,source=/var/run/docker.sock,…); added capabilities.
	regex.match(
		`^(?:--privileged|--pid=host|--net=host|--network=host|--ipc=host|--userns=host|-H|--host)$|^(?:-v|--volume=?)?/(?::|var/run/docker\.sock|run/docker\.sock)|(?:^|[=,:])/(?:var/)?run/(?:docker|podman/podman|containerd/containerd|crio/crio|user/[0-9]+/(?:docker|podman/podman))\.sock|^--cap-add`,
		a,
	)
}

finding contains {
	"rule": "container.host_escape",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s enters another namespace or root", [c.name]),
} if {
	"namespace_commands" in input.shell.listed
	some ix in input.shell.list_commands.namespace_commands
	c := input.shell.commands[ix]
}

finding contains {
	"rule": "container.host_escape",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s points the container engine at another host", [a]),
} if {
	"container_host_env" in input.shell.words_listed
	some c in input.shell.commands
	some a in c.assigns
	a in cfg.container_host_env
}

# ---- the gateway itself ----

finding contains {
	"rule": "self.tamper",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s targets the gateway", [c.name]),
} if {
	"signal_commands" in input.shell.listed
	some ix in input.shell.list_commands.signal_commands
	c := input.shell.commands[ix]
	some a in c.args
	gateway_ref(a)
}

gateway_ref(a) if {
	some n in cfg.gateway_names
	contains(lower(a), n)
}

gateway_ref(a) if contains(a, "PPID")

finding contains {
	"rule": "self.tamper",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s is the operator's setting", [a]),
} if {
	"gateway_env_prefixes" in input.shell.words_listed
	some c in input.shell.commands
	some a in c.assigns
	strings.any_prefix_match(a, cfg.gateway_env_prefixes)
}

finding contains {
	"rule": "fs.rm_unknown_targets",
	"action": "confirm",
	"severity": "high",
	"reason": "recursive delete of paths read at run time (xargs)",
} if {
	"rm" in input.shell.names
	some ix in input.shell.name_commands.rm
	c := input.shell.commands[ix]
	"xargs" in c.wrappers
	some flag in c.flags
	flag in {"r", "R", "--recursive"} # a recursive delete
}
