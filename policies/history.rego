package termgate

# What undoes work or deletes by other means than rm: remote branches
# deleted and history rewritten, the reflog expired, processes killed by a
# looked-up pid, protected paths moved, shredded, unlinked, archived away
# or synced over, archives extracted over the system, raw disks read.
# Every body starts with a guard OPA's rule index uses.

# ---- git: remote branches, history, reflog ----
#
# Every git rule is guarded by git_risky_words (the subcommands they judge:
# push, reset, config, …) in the line's words_listed, so OPA's index skips
# them all for a git line that has none (git status, git clone, git log).

finding contains {
	"rule": "git.remote_delete",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("git %s deletes remote branches", [concat(" ", c.args)]),
} if {
	"git_risky_words" in input.shell.words_listed
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	"push" in c.args
	push_deletes(c)
}

push_deletes(c) if {
	some f in c.flags
	f in {"d", "--delete", "--prune"}
}

push_deletes(c) if {
	some a in c.args
	regex.match(`^\+?:.`, a)
}

finding contains {
	"rule": "git.history_rewrite",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("git %s rewrites published history", [concat(" ", c.args)]),
} if {
	"git_risky_words" in input.shell.words_listed
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	rewrites_history(c)
}

rewrites_history(c) if {
	"push" in c.args
	some f in c.flags
	f in {"f", "--force", "--force-with-lease", "--force-if-includes", "--mirror"}
}

rewrites_history(c) if {
	"push" in c.args
	some a in c.args
	regex.match(`^\+[^:]`, a)
}

rewrites_history(c) if {
	some a in c.args
	a in {"filter-branch", "filter-repo"}
}

finding contains {
	"rule": "git.reflog_expire",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("git %s drops what the reflog keeps to recover lost work", [concat(" ", c.args)]),
} if {
	"git_risky_words" in input.shell.words_listed
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	expires_reflog(c)
}

expires_reflog(c) if {
	"reflog" in c.args
	some a in c.args
	a in {"expire", "delete"}
	some b in c.args
	regex.match(`^--expire(-unreachable)?=(now|all|0)`, b)
}

expires_reflog(c) if {
	"gc" in c.args
	some a in c.args
	a in {"--prune=now", "--prune=all"}
}

finding contains {
	"rule": "git.hooks_path",
	"action": "confirm",
	"severity": "medium",
	"reason": "git config core.hooksPath makes git run the hooks of another directory",
} if {
	"git_risky_words" in input.shell.words_listed
	"git" in input.shell.names
	some ix in input.shell.name_commands.git
	c := input.shell.commands[ix]
	"config" in c.args
	some a in c.args
	lower(a) == "core.hookspath"
}

# ---- processes killed by a looked-up pid ----

finding contains {
	"rule": "process.kill_by_lookup",
	"action": "confirm",
	"severity": "medium",
	"reason": "kill of processes looked up by name at run time (pgrep, pidof, ps)",
} if {
	"kill" in input.shell.names
	"pid_lookup_commands" in input.shell.listed
	some ix in input.shell.name_commands.kill
	c := input.shell.commands[ix]
	targets_looked_up(c)
}

# ---- deletes by other verbs ----

finding contains {
	"rule": "fs.mv_protected",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("mv of %s moves a protected directory away", [p]),
} if {
	"mv" in input.shell.names
	some ix in input.shell.name_commands.mv
	c := input.shell.commands[ix]
	some p in mv_paths(c)
	protected(p)
}

# The paths mv moves away: its sources, and the destination it replaces
# with -T.
mv_paths(c) := array.concat(
	array.slice(c.operands, 0, count(c.operands) - 1),
	array.slice(object.get(c, "paths", []), 0, count(c.operands) - 1),
) if {
	not has_flag(c, "T", "--no-target-directory")
	not has_flag(c, "t", "--target-directory")
} else := targets(c)

finding contains {
	"rule": "fs.delete_protected",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s deletes %s", [c.name, p]),
} if {
	"other_delete_commands" in input.shell.listed
	some ix in input.shell.list_commands.other_delete_commands
	c := input.shell.commands[ix]
	deletes_sources(c)
	some p in array.concat(c.operands, object.get(c, "paths", [])) # targets(c), without the call
	protected_or_sensitive(p)
}

deletes_sources(c) if c.name == "unlink"

deletes_sources(c) if {
	c.name == "shred"
	has_flag(c, "u", "--remove")
}

deletes_sources(c) if "--remove-files" in c.flags

deletes_sources(c) if "--remove-source-files" in c.flags

protected_or_sensitive(p) if protected(p)

protected_or_sensitive(p) if sensitive_path(p)

finding contains {
	"rule": "fs.sync_delete_protected",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("rsync --delete into %s deletes what the source lacks", [p]),
} if {
	"rsync" in input.shell.names
	some ix in input.shell.name_commands.rsync
	c := input.shell.commands[ix]
	some f in c.flags
	startswith(f, "--delete")
	count(c.operands) >= 2
	some p in {c.operands[count(c.operands) - 1], object.get(c, "paths", c.operands)[count(c.operands) - 1]}
	protected(p)
}

finding contains {
	"rule": "fs.extract_protected",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("tar extracts over %s", [d]),
} if {
	"tar" in input.shell.names
	some ix in input.shell.name_commands.tar
	c := input.shell.commands[ix]
	tar_extracts(c)
	some d in tar_dirs(c)
	protected(d)
}

tar_extracts(c) if has_flag(c, "x", "--extract")

tar_extracts(c) if "--get" in c.flags

tar_extracts(c) if regex.match(`^[a-zA-Z]*x`, c.args[0])

tar_dirs(c) := {d |
	some i, a in c.args
	a in {"-C", "--directory"}
	d := resolved(c, c.args[i + 1])
} | {d |
	some a in c.args
	startswith(a, "--directory=")
	d := substring(a, 12, -1)
}

# resolved is p against c's directory, where the engine knows it.
resolved(c, p) := concat("/", [trim_right(c.cwd, "/"), p]) if {
	not startswith(p, "/")
	not startswith(p, "~")
	c.cwd
} else := p

# ---- raw disks read ----

# A raw block device read holds every file on it, secrets included.
finding contains {
	"rule": "disk.raw_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads the raw device %s", [d]),
} if {
	"dd" in input.shell.names
	some ix in input.shell.name_commands.dd
	c := input.shell.commands[ix]
	some a in array.concat(c.args, object.get(c, "paths", [])) # if= as written and resolved
	startswith(a, "if=")
	d := substring(a, 3, -1)
	strings.any_prefix_match(d, cfg.raw_device_prefixes)
}

finding contains {
	"rule": "disk.raw_read",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("reads the raw device %s", [d]),
} if {
	"raw_device_prefixes" in input.shell.words_listed
	some c in input.shell.commands
	not "listing_commands" in c.listed
	not "data_commands" in c.listed
	some d in array.concat(
		array.concat(c.operands, object.get(c, "paths", [])), # as written and resolved (cd /dev; cat sda)
		[t | some r in c.redirects; r.op == "<"; some t in [r.target, object.get(r, "path", r.target)]],
	)
	strings.any_prefix_match(d, cfg.raw_device_prefixes)
}
