package termgate_test

test_rebind_keys if {
	denied_by(bash([c("bind", ["-x", `"\C-t": rm -rf ~`])]), "shell.rebind_keys")
	denied_by(bash([c("bind", [`"\C-m": "rm -rf ~\n"`])]), "shell.rebind_keys")
	denied_by(bash([c("bind", ["-f", "/tmp/inputrc"])]), "shell.rebind_keys")
	denied_by(bash([c("bindkey", ["-s", "^M", "rm -rf ~^J"])]), "shell.rebind_keys")
	denied_by(bash([c("bindkey", ["-v"])]), "shell.rebind_keys")
	denied_by(bash([c("zle", ["-N", "accept-line", "evil"])]), "shell.rebind_keys")
}

test_rebind_keys_benign if {
	allowed(bash([c("bind", ["-p"])]))
	allowed(bash([c("bind", ["-P"])]))
	allowed(bash([c("bind", ["-X"])]))
	allowed(bash([c("bindkey", [])]))
	allowed(bash([c("bindkey", ["-l"])]))
	allowed(bash([c("zle", [])]))
}

test_line_editing_mode if {
	denied_by(bash([c("set", ["-o", "vi"])]), "shell.line_editing_mode")
	denied_by(bash([c("set", ["+o", "emacs"])]), "shell.line_editing_mode")
	denied_by(bash([c("set", ["-o", "histexpand"])]), "shell.line_editing_mode")
	denied_by(bash([c("set", ["-H"])]), "shell.line_editing_mode")
	denied_by(bash([c("set", ["-eH"])]), "shell.line_editing_mode")
	denied_by(bash([c("setopt", ["vi"])]), "shell.line_editing_mode")
	denied_by(bash([c("setopt", ["BANG_HIST"])]), "shell.line_editing_mode")
	denied_by(bash([c("unsetopt", ["no_bang_hist"])]), "shell.line_editing_mode")
	denied_by(bash([c("shopt", ["-s", "histverify"])]), "shell.line_editing_mode")
}

test_line_editing_mode_benign if {
	allowed(bash([c("set", ["-o", "pipefail"])]))
	allowed(bash([c("set", ["-e"])]))
	allowed(bash([c("set", ["-o"])]))
	allowed(bash([c("setopt", ["autocd"])]))
	allowed(bash([c("shopt", ["-s", "globstar"])]))
	allowed(bash([c("shopt", ["histverify"])]))
}

test_history_rerun if {
	denied_by(bash([c("fc", ["-s"])]), "shell.history_rerun")
	denied_by(bash([c("fc", ["-e", "-", "rm"])]), "shell.history_rerun")
	denied_by(bash([c("history", ["-s", "rm -rf ~"])]), "shell.history_rerun")
	denied_by(bash([c("history", ["-r", "/tmp/h"])]), "shell.history_rerun")
	denied_by(bash([c("enable", ["fc"])]), "shell.history_rerun")
	denied_by(object.union(bash([c("r", [])]), {"program": "zsh"}), "shell.history_rerun")
}

test_history_rerun_benign if {
	allowed(bash([c("history", [])]))
	allowed(bash([c("history", ["5"])]))
	allowed(bash([c("enable", [])]))
	allowed(bash([c("enable", ["-n", "kill"])]))
	allowed(bash([c("r", [])])) # not zsh: a program named r (the R language)
}

test_prompt_hook if {
	denied_by(bash([object.union(c("", []), {"assigns": ["PROMPT_COMMAND"]})]), "shell.prompt_hook")
	denied_by(bash([object.union(c("", []), {"assigns": ["PS0"]})]), "shell.prompt_hook")
	denied_by(bash([object.union(c("", []), {"assigns": ["precmd_functions"]})]), "shell.prompt_hook")
	denied_by(bash([object.union(c("export", ["PROMPT_COMMAND=x"]), {"assigns": ["PROMPT_COMMAND"]})]), "shell.prompt_hook")
	denied_by(with_text(bash([object.union(c("", []), {"assigns": ["PS1"]})]), "PS1='$(id) $ '"), "shell.prompt_hook")
	denied_by(with_text(bash([object.union(c("", []), {"assigns": ["PS1"]})]), "PS1='`id` $ '"), "shell.prompt_hook")
	denied_by(bash([c("trap", ["rm -rf ~", "DEBUG"])]), "shell.prompt_hook")
	denied_by(bash([c("trap", ["rm -rf ~", "SIGRETURN"])]), "shell.prompt_hook")
	denied_by(bash([c("add-zsh-hook", ["precmd", "evil"])]), "shell.prompt_hook")
}

test_prompt_hook_benign if {
	allowed(with_text(bash([object.union(c("", []), {"assigns": ["PS1"]})]), `PS1='\u@\h$ '`))
	allowed(bash([c("trap", ["cleanup", "EXIT"])]))
	allowed(bash([object.union(c("", []), {"assigns": ["PATH"]})]))
	allowed(bash([object.union(c("make", []), {"assigns": ["PROMPT_COMMAND"]})])) # a command's environment: start.env_code's
}

test_integration_internals if {
	denied_by(with_text(bash([c("echo", ["$__termgate_post"])]), "echo $__termgate_post"), "shell.integration_internals")
	allowed(with_text(bash([c("echo", ["termgate"])]), "echo termgate"))
	denied_by(with_text(bash([c("echo", ["${!__termgate@}"])]), "echo ${!__termgate@}"), "shell.integration_internals")
	denied_by(with_text(bash([c("__termgate_wrap", [])]), "__termgate_wrap"), "shell.integration_internals")

	# ssh's ProxyCommand, as the exec gate sees it.
	allowed(with_text(bash([c("/usr/local/bin/termgate", ["__termgate-connect", "127.0.0.1:3128", "host", "22"])]), "exec '/usr/local/bin/termgate' __termgate-connect 127.0.0.1:3128 host 22"))
}

reader(program, text, judged) := object.union(typed(program, text), {"terminal": {"reads_lines": true, "judged": judged, "echo": true}})

test_unjudged_reader if {
	confirm_by(reader("ftp", "!sh", false), "terminal.unjudged_reader")
	confirm_by(reader("myrepl", "delete everything", false), "terminal.unjudged_reader")
}

test_unjudged_reader_benign if {
	allowed(reader("apt", "y", false))
	allowed(reader("apt", "", false))
	allowed(reader("fdisk", "3", false))
	allowed(reader("cat", "some text for a file", false))
	allowed(reader("python3", "print(1)", true))
	allowed(object.union(reader("ftp", "", false), {"secret": true}))
	allowed(object.union(typed("ftp", "ls"), {"terminal": {"reads_lines": false, "judged": false, "echo": true}}))
}

test_shadow_builtin if {
	denied_by(with_text(bash([c(":", [])]), "read() { :; }"), "shell.shadow_builtin")
	denied_by(with_text(bash([c(":", [])]), "function builtin { :; }"), "shell.shadow_builtin")
	denied_by(with_text(bash([c(":", [])]), "x=1; printf () { :; }"), "shell.shadow_builtin")
	denied_by(with_text(bash([c("alias", ["read=true"])]), "alias read=true"), "shell.shadow_builtin")
	denied_by(with_text(bash([c("alias", ["-p", "bind=echo"])]), "alias -p bind=echo"), "shell.shadow_builtin")
}

test_shadow_builtin_benign if {
	allowed(with_text(bash([c("greet", [])]), "greet() { echo hi; }; greet"))
	allowed(with_text(bash([c("read", ["-r", "x"])]), "read -r x"))
	allowed(with_text(bash([c("alias", ["ll=ls -l"])]), "alias ll='ls -l'"))
	allowed(with_text(bash([c("printf", ["%s\n", "x"])]), `printf '%s\n' x`))
	allowed(with_text(bash([c("echo", ["function", "reader"])]), "echo function reader"))
	allowed(typed("python3", "data = read()"))
}

# The guard of shell.shadow_builtin's text patterns holds every name they
# look for.
test_ticket_builtins_guard if {
	{n | some n in data.termgate.lists.ticket_builtin_substrings} == data.termgate.ticket_builtins
}
