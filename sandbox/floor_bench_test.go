package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floorChildEnv makes this test binary the child of BenchmarkExecGateFloor:
// it loads the exec gate's own filter, as an unconfined launch does
// (gateExecs: execve and execveat sent to a listener), hands the
// listener over on descriptor 5, and execs its arguments.
const floorChildEnv = "TERMGATE_TEST_FLOOR_CHILD"

func init() {
	if os.Getenv(floorChildEnv) == "" {
		return
	}
	os.Exit(floorChild(os.Args[len(os.Args)-3:]))
}

// floorChild runs in the child: the filter is loaded on the thread that
// execs (no other thread needs it: they end with the exec).
func floorChild(argv []string) int {
	runtime.LockOSThread()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "floor child:", err); return 2 }
	if os.Getenv(floorChildEnv) == "filter" {
		if err := gateExecs(Spec{Unconfined: true, ExecGate: true, GateFD: 5}); err != nil {
			return fail(err)
		}
	}
	unix.CloseRange(3, ^uint(0), 0)
	return fail(syscall.Exec(argv[0], argv, []string{"PATH=/usr/bin:/bin"}))
}

// BenchmarkExecGateFloor: the bare kernel round trip of a held exec, the
// floor under any exec gate: a shell runs /bin/true 500 times under a
// filter that notifies on execve, and a supervisor answers each request
// CONTINUE at once, reading nothing of the process; against the same
// shell with no filter, alternating. Ways of waiting: "poll" (poll(2),
// then the receive ioctl, as the gate does) and "recv" (the receive
// ioctl blocks), each with the listener's SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
// ("sync") and without. gateway-cpu-µs/exec is this process's CPU time
// per exec (the supervisor's).
//
//	go test ./sandbox -run '^$' -bench ExecGateFloor -benchtime 5x
func BenchmarkExecGateFloor(b *testing.B) {
	if err := NotifySupport(); err != nil {
		b.Skip(err)
	}
	const n = 500
	const execs = n + 2 // bash, seq, and the loop's
	script := fmt.Sprintf("for i in $(seq %d); do /bin/true; done", n)
	cpu := func() (time.Duration, int64) {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw
	}
	type way struct {
		name       string
		poll, sync bool
	}
	ways := []way{{"poll", true, false}, {"poll-sync", true, true}, {"recv", false, false}, {"recv-sync", false, true}}
	wall := map[string][]time.Duration{}
	used := map[string][]time.Duration{}
	vcsw := map[string][]time.Duration{}
	run := func(w *way) {
		mine, theirs, err := gateSocket()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "/bin/bash", "-c", script)
		cmd.Env = []string{floorChildEnv + "=off"}
		if w != nil {
			cmd.Env = []string{floorChildEnv + "=filter"}
		}
		cmd.ExtraFiles = []*os.File{nil, nil, theirs} // on 5, where a launch's gate socket goes
		cmd.Stderr = os.Stderr
		name := "off"
		if w != nil {
			name = w.name
		}
		c0, sw0 := cpu()
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		theirs.Close()
		served := make(chan int, 1)
		if w != nil {
			fd, err := receiveListener(mine)
			if err != nil {
				b.Fatal(err)
			}
			if w.sync {
				if err := unix.IoctlSetInt(fd, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); err != nil {
					b.Fatal(err)
				}
			}
			go func() { served <- floorServe(fd, w.poll, execs); unix.Close(fd) }()
		} else {
			served <- -1
		}
		mine.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		k := <-served
		c1, sw1 := cpu()
		if w != nil && k != execs {
			b.Fatalf("%s: %d requests answered, want %d", name, k, execs)
		}
		wall[name] = append(wall[name], d)
		used[name] = append(used[name], c1-c0)
		vcsw[name] = append(vcsw[name], time.Duration(sw1-sw0))
	}
	for i := 0; i < b.N; i++ {
		run(nil)
		for j := range ways {
			run(&ways[j])
		}
	}
	med := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	off, offCPU, offSw := med(wall["off"]), med(used["off"]), med(vcsw["off"])
	b.ReportMetric(float64(off)/n/float64(time.Microsecond), "off-µs/exec")
	for _, w := range ways {
		b.ReportMetric(float64(med(wall[w.name])-off)/n/float64(time.Microsecond), w.name+"-added-µs/exec")
		b.ReportMetric(float64(med(used[w.name])-offCPU)/n/float64(time.Microsecond), w.name+"-gateway-cpu-µs/exec")
		b.ReportMetric(float64(med(vcsw[w.name])-offSw)/n, w.name+"-vcsw/exec")
	}
	b.ReportMetric(0, "ns/op")
}

// floorServe answers the requests on listener fd CONTINUE, want of
// them (a receive that blocks could not see the last process go), and
// returns how many it answered.
func floorServe(fd int, poll bool, want int) int {
	answered := 0
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for answered < want {
		if poll {
			fds[0].Revents = 0
			if _, err := unix.Poll(fds, -1); err != nil {
				if err == unix.EINTR {
					continue
				}
				return answered
			}
			if fds[0].Revents&unix.POLLIN == 0 {
				return answered // POLLHUP: no process is left
			}
		}
		var req notifReq
		if err := notifIoctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return answered
		}
		resp := notifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		if notifIoctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) == nil {
			answered++
		}
	}
	return answered
}
