package termgate_test

test_rm_protected if {
	denied_by(bash([c("rm", ["-rf", "/"])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["-r", "-f", "/etc/"])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["--recursive", "--force", "~"])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["-R", "/usr"])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["-rf", "/*"])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["-rf", "/home/."])]), "fs.rm_protected")
	denied_by(bash([c("rm", ["-rf", "//"])]), "fs.rm_protected")
	denied_by(bash([c("rmdir", ["-r", "/var"])]), "fs.rm_protected")
}

test_rm_benign if {
	allowed(bash([c("rm", ["notes.txt"])]))
	allowed(bash([c("rm", ["-rf", "build/"])]))
	allowed(bash([c("grep", ["-r", "rm", "."])]))
}

test_rm_no_preserve_root if denied_by(bash([c("rm", ["-rf", "--no-preserve-root", "/x"])]), "fs.rm_no_preserve_root")

test_rm_outside if {
	confirm_by(bash([c("rm", ["-rf", "/tmp/build"])]), "fs.rm_recursive_outside")
	confirm_by(bash([c("rm", ["-r", "../sibling"])]), "fs.rm_recursive_outside")
	confirm_by(bash([c("rm", ["-rf", "$TMPDIR/x"])]), "fs.rm_recursive_outside")
}

# From a directory the line does not tell, a relative path that may name
# a protected one is asked about; in a known one it is the path it is.
test_rm_unknown_dir if {
	confirm_by(bash([c("rm", ["-rf", "etc"])]), "fs.rm_unknown_dir")
	confirm_by(bash([c("rm", ["-r", "usr/"])]), "fs.rm_unknown_dir")
	confirm_by(bash([c("rm", ["-rf", "./etc"])]), "fs.rm_unknown_dir")
	confirm_by(bash([c("rm", ["-rf", ".//usr/./lib/"])]), "fs.rm_unknown_dir")
	allowed(bash([c("rm", ["-rf", "build"])]))
	allowed(bash([c("rm", ["etc"])]))
	allowed(at(bash([c("rm", ["-rf", "etc"])]), "/home/dev/p"))
	denied_by(at(bash([c("rm", ["-rf", "etc"])]), "/"), "fs.rm_protected")
}

test_cdpath if {
	confirm_by(bash([object.union(c("cd", ["home"]), {"assigns": ["CDPATH"]})]), "shell.cdpath")
	confirm_by(bash([c("export", ["CDPATH=/"])]), "shell.cdpath")
	confirm_by(typed("bash", "for CDPATH in /; do cd usr; done"), "shell.cdpath")
	confirm_by(typed("bash", "shopt -s cdable_vars"), "shell.cdpath")
	allowed(bash([c("export", ["PATH=/x"])]))
}

test_rm_xargs if confirm_by(bash([c("xargs", ["rm", "-rf"]), wrapped(c("rm", ["-rf"]), ["xargs"])]), "fs.rm_unknown_targets")

test_find_delete if {
	confirm_by(bash([c("find", ["/srv/data", "-name", "*.log", "-delete"])]), "fs.find_delete")
	allowed(bash([c("find", [".", "-name", "*.o", "-delete"])]))
}

test_disk if {
	denied_by(bash([c("mkfs.ext4", ["/dev/sdb1"])]), "disk.format")
	denied_by(bash([c("wipefs", ["-a", "/dev/sdb"])]), "disk.format")
	denied_by(bash([c("dd", ["if=/dev/zero", "of=/dev/sda"])]), "disk.raw_write")
	denied_by(bash([redir(c("cat", ["img"]), ">", "/dev/nvme0n1")]), "disk.raw_write")
	confirm_by(bash([c("mount", ["/dev/sdb1", "/mnt"])]), "disk.mount")
	allowed(bash([c("mount", [])]))
	allowed(bash([redir(c("echo", ["x"]), ">", "/dev/null")]))
}

test_power if {
	denied_by(bash([c("shutdown", ["-h", "now"])]), "system.power")
	denied_by(bash([c("init", ["6"])]), "system.power")
	denied_by(bash([c("systemctl", ["poweroff"])]), "system.power")
	allowed(bash([c("systemctl", ["status", "nginx"])]))
}

test_services_and_processes if {
	confirm_by(bash([c("systemctl", ["stop", "nginx"])]), "system.service_stop")
	denied_by(bash([c("kill", ["-9", "-1"])]), "process.kill_broad")
	confirm_by(bash([c("killall", ["node"])]), "process.kill_by_name")
	allowed(bash([c("kill", ["4242"])]))
	confirm_by(bash([c("crontab", ["-r"])]), "system.cron_wipe")
}

test_fork_bomb if {
	denied_by(bash_flags([c(":", []), c(":", [])], {"recursive_functions": [":"], "background": true, "pipes": true}), "process.fork_bomb")
	allowed(bash_flags([c("f", [])], {"recursive_functions": ["f"]}))
}

test_privilege if {
	confirm_by(bash([c("sudo", ["ls"]), wrapped(c("ls", []), ["sudo"])]), "privilege.escalation")
	denied_by(bash([c("useradd", ["mallory"])]), "privilege.accounts")
}

test_permissions if {
	confirm_by(bash([c("chmod", ["777", "x"])]), "perm.world_writable")
	confirm_by(bash([c("chmod", ["o+w", "x"])]), "perm.world_writable")
	confirm_by(bash([c("chmod", ["+w", "x"])]), "perm.world_writable")
	denied_by(bash([c("chown", ["-R", "me", "/"])]), "perm.recursive_protected")

	# The resolved path counts too: cd /; chmod -R 777 etc.
	denied_by(bash([object.union(c("chmod", ["-R", "777", "etc"]), {"cwd": "/", "paths": ["777", "/etc"]})]), "perm.recursive_protected")
	allowed(bash([c("chmod", ["+x", "run.sh"])]))
	allowed(bash([c("chmod", ["644", "x"])]))
}

test_rce if {
	denied_by(bash_flags([c("curl", ["-s", "x"]), c("sh", [])], {"pipes": true, "pipe_to_interpreter": true}), "rce.pipe_to_shell")
	denied_by(bash_flags([c("bash", ["<(curl x)"]), c("curl", ["x"])], {"substitutions": true, "process_substitution": true}), "rce.fetch_and_run")
	denied_by(bash_flags([c("eval", ["$(curl x)"]), c("curl", ["x"])], {"substitutions": true, "eval": true}), "rce.fetch_and_run")
	denied_by(bash_flags([object.union(c("bash", []), {"dynamic": true}), c("wget", ["x"])], {"substitutions": true}), "rce.fetch_and_run")
	denied_by(bash_flags([c("base64", ["-d"]), c("bash", [])], {"pipes": true, "pipe_to_interpreter": true, "decode_to_interpreter": true}), "rce.decode_and_run")
	confirm_by(bash_flags([c("echo", ["x"]), c("python3", [])], {"pipes": true, "pipe_to_interpreter": true}), "rce.pipe_to_interpreter")
	allowed(bash_flags([c("cat", ["<(curl x)"]), c("curl", ["x"])], {"substitutions": true, "process_substitution": false}))
}

test_sensitive_files if {
	denied_by(bash([redir(c("echo", ["k"]), ">>", "~/.ssh/authorized_keys")]), "file.sensitive_write")
	denied_by(bash([redir(c("echo", ["k"]), ">>", "$HOME/.bashrc")]), "file.sensitive_write")
	denied_by(bash([redir(c("echo", ["k"]), ">", "${HOME}/.zshrc")]), "file.sensitive_write")
	denied_by(bash([c("tee", ["-a", "/etc/hosts"])]), "file.sensitive_write")
	denied_by(bash([c("cp", ["x", ".git/hooks/pre-commit"])]), "file.sensitive_write")
	denied_by(bash([c("sed", ["-i", "s/a/b/", "/etc/termgate/p.rego"])]), "file.sensitive_write")
	denied_by(bash([redir(c("echo", ["x"]), ">", "~/.local/state/termgate/audit.jsonl")]), "file.sensitive_write")
	denied_by(bash([redir(c("echo", ["x"]), ">", "~/.local/share/termgate/keys/audit.key")]), "file.sensitive_write")
	denied_by(bash([redir(c("echo", ["x"]), ">", "/opt/termgate/egress-hosts")]), "file.sensitive_write")

	# the scratch directory sessions start in is the session's to write
	allowed(bash([redir(c("echo", ["x"]), ">", "~/.local/share/termgate-scratch/notes.txt")]))
	denied_by(bash([c("sed", ["-i", "-e", "s/a/b/", "/etc/passwd"])]), "file.sensitive_write")
	denied_by(bash([c("touch", ["/etc/cron.d/x"])]), "file.sensitive_write")
	confirm_by(bash([c("cat", ["/etc/shadow"])]), "file.secret_read")
	confirm_by(bash([object.union(c("cat", ["shadow"]), {"cwd": "/etc", "paths": ["/etc/shadow"]})]), "file.secret_read")
	confirm_by(bash([object.union(c("wc", []), {"redirects": [{"op": "<", "target": "shadow", "path": "/etc/shadow"}]})]), "file.secret_read")
	allowed(bash([object.union(c("ls", ["shadow"]), {"cwd": "/etc", "paths": ["/etc/shadow"]})]))
	allowed(bash([redir(c("echo", ["x"]), ">", "notes.txt")]))
	allowed(bash([c("sed", ["-i", "s/a/b/", "notes.txt"])]))
	allowed(bash([c("cp", ["a", "b"])]))
}

test_network if {
	denied_by(bash([c("iptables", ["-F"])]), "net.firewall")
	denied_by(bash([c("iptables", ["-X"])]), "net.firewall")
	denied_by(bash([c("nft", ["flush", "ruleset"])]), "net.firewall")
	denied_by(bash([c("ufw", ["disable"])]), "net.firewall")
	denied_by(bash([c("firewall-cmd", ["--panic-off"])]), "net.firewall")
	allowed(bash([c("iptables", ["-L"])]))
	denied_by(hosts(bash([c("curl", ["http://169.254.169.254/"])]), ["169.254.169.254"]), "net.cloud_metadata")
}

test_git if {
	confirm_by(bash([c("git", ["reset", "--hard"])]), "git.destructive")
	confirm_by(bash([c("git", ["push", "-f"])]), "git.history_rewrite")
	confirm_by(bash([c("git", ["push", "origin", "+main"])]), "git.history_rewrite")
	confirm_by(bash([c("git", ["clean", "-fd"])]), "git.destructive")
	confirm_by(bash([c("git", ["branch", "-D", "x"])]), "git.destructive")
	confirm_by(bash([c("git", ["checkout", "--", "."])]), "git.destructive")
	denied_by(bash([c("git", ["-c", "core.hooksPath=/tmp", "commit"])]), "git.config_exec")
	denied_by(bash([c("git", ["clone", "ext::sh -c id"])]), "git.config_exec")
	denied_by(bash([c("git", ["fetch", "--upload-pack=touch /tmp/x"])]), "git.config_exec")
	allowed(bash([c("git", ["push"])]))
	allowed(bash([c("git", ["status"])]))
}

# Every option git.config_exec knows, each alone, and look-alikes that run
# nothing: git's options are spelled in lower case, its config keys in any.
test_git_exec_options if {
	every a in [
		"--upload-pack=x", "--upload-pack", "--receive-pack=x", "ext::sh -c id", "--exec-path=/tmp/x",
		"core.hooksPath=/tmp", "CORE.HOOKSPATH=/tmp", "core.fsmonitor=x", "protocol.ext.allow=always",
		"Protocol.Allow=always",
	] {
		denied_by(bash([c("git", ["-c", a, "status"])]), "git.config_exec")
	}
	every a in [
		"--UPLOAD-PACK=x", "x--upload-pack", "--exec-path", "EXT::sh", "core.hooksPath", "core.pager=less",
		"my.core.hooksPath=/tmp", "protocol.file.allow=always",
	] {
		not "git.config_exec" in {f.rule | some f in data.termgate.finding with input as bash([c("git", ["-c", a, "status"])])}
	}
}

test_containers if {
	denied_by(bash([c("docker", ["run", "--privileged", "alpine"])]), "container.host_escape")
	denied_by(bash([c("docker", ["run", "-v", "/:/host", "alpine"])]), "container.host_escape")
	denied_by(bash([c("docker", ["run", "--volume=/var/run/docker.sock:/s", "alpine"])]), "container.host_escape")
	denied_by(bash([c("docker", ["run", "--cap-add=SYS_ADMIN", "alpine"])]), "container.host_escape")
	denied_by(bash([c("nsenter", ["-t", "1", "-m"])]), "container.host_escape")
	denied_by(bash([object.union(c("docker", ["ps"]), {"assigns": ["DOCKER_HOST"]})]), "container.host_escape")
	allowed(bash([c("docker", ["ps"])]))
}

# Every argument container.host_escape knows, each alone, and look-alikes
# that reach nothing of the host's.
test_container_escape_args if {
	every a in [
		"--privileged", "--pid=host", "--net=host", "--network=host", "--ipc=host", "--userns=host", "-H", "--host",
		"/:/host", "-v/:/h", "--volume=/:/h", "--volume/:/h", "/var/run/docker.sock:/s", "/run/docker.sock",
		"-v/var/run/docker.sock:/s", "/run/podman/podman.sock:/s", "type=bind,source=/var/run/docker.sock,target=/s",
		"src:/run/containerd/containerd.sock", "/run/crio/crio.sock", "/run/user/1000/podman/podman.sock:/s",
		"x=/run/user/0/docker.sock", "--cap-add=SYS_ADMIN", "--cap-add",
	] {
		denied_by(bash([c("docker", ["run", a, "alpine"])]), "container.host_escape")
	}
	every a in [
		"--privileged=false", "--host=", "-Hx", "--pid=container:x", "/home:/h", "/var/run/dockerd.pid",
		"/tmp/run/docker.sock", "./run/docker.sock", "/run/user/x/docker.sock", "--cap-drop=ALL", "x--cap-add",
		"-v", "alpine",
	] {
		not "container.host_escape" in {f.rule | some f in data.termgate.finding with input as bash([c("docker", ["run", a, "alpine"])])}
	}
}

test_self_tamper if {
	denied_by(bash([c("pkill", ["-f", "termgate"])]), "self.tamper")
	denied_by(bash([c("kill", ["$PPID"])]), "self.tamper")
	denied_by(bash([object.union(c("bash", []), {"assigns": ["TERMGATE_POLICY_DIR"]})]), "self.tamper")
}

test_unparseable_and_dynamic if {
	confirm_by(bash_flags([c("echo", [")("])], {"parse_error": "1:6: unexpected )"}), "input.unparseable")
	allowed(bash_flags([c("for", ["i", "in", "1"])], {"incomplete": true}))
	confirm_by(bash([object.union(c("$(echo rm)", ["-rf", "x"]), {"dynamic": true})]), "shell.dynamic_command")
	confirm_by(bash([object.union(c("su*o", ["ls"]), {"dynamic": true, "path": "/usr/bin/su*o"})]), "shell.dynamic_command")
}

test_secret_read_by_redirect if confirm_by(bash([redir(c("cat", []), "<", "/etc/shadow")]), "file.secret_read")

# ---- statements with no command: a command with an empty name, holding
# the statement's redirections and assignments ----

bare(assigns) := object.union(c("", []), {"assigns": assigns})

test_redirect_only_writes if {
	denied_by(bash([redir(c("", []), ">", "/etc/passwd")]), "file.sensitive_write")
	denied_by(bash([redir(c("", []), ">>", "~/.ssh/authorized_keys")]), "file.sensitive_write")
	denied_by(bash([redir(c("", []), ">", "/dev/sda")]), "disk.raw_write")
	denied_by(bash([redir(c("", []), "&>", "/dev/nvme0n1")]), "disk.raw_write")

	# x=1 > /etc/passwd: an assignment with a redirection
	denied_by(bash([redir(bare(["x"]), ">", "/etc/passwd")]), "file.sensitive_write")

	# { cat k; } >> ~/.bashrc: a compound command's redirections
	denied_by(bash([c("cat", ["k"]), redir(c("", []), ">>", "~/.bashrc")]), "file.sensitive_write")
}

test_redirect_only_reads if {
	# x=$(< /etc/shadow)
	confirm_by(bash_flags([redir(c("", []), "<", "/etc/shadow"), bare(["x"])], {"substitutions": true}), "file.secret_read")
}

test_redirect_only_benign if {
	# x=$(< /etc/hostname)
	allowed(bash_flags([redir(c("", []), "<", "/etc/hostname"), bare(["x"])], {"substitutions": true}))

	# 2>/dev/null, <<<x, a here-document with no command, x=1
	allowed(bash([redir(c("", []), ">", "/dev/null")]))
	allowed(bash([redir(c("", []), "<<<", "x")]))
	allowed(bash([redir(c("", []), "<<", "<<heredoc>>")]))
	allowed(bash([bare(["x"])]))
	allowed(bash([redir(c("echo", ["hi"]), ">", "out.txt")]))
	allowed(bash([redir(bare(["x"]), ">", "out.txt")]))
}

test_bare_assignments if {
	# export TERMGATE_POLICY_DIR=/tmp/p, DOCKER_HOST=tcp://x
	denied_by(bash([object.union(c("export", []), {"assigns": ["TERMGATE_POLICY_DIR"]})]), "self.tamper")
	denied_by(bash([bare(["DOCKER_HOST"])]), "container.host_escape")
}

# ---- here-strings and here-documents fed to a shell or an interpreter ----

test_here_documents_fed_to_interpreters if {
	# bash <<< 'rm -rf ~': the body is parsed as the shell line it is
	denied_by(
		bash_flags([redir(c("bash", []), "<<<", "rm -rf ~"), c("rm", ["-rf", "~"])], {"pipe_to_interpreter": true}),
		"fs.rm_protected",
	)

	# python3 <<EOF … EOF: judged as a pipe into python3
	confirm_by(bash_flags([redir(c("python3", []), "<<", "<<heredoc>>")], {"pipe_to_interpreter": true}), "rce.pipe_to_interpreter")

	# bash <<< "$(curl …)"
	denied_by(
		bash_flags(
			[redir(c("bash", []), "<<<", "$(curl -s x)"), c("curl", ["-s", "x"])],
			{"pipe_to_interpreter": true, "substitutions": true},
		),
		"rce.pipe_to_shell",
	)

	# cat <<EOF … EOF is data
	allowed(bash([redir(c("cat", []), "<<", "<<heredoc>>")]))
}

# The engine's path facts are read where they exist: a word classified
# protected or sensitive is judged so, and a classified word's empty fact
# is not computed again; a word without a fact is computed by the rules.
with_facts(doc, facts) := object.union(doc, {"shell": {"path_facts": facts}})

test_path_facts_are_read if {
	denied_by(with_facts(bash([c("rm", ["-rf", "/x"])]), {"/x": {"protected": true}}), "fs.rm_protected")
	denied_by(with_facts(bash([redir(c("echo", ["k"]), ">", "notes")]), {"notes": {"sensitive": true}}), "file.sensitive_write")
	allowed(with_facts(bash([redir(c("echo", ["k"]), ">", "~/.bashrc")]), {"~/.bashrc": {}}))
	denied_by(with_facts(bash([c("rm", ["-rf", "/"])]), {"/x": {"protected": true}}), "fs.rm_protected")
}

# A recursive delete that reaches outside the working directory through a
# link is asked about (the engine's leaves fact); one that stays, or is
# not recursive, is not; one whose target is protected is refused.
test_delete_leaving_through_a_link if {
	rm := object.union(c("rm", ["-rf", "x/.ssh"]), {"cwd": "/p", "paths": ["/p/x/.ssh"]})
	confirm_by(with_facts(bash([rm]), {"x/.ssh": {"leaves": true}}), "fs.rm_recursive_outside")
	allowed(with_facts(bash([rm]), {"x/.ssh": {}}))
	allowed(bash([rm]))
	allowed(with_facts(bash([object.union(c("rm", ["-f", "x/.ssh"]), {"cwd": "/p", "paths": ["/p/x/.ssh"]})]), {"x/.ssh": {"leaves": true}}))
	denied_by(with_facts(bash([rm]), {"x/.ssh": {"leaves": true}, "/p/x/.ssh": {"protected": true}}), "fs.rm_protected")
}

# tee, the file commands and sed -i write their operands as written and
# as resolved (cd /etc/sudoers.d; tee x writes /etc/sudoers.d/x).
test_written_operands_resolved if {
	in_dir := {"cwd": "/etc/sudoers.d", "paths": ["/etc/sudoers.d/x"]}
	data.termgate.write_targets == {"x", "/etc/sudoers.d/x"} with input as bash([object.union(c("tee", ["x"]), in_dir)])
	data.termgate.write_targets == {"x", "/etc/sudoers.d/x"} with input as bash([object.union(c("touch", ["x"]), in_dir)])
	sed := object.union(c("sed", ["-i", "s/a/b/", "passwd"]), {"cwd": "/etc", "paths": ["/etc/s/a/b", "/etc/passwd"]})
	data.termgate.write_targets == {"passwd", "/etc/passwd"} with input as bash([sed])
	denied_by(bash([object.union(c("tee", ["sudoers"]), {"cwd": "/etc", "paths": ["/etc/sudoers"]})]), "file.sensitive_write")
}

# The engine's write targets are read where they exist; without them the
# rules compute the same set.
test_write_targets_are_read if {
	doc := bash([redir(c("echo", ["k"]), ">", "notes")])
	allowed(doc)
	denied_by(object.union(doc, {"shell": {"write_targets": ["/etc/passwd"]}}), "file.sensitive_write")
	data.termgate.write_targets == {"notes"} with input as doc
}

# A document without what the engine derives (from an engine older than
# the bundle) is denied, not judged by rules that would find nothing.
test_underived_commands_are_denied if {
	doc := json.remove(bash([c("cp", ["x", "/etc/passwd"])]), ["shell/list_commands"])
	decide(doc).action == "deny"
	"policy.input_underived" in {f.rule | some f in data.termgate.finding with input as doc}
	denied_by(json.remove(bash([c("touch", ["x"]), c("ls", [])]), ["shell/list_commands"]), "policy.input_underived")
	denied_by(json.patch(bash([c("touch", ["x"])]), [{"op": "replace", "path": "/shell/list_commands", "value": []}]), "policy.input_underived")
	denied_by({"action": "input", "program": "bash", "shell": {"commands": []}}, "policy.input_underived")
	allowed(bash([c("ls", [])]))
}
