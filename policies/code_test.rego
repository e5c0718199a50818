package termgate_test

test_code_reverse_shell if {
	code := code_doc([call("socket.socket.connect", ["$addr"]), call("os.dup2", ["$fd", "0"]), call("pty.spawn", ["/bin/sh"])], ["socket", "os", "pty"], {"reverse_shell": true})
	denied_by(typed_code("python3", "…", code, [c("/bin/sh", [])]), "code.reverse_shell")
	allowed(typed_code("python3", "s.connect(a)", code_doc([call("socket.socket.connect", ["$a"])], ["socket"], {}), []))
}

test_code_dynamic if {
	code := code_doc([], ["os"], {"dynamic": true, "dynamic_calls": ["getattr(os, name)"]})
	confirm_by(typed_code("python3", "getattr(os, name)('id')", code, []), "code.dynamic")
	confirm_by(typed_code("node", "eval(s)", code_doc([call("eval", ["$s"])], [], {"dynamic": true, "dynamic_calls": ["eval"]}), []), "code.dynamic")
}

test_code_dynamic_shell_out if {
	code := code_doc([call("os.system", ["$cmd"])], ["os"], {"dynamic_shell": true})
	confirm_by(typed_code("python3", "os.system(cmd)", code, []), "code.dynamic_shell_out")
}

test_code_signal if {
	code := code_doc([call("os.kill", ["4242", "9"])], ["os"], {})
	confirm_by(typed_code("python3", "os.kill(4242, 9)", code, [c("kill", ["-9", "4242"])]), "code.signal")
	every n in data.termgate.lists.code_signal_calls {
		confirm_by(typed_code("python3", "x", code_doc([call(n, ["4242"])], [], {}), []), "code.signal")
	}

	# A signal to every process, or to init, is the shell rule's deny.
	denied_by(typed_code("node", "process.kill(-1)", code_doc([call("process.kill", ["-1"])], [], {}), [c("kill", ["-TERM", "-1"])]), "process.kill_broad")
	denied_by(typed_code("python3", "os.kill(os.getppid(), 9)", code_doc([call("os.kill", ["$PPID", "9"])], [], {}), [c("kill", ["-9", "$PPID"])]), "self.tamper")
}

test_code_unparseable if {
	confirm_by(typed_code("python3", "os.system('x' if", code_doc([], ["os"], {"parse_error": "does not parse"}), []), "code.unparseable")
	allowed(typed_code("python3", "print('x' if", code_doc([], ["print"], {"parse_error": "does not parse"}), []))
}

# What code does to files is judged by the shell rules, on the commands it
# amounts to.
test_code_files_by_the_shell_rules if {
	rmtree := code_doc([call("shutil.rmtree", ["~"])], ["shutil"], {})
	denied_by(typed_code("python3", "shutil.rmtree(os.path.expanduser('~'))", rmtree, [wrapped(c("rm", ["-r", "--", "~"]), ["python:shutil.rmtree"])]), "fs.rm_protected")
	write := code_doc([call("open", ["~/.bashrc", "a"])], [], {})
	denied_by(typed_code("python3", "open(…, 'a')", write, [wrapped(redir(c("", []), ">", "~/.bashrc"), ["python:open"])]), "file.sensitive_write")
	allowed(typed_code("python3", "open('notes.txt', 'w')", code_doc([call("open", ["notes.txt", "w"])], [], {}), [wrapped(redir(c("", []), ">", "notes.txt"), ["python:open"])]))
	allowed(typed_code("python3", "print('rm -rf /')", code_doc([], [], {}), []))
}
