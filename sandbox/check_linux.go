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
	LandlockABI int
	SeccompAPI  uint // libseccomp API level; 0: none
	PidsCgroup  string
	UserNS      bool
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
	for _, root := range cgroupRoots() {
		if _, err := os.Stat(root + "/pids.max"); err == nil || isV1PidsRoot(root) {
			if _, err := os.Stat(root); err == nil {
				s.PidsCgroup = root
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) != "0" {
		s.UserNS = true
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
	fmt.Fprintf(&b, "user namespaces:   %s (sessions may not create them)\n", ok(s.UserNS))
	fmt.Fprintf(&b, "running as uid:    %d\n", os.Getuid())
	return b.String()
}
