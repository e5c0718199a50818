package termgate

# ---- the line at Enter is the line that runs ----
#
# The shell integration termgate generates switches off what would run a
# line nobody judged (history expansion, fc, edit-and-execute, key bindings
# that run code or type macros, vi mode) and marks every prompt with a
# per-session key. Turning any of it back on is denied: after it, the line
# the policy judged at Enter would no longer be the line the shell runs.

# Every finding here is guarded by the names of the commands it judges
# (or the lists that hold the text), so OPA's rule index skips it for the
# lines that run none of them; the rules themselves sit in sets of their
# own, evaluated once when a guard holds.

# bind: only its listing options are read-only (-p -P -l -v -V -s -S -X);
# everything else binds keys to code (bind -x), to macros that type a
# line, or to readline functions such as edit-and-execute-command.
finding contains f if {
	"bind" in input.shell.names
	some f in rebind_finding
}

finding contains f if {
	"bindkey" in input.shell.names
	some f in rebind_finding
}

finding contains f if {
	"zle" in input.shell.names
	some f in rebind_finding
}

rebind_finding contains {
	"rule": "shell.rebind_keys",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s changes what keys do in the shell: a key could then run a line that was never judged", [c.name]),
} if {
	some c in input.shell.commands
	c.name in {"bind", "bindkey", "zle"}
	not read_only_binding(c)
}

read_only_binding(c) if {
	c.name == "bind"
	count(c.operands) == 0
	every f in c.flags {
		f in {"p", "P", "l", "v", "V", "s", "S", "X"}
	}
}

read_only_binding(c) if {
	c.name in {"bindkey", "zle"}
	count(c.args) == 0
}

read_only_binding(c) if {
	c.name == "bindkey"
	c.args == ["-l"]
}

# set -o vi, set +o emacs, set -H / -o histexpand, and zsh's setopt of
# vi or bang_hist: a vi or bare line editor, or history expansion (!!,
# ^a^b), runs lines that differ from what was typed.
finding contains f if {
	"set" in input.shell.names
	some f in line_editing_finding
}

finding contains f if {
	"setopt" in input.shell.names
	some f in line_editing_finding
}

finding contains f if {
	"unsetopt" in input.shell.names
	some f in line_editing_finding
}

finding contains f if {
	"shopt" in input.shell.names
	some f in line_editing_finding
}

line_editing_finding contains {
	"rule": "shell.line_editing_mode",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s %s changes how the shell edits or expands the line: what runs would no longer be the line judged", [c.name, concat(" ", c.args)]),
} if {
	some c in input.shell.commands
	c.name in {"set", "setopt", "unsetopt", "shopt"}
	unjudged_line_option(c)
}

unjudged_line_option(c) if {
	c.name == "set"
	some i, a in c.args
	a in {"-o", "+o"}
	lower(c.args[i + 1]) in {"vi", "emacs", "histexpand", "history"}
}

unjudged_line_option(c) if {
	c.name == "set"
	some a in c.args
	regex.match(`^-[a-zA-Z]*H`, a)
}

unjudged_line_option(c) if {
	c.name in {"setopt", "unsetopt"}
	some a in c.operands
	replace(replace(lower(a), "_", ""), "no", "") in {"banghist", "vi", "emacs", "zle"}
}

unjudged_line_option(c) if {
	c.name == "shopt"
	"s" in c.flags
	some a in c.operands
	a in {"histverify", "histreedit"}
}

# fc and zsh's r re-run history lines; enable fc brings fc back; history
# -s and -r put lines into the history that were never typed.
finding contains f if {
	"fc" in input.shell.names
	some f in history_rerun_finding
}

finding contains f if {
	"r" in input.shell.names
	some f in history_rerun_finding
}

finding contains f if {
	"enable" in input.shell.names
	some f in history_rerun_finding
}

finding contains f if {
	"history" in input.shell.names
	some f in history_rerun_finding
}

history_rerun_finding contains {
	"rule": "shell.history_rerun",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s re-runs or plants lines in the shell's history, which run without being judged", [c.name]),
} if {
	some c in input.shell.commands
	history_rerun(c)
}

history_rerun(c) if c.name == "fc"

history_rerun(c) if {
	c.name == "r"
	input.program == "zsh"
}

history_rerun(c) if {
	c.name == "enable"
	count(c.operands) > 0
	not "n" in c.flags
}

history_rerun(c) if {
	c.name == "history"
	some f in c.flags
	f in {"s", "r", "n"}
}

# Hooks the shell runs on its own, before every prompt or command: the
# code in them runs without a line being judged. (Set in the shell itself:
# a bare assignment or a declaration; PS1=… before a command is that
# command's environment, which start.env_code judges.)
finding contains f if {
	"" in input.shell.names
	some f in prompt_assign_finding
}

finding contains f if {
	"export" in input.shell.names
	some f in prompt_assign_finding
}

finding contains f if {
	"declare" in input.shell.names
	some f in prompt_assign_finding
}

finding contains f if {
	"typeset" in input.shell.names
	some f in prompt_assign_finding
}

finding contains f if {
	"local" in input.shell.names
	some f in prompt_assign_finding
}

finding contains f if {
	"readonly" in input.shell.names
	some f in prompt_assign_finding
}

# (shell_setters, the guards above.)
prompt_assign_finding contains {
	"rule": "shell.prompt_hook",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("setting %s makes the shell run code on its own, outside any judged line", [v]),
} if {
	some c in input.shell.commands
	c.name in shell_setters
	some v in c.assigns
	v in {"PROMPT_COMMAND", "precmd_functions", "preexec_functions", "chpwd_functions", "zshaddhistory_functions", "PS0", "PROMPT_SUBST"}
}

prompt_assign_finding contains {
	"rule": "shell.prompt_hook",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s runs code in the prompt, outside any judged line", [v]),
} if {
	some c in input.shell.commands
	c.name in shell_setters
	some v in c.assigns
	v in {"PS1", "PS2", "PS4", "PROMPT", "RPROMPT", "RPS1"}
	regex.match("[$][(]|`", input.text)
}

shell_setters := {"", "export", "declare", "typeset", "local", "readonly"}

finding contains {
	"rule": "shell.prompt_hook",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("trap on %s runs code before or after every command, outside any judged line", [s]),
} if {
	"trap" in input.shell.names
	some ix in input.shell.name_commands.trap
	c := input.shell.commands[ix]
	some s in c.operands
	upper(trim_prefix(s, "SIG")) in {"DEBUG", "RETURN"}
}

finding contains {
	"rule": "shell.prompt_hook",
	"action": "deny",
	"severity": "high",
	"reason": "add-zsh-hook makes the shell run code on its own, outside any judged line",
} if {
	"add-zsh-hook" in input.shell.names
}

# The shell integration's own variables hold the key its marks carry.
finding contains {
	"rule": "shell.integration_internals",
	"action": "deny",
	"severity": "high",
	"reason": "the line touches termgate's shell integration (its marks and their key), which the judged line depends on",
} if {
	"integration_substrings" in input.text_listed # what the pattern below needs, ignoring case
	input.action in {"input", "start", "exec"}

	# Any name that starts so (a variable, a function, ${!__termgate@}); not
	# the connect helper ssh's ProxyCommand runs (__termgate-connect: no
	# shell name holds a hyphen).
	regex.match(`__termgate([^-]|$)`, input.text)
}

# ---- a program that reads lines but cannot be judged ----
#
# termgate judges the lines of the programs it knows (shells, and the REPLs
# whose prompts and languages it knows). A program that reads lines and is
# none of them (ftp, a custom CLI, a shell termgate does not know) runs
# what it reads in ways the policy cannot see: its input is confirmed, not
# allowed. Programs that only read data (cat, tee, …:
# data.termgate.lists.line_data_readers) and a short answer to a question
# (y, n, yes, no, q, a number, nothing) are let through.
finding contains {
	"rule": "terminal.unjudged_reader",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("%s reads lines that termgate cannot judge (it knows no rules for it)", [input.program]),
} if {
	input.action == "input"
	input.terminal.reads_lines
	not input.terminal.judged
	not input.secret
	not input.program in cfg.line_data_readers
	not short_answer(input.text)
}

short_answer(text) if regex.match(`^\s*([yYnNqQ]|[yY][eE][sS]|[nN][oO]|[0-9]{1,4})?\s*$`, text)

# ---- the shell's ticket check ----
#
# The generated rc refuses, in the shell itself, a line the gateway did
# not type and judge (no ticket for it: keys a program pushed into the
# terminal). The check reads its ticket with the read builtin; a function
# or alias named after a builtin it relies on (builtin, read, printf,
# return, bind, enable) could forge a ticket or hide the refusal, so
# defining one is denied. (Turning line editing off, rebinding keys and
# touching __termgate… are denied above.)
ticket_builtins := {"builtin", "read", "printf", "return", "bind", "enable"}

# A function definition names one of ticket_builtins in the text
# (lists.ticket_builtin_substrings holds them: test_ticket_builtins_guard);
# an alias is a command of that name.
finding contains f if {
	"ticket_builtin_substrings" in input.text_listed
	some f in shadow_finding
}

finding contains f if {
	"alias" in input.shell.names
	some f in shadow_finding
}

shadow_finding contains {
	"rule": "shell.shadow_builtin",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("defining %s as a function or alias would change what the shell's check of judged lines runs", [name]),
} if {
	input.shell # a shell line: read() typed into python is a call
	input.action in {"input", "start"}
	some name in shadowed_builtins
}

shadowed_builtins contains name if {
	some m in regex.find_all_string_submatch_n(`(?:^|[;&|(){}\s])(?:function\s+)?([A-Za-z_]+)\s*\(\s*\)`, input.text, -1)
	name := m[1]
	name in ticket_builtins
}

shadowed_builtins contains name if {
	some m in regex.find_all_string_submatch_n(`(?:^|[;&|(){}\s])function\s+([A-Za-z_]+)(?:\s|$|\{)`, input.text, -1)
	name := m[1]
	name in ticket_builtins
}

shadowed_builtins contains name if {
	some ix in input.shell.name_commands.alias
	c := input.shell.commands[ix]
	some a in c.args
	name := split(a, "=")[0]
	name in ticket_builtins
}
