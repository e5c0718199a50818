// Package sandbox confines a session's whole process tree for its whole
// life: Landlock (filesystem, TCP, signal and abstract-socket scoping),
// seccomp, resource limits, a cgroup, no capabilities.
//
// The session's process is termgate re-executed as a launcher (main checks
// IsLauncher first thing). The gateway puts the launcher in the
// session's cgroups, then sends it its Spec on fd 3. The launcher closes
// every other inherited descriptor, opens its working directory and every
// granted path, unshares its namespaces (Isolation: a private /dev/shm;
// for a proxy session, a network of its own), sets rlimits,
// PR_SET_PDEATHSIG, its identity (--session-user), drops every
// capability, sets no_new_privs, applies Landlock, loads the seccomp
// filter (which refuses mount, unshare and setns to the session) and the
// exec gate's, lowers the data limit (RLIMIT_DATA) last, with nothing
// allocated between it and the exec, and execs the program: an
// allocation the limit refused would kill the launcher's Go runtime. A status pipe (fd 4, close-on-exec) closes empty when
// the exec happened, or carries the reason it did not. The gateway itself
// is never confined.
//
// # Launching
//
// Start is the one way a program is started confined (a session, the
// exec tool, `termgate sandbox run`): it readies the spec (Attach),
// points the command at the launcher, starts it through the caller's
// function (cmd.Start, or a PTY start), and returns once the program runs
// (or the launcher's reason it does not; then nothing of the launch is
// left). Launch.End, once the program has exited, kills what is left in
// the cgroup, removes it, stops the exec gate and removes the tmp the
// launch made.
//
// # The exec gate
//
// With Options.Judge, the launcher adds, after its own seccomp filter, a
// filter whose rules send execve and execveat to a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER; loaded with WAIT_KILLABLE_RECV where
// the kernel has it), and passes the listener to the gateway over a
// socket of its own (Spec.GateFD: fd 5, or 6 after a proxy launch's
// egress channel; SCM_RIGHTS) before its own exec. A launch's supervisor
// has judgeWorkers goroutines that take turns polling the listener and a
// stop pipe (the one that receives a request hands the turn on and
// handles the request itself); for each request it reads the
// pathname and argv (process_vm_readv, bounded: maxArgs, maxArgBytes),
// the working directory and the ancestry, resolves the executable under
// the process's root and identifies it (ProgramIndex), checks that the
// request still waits (so what it read was that process's), and asks the
// judge: continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE), or EPERM. An exec
// whose file does not exist, or is not a regular file, gets the kernel's
// errno without a judge. A slow answer (ExecVerdict.Ask) runs on a
// goroutine of its own. The first request of a launch is the launcher's
// own exec (no other task holds the filter yet). The supervisor ends at
// POLLHUP (no process of the launch is left) or End; it then closes the
// listener, and a process left fails every exec. The judge is the
// gateway's: this package imports no policy.
//
// With the gate, the calls the profile's seccomp filter refuses (the deny
// set, clone with namespace flags, TIOCSTI and TIOCLINUX, the socket
// families and types the profile refuses: namedRefusals) go to the same
// listener instead of being answered by the filter: the supervisor
// answers each with the errno the filter would give (refusedErrno), after
// telling the judge what was refused (ExecRequest.Refusal: the call, the
// argument that decided it, the program and its pid), whose verdict is
// not asked for. Without the gate, a confined launch given
// Options.Refused gets a listener of its own (Spec.NameRefusals) whose
// filter holds only those calls: no exec reaches it, none is judged, and
// each refusal is told to Options.Refused the same way. Each launch
// names a burst of refusals in full (refusalBurst, refilled at
// refusalRefill a second); past it a refused call is answered at once,
// without reading /proc, and told as Unread with the program last read
// for its thread, so that a program looping on a refused call costs the
// gateway a round trip per call and one counted entry, not a /proc read
// and a line each (BenchmarkRefusedCall). A request that arrives after
// the supervisor is gone fails with ENOSYS. clone3 (ENOSYS, so libc
// uses clone), a proxy session's unix sockets and connect without
// network stay plain errno actions (libc makes and connects a unix
// socket for every user or host lookup: naming them would be noise).
// Where the kernel has no user notification, and in an unconfined
// launch, nothing is named. Every rule on an int argument (a socket family or type, an
// ioctl request) compares its low 32 bits: the kernel reads an int, so a
// 64-bit comparison would let a program pass a rule by setting a high
// bit. Departure from a plain ExecJudge: with the gate, the refusals ride
// on the judge (rather than Options.Refused) so that no caller's type
// changes.
//
// Known limits of the gate, written down: what it reads of a process's
// memory can be changed by another thread of it before the kernel runs
// the exec (the sandbox stays the boundary); a copy of a system program
// that differs by a byte is not recognised; a process of another
// architecture is killed; an argv over the limits is refused.
//
// # Landlock's denials
//
// From ABI 7 the launcher makes its domain with
// LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON, so the kernel logs the
// program's denials through the audit subsystem, once the operator turns
// auditing on (auditctl -e 1; never the gateway). LandlockAudit (root:
// CAP_AUDIT_READ) joins the audit log's read-only multicast group
// (AUDIT_NLGRP_READLOG: it reads beside auditd), keeps only messages the
// kernel sent, and hands each AUDIT_LANDLOCK_ACCESS record to the launch
// whose launcher made its domain (the AUDIT_LANDLOCK_DOMAIN record's pid);
// other domains' denials are dropped. Sync sends an AUDIT_TRUSTED_APP
// mark of its own and waits for it to come back, so that every record
// logged before it has been read. Every record is outside input
// (FuzzParseAuditMessages).
//
// # How paths are resolved
//
// A profile's paths ({cwd}, {home}, {tmp}, {path} expanded) are resolved
// to real paths (RealPath: links, "..", and the magic links of /proc such
// as /proc/self/root are gone) before anything looks at them. The
// gateway's own files are resolved too (the part that does not exist yet
// kept below its nearest existing directory). A grant is refused when it
// is "/", one of the gateway's files, a directory that holds one, or one
// inside them: compared as real paths, and also by device and inode (the
// same directory under another name, such as a bind mount, is caught, and
// so is such a mount below a grant). A write grant under /proc, /sys or
// /dev (/dev/shm aside) or on one of the kernel's own file systems is
// refused. A {path} directory that would be refused is left out instead.
//
// Attach seals a spec: every grant gets the device and inode it has now,
// and the working directory must have the identity the gateway checked
// (Vars.CwdID). The launcher opens each grant and the working directory
// with openat2(RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS) and refuses any
// other file than the one sealed: a link or a directory swapped in after
// the check fails the launch, it is never followed. Its Landlock rules are
// made from those descriptors (go-landlock's syscall package; its
// path-based rules open paths following links, which is what let a cwd of
// /proc/self/root become a grant of /), and it enters the working
// directory with fchdir.
//
// # Environment
//
// A profile's Env is its environment allowlist (DefaultEnv when it names
// none); Environ filters the gateway's environment through it and a deny
// list (DefaultEnvDeny: credentials), and never passes an exported shell
// function.
//
// # Egress
//
// A profile with network "proxy" reaches the network only through the
// gateway's egress proxy (Egress, which takes the gateway's judge: this
// package imports no policy): the launcher binds the proxy's listener in
// the session's own network namespace and hands it, and a sock_diag
// socket of that namespace, to the gateway over fd 5. See Egress for
// the protocols, names and addresses, and what is reported. Where the
// gateway cannot make namespaces (it is not root), the listener is on the
// host's loopback, Landlock allows TCP to its port only, seccomp refuses
// datagram and raw sockets, and the status says what is weaker. A proxy
// session makes no unix socket (socketpair aside) unless its profile says
// unix_sockets: connect must stay open for the proxy, and Landlock before
// ABI 9 cannot stop connecting to a unix socket outside.
//
// # Cgroups
//
// Each launch gets termgate/<name> in the pids hierarchy (cgroup v2 when
// its pids controller is enabled, else v1), and in the v1 freezer
// hierarchy when it is mounted; and, for its memory limit
// (Limits.SessionMemory, default half of RAM), in the v1 memory hierarchy
// (memory.limit_in_bytes and memsw), or memory.max in its v2 cgroup. Kill freezes the cgroup (or uses
// cgroup.kill), kills every member, thaws it and waits until it is empty:
// a swarm that keeps forking and calling setsid cannot outrun it. The
// gateway moves the launcher into its cgroups as soon as it has started
// (a move between v1 cgroups waits for an RCU grace period, which then
// overlaps the launcher's own start), and only then sends it its spec:
// the launcher blocks on the spec, so nothing of the launch runs outside
// its cgroups.
//
// The Landlock ABI is checked, never assumed: below MinABI a launch fails,
// unless the spec says best effort, and then the session's status says
// what is not enforced. Profiles come from the policy bundle
// (data.termgate.profiles). Known limits, written down: UDP is not
// covered by Landlock before ABI 10 (network none blocks it with seccomp,
// proxy with its network namespace, tcp and any do not); connecting to a
// pathname unix socket outside the sandbox needs ABI 9 (none refuses
// connect, proxy refuses unix sockets unless its profile allows them);
// /proc is readable (the gateway sets itself non-dumpable so sessions
// cannot read its memory or environment). Landlock's own denials (ABI 7
// logs them through the kernel's audit subsystem) are not read: the
// kernel writes them only while auditing is on for the whole machine,
// which is the operator's to turn on, not the gateway's.
package sandbox
