package sandbox

import (
	"fmt"
	"os"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	seccomp "github.com/seccomp/libseccomp-golang"
)

// Support is what this kernel can enforce.
type Support struct {
	LandlockABI  int
	SeccompAPI   uint // libseccomp API level; 0: none
	PidsCgroup   string
	Freezer      string // how a closing session's cgroup is stopped before it is killed
	UserNS       bool
	Namespaces   bool // the launcher can make a session's mount and network namespaces
	MemoryCgroup string
}

// Probe asks the kernel.
func Probe() Support {
	var s Support
	if abi, err := llsys.LandlockGetABIVersion(); err == nil {
		s.LandlockABI = abi
	}
	if api, err := seccomp.GetAPI(); err == nil {
		s.SeccompAPI = api
	}
	switch {
	case v2Pids():
		s.PidsCgroup = cgroupFS + " (v2)"
		s.Freezer = "cgroup.kill / cgroup.freeze (v2)"
	case v1Root("pids") != "":
		s.PidsCgroup = v1Root("pids")
		if r := v1Root("freezer"); r != "" {
			s.Freezer = r
		}
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) != "0" {
		s.UserNS = true
	}
	s.Namespaces = canIsolate()
	switch {
	case v2Pids():
		if b, err := os.ReadFile(cgroupFS + "/cgroup.controllers"); err == nil && contains(strings.Fields(string(b)), "memory") {
			s.MemoryCgroup = cgroupFS + " (v2)"
		}
	case v1Root("memory") != "":
		s.MemoryCgroup = v1Root("memory")
	}
	return s
}

// Report is Probe's answer for people.
func (s Support) Report() string {
	var b strings.Builder
	ok := func(v bool) string {
		if v {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(&b, "landlock ABI:      %d (confined sessions need %d): %s\n", s.LandlockABI, MinABI, ok(s.LandlockABI >= MinABI))
	fmt.Fprintf(&b, "seccomp:           %s (libseccomp API level %d)\n", ok(s.SeccompAPI > 0), s.SeccompAPI)
	pc := s.PidsCgroup
	if pc == "" {
		pc = "none (process counts bound by RLIMIT_NPROC only, which does not bind root)"
	}
	fmt.Fprintf(&b, "pids cgroup:       %s\n", pc)
	fz := s.Freezer
	if fz == "" {
		fz = "none (a closing session's cgroup is swept, not frozen)"
	}
	fmt.Fprintf(&b, "freezer:           %s\n", fz)
	mc := s.MemoryCgroup
	if mc == "" {
		mc = "none (a session's memory is bound per process by RLIMIT_DATA only)"
	}
	fmt.Fprintf(&b, "memory cgroup:     %s\n", mc)
	ns := "yes: each session gets its own /dev/shm, and a proxy session its own network"
	if !s.Namespaces {
		ns = "NO (the gateway is not root): /dev/shm is shared, and the egress proxy is enforced by Landlock's TCP port rule only"
	}
	fmt.Fprintf(&b, "namespaces:        %s\n", ns)
	fmt.Fprintf(&b, "user namespaces:   %s (sessions may not create them)\n", ok(s.UserNS))
	fmt.Fprintf(&b, "running as uid:    %d\n", os.Getuid())
	return b.String()
}
