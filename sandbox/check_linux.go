package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
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
	ExecNotify   error // why the exec gate cannot hold execs here; nil: it can
	// LandlockDenials says how Landlock's denials are learnt here
	// (LandlockDenialsSource).
	LandlockDenials string
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
	s.ExecNotify = NotifySupport()
	s.LandlockDenials = LandlockDenialsSource(s.LandlockABI)
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

// NotifySupport says whether the exec gate can hold execs here: it needs
// seccomp user notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE (Linux
// 5.5) and libseccomp's notification API (API level 6). nil: it can.
func NotifySupport() error {
	if api, _ := seccomp.GetAPI(); api < 6 {
		return fmt.Errorf("libseccomp API level %d, and notification needs 6", api)
	}
	var sizes [3]uint16
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
		return fmt.Errorf("the kernel has no seccomp user notification (%v)", e)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return err
	}
	if !kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 5) {
		return errors.New("the kernel predates Linux 5.5, which lets a notified system call continue")
	}
	return nil
}

// kernelAtLeast compares a kernel release ("6.1.0-18-amd64") with a
// version.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
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
	if s.ExecNotify == nil {
		fmt.Fprintf(&b, "exec gate:         yes (seccomp user notification)\n")
	} else {
		fmt.Fprintf(&b, "exec gate:         NO: %v\n", s.ExecNotify)
	}
	fmt.Fprintf(&b, "landlock denials:  %s\n", s.LandlockDenials)
	fmt.Fprintf(&b, "seccomp refusals:  %s\n", map[bool]string{true: "named, through the exec gate's listener (--exec-gate enforce or audit)",
		false: "not named (no exec gate here): refused with their errno"}[s.ExecNotify == nil])
	fmt.Fprintf(&b, "running as uid:    %d\n", os.Getuid())
	return b.String()
}
