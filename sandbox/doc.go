// Package sandbox confines a session's whole process tree for its whole
// life: Landlock (filesystem, TCP, signal and abstract-socket scoping),
// seccomp, resource limits, a pids cgroup, no capabilities.
//
// The session's process is termgate re-executed as a launcher (main checks
// IsLauncher first thing). The launcher reads its Spec from fd 3, closes
// every other inherited descriptor, moves into the session's cgroup, sets
// rlimits, PR_SET_PDEATHSIG, its identity (--session-user), drops every
// capability, sets no_new_privs, applies Landlock, loads the seccomp
// filter last, and execs the program. A status pipe (fd 4, close-on-exec)
// closes empty when the exec happened, or carries the reason it did not.
// The gateway itself is never confined.
//
// The Landlock ABI is checked, never assumed: below MinABI a launch fails,
// unless the spec says best effort, and then the session's status says
// what is not enforced. Profiles come from the policy bundle
// (data.termgate.profiles). Known limits, written down: UDP is not
// covered by Landlock before ABI 10 (network none blocks it with seccomp,
// tcp and any do not); connecting to a pathname unix socket outside the
// sandbox needs ABI 9; /proc is readable (the gateway sets itself
// non-dumpable so sessions cannot read its memory or environment).
package sandbox
