package sandbox

import (
	"errors"
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The Landlock rights a rule grants, as go-landlock's RODirs, ROFiles,
// RWDirs and RWFiles name them.
const (
	accessRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSTruncate
	accessFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile | ll.AccessFSIoctlDev
)

// handledFS are the filesystem rights Landlock ABI abi knows (up to
// MinABI's: the rights a confined session is denied unless granted).
func handledFS(abi int) uint64 {
	var h uint64
	if abi >= 1 {
		h = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSRemoveDir |
			ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
			ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym
	}
	if abi >= 2 {
		h |= ll.AccessFSRefer
	}
	if abi >= 3 {
		h |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		h |= ll.AccessFSIoctlDev
	}
	return h
}

// grantAccess is what a grant allows.
func grantAccess(g Grant) uint64 {
	var a uint64
	switch g.Access {
	case "read":
		a = accessRead
	case "write":
		a = accessRead | accessWrite | ll.AccessFSRefer
	case "device":
		a = accessRead | accessWrite | ll.AccessFSIoctlDev
	case "list":
		a = ll.AccessFSReadDir
	}
	if !g.Dir {
		a &= accessFile
	}
	return a
}

// enterDir makes dir the working directory, opened without following any
// link, after checking it is the directory the gateway checked.
func enterDir(dir string, want FileID) error {
	fd, st, err := openNoFollow(dir, unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("cwd %s: %v; nothing was started", dir, err)
	}
	defer unix.Close(fd)
	if !want.IsZero() && idOf(&st) != want {
		return fmt.Errorf("cwd %s is not the directory the gateway checked (it was replaced); nothing was started", dir)
	}
	if err := unix.Fchdir(fd); err != nil {
		return fmt.Errorf("cwd %s: %v", dir, err)
	}
	return nil
}

// openedGrant is a grant and its descriptor.
type openedGrant struct {
	Grant
	fd int
}

// openGrants opens every grant without following links and checks each
// is the file the gateway checked. The descriptors are close-on-exec.
func openGrants(s Spec) ([]openedGrant, error) {
	if len(s.Grants) == 0 && len(s.Read)+len(s.Write)+len(s.Devices) > 0 {
		return nil, errors.New("the spec's paths were never checked (no grants); nothing was started")
	}
	out := make([]openedGrant, 0, len(s.Grants))
	for _, g := range s.Grants {
		fd, st, err := openNoFollow(g.Path, 0)
		if err != nil {
			closeGrants(out)
			return nil, fmt.Errorf("%s %v; nothing was started", g.Access, err)
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if idOf(&st) != g.ID || isDir != g.Dir {
			unix.Close(fd)
			closeGrants(out)
			return nil, fmt.Errorf("%s %s is not the file the gateway checked (it was replaced); nothing was started", g.Access, g.Path)
		}
		out = append(out, openedGrant{Grant: g, fd: fd})
	}
	return out, nil
}

func closeGrants(gs []openedGrant) {
	for _, g := range gs {
		unix.Close(g.fd)
	}
}

// applyLandlock restricts the filesystem to the opened grants, TCP to the
// spec's ports (a session in a network namespace of its own binds and
// connects freely there: its only way out is the gateway's proxy), and
// signals and abstract unix sockets to the session itself. The ABI is
// checked, never assumed: below the spec's the launch fails unless it
// says best effort, and then what the kernel knows is enforced. The
// domain is this thread's, which is the one that execs.
func applyLandlock(s Spec, grants []openedGrant) error {
	defer closeGrants(grants)
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	if abi < s.RequiredABI() && !s.BestEffort {
		return fmt.Errorf("this kernel's Landlock ABI is %d; confined sessions need %d (run termgate sandbox check; --sandbox=best-effort runs degraded)", abi, s.RequiredABI())
	}
	// From ABI 7 the domain's denials are logged after the exec too, so
	// that a gateway reading the kernel's audit records can name them
	// (landlockaudit_linux.go); the kernel logs nothing unless the
	// operator turned auditing on.
	var flags uint32
	if abi >= 7 {
		flags = unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
	}
	abi = min(abi, MinABI)
	if abi < 1 {
		return nil // best effort, and nothing to enforce with
	}
	attr := ll.RulesetAttr{HandledAccessFS: handledFS(abi)}
	if abi >= 4 && s.Network != "any" && !ownNetwork(s) {
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	rfd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock: creating the ruleset: %v", err)
	}
	defer unix.Close(rfd)
	for _, g := range grants {
		a := grantAccess(g.Grant) & attr.HandledAccessFS
		if a == 0 {
			continue
		}
		if err := ll.LandlockAddPathBeneathRule(rfd, &ll.PathBeneathAttr{AllowedAccess: a, ParentFd: g.fd}, 0); err != nil {
			return fmt.Errorf("landlock: rule for %s: %v", g.Path, err)
		}
	}
	if (s.Network == "tcp" || s.Network == "proxy") && attr.HandledAccessNet != 0 {
		for _, p := range s.Ports {
			if err := ll.LandlockAddNetPortRule(rfd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(p)}, 0); err != nil {
				return fmt.Errorf("landlock: rule for TCP port %d: %v", p, err)
			}
		}
	}
	if err := ll.LandlockRestrictSelf(rfd, flags); err != nil {
		return fmt.Errorf("landlock: %v", err)
	}
	return nil
}

// ownNetwork reports whether the session gets a network namespace of its
// own (a proxy session of a gateway that can make one).
func ownNetwork(s Spec) bool { return s.Isolate != nil && s.Isolate.Net }
