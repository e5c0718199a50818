package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The egress proxy's cost, side by side with a direct loopback
// connection in one run:
//
//	go test ./sandbox -run '^$' -bench 'Egress|Launch' -benchtime 2000x
//
// The proxy's session looks up the program of every connection in /proc
// as in production (its cgroup's processes are this test process), and
// the judge answers at once, as a cached decision does.

// benchProxy serves a proxy session whose members are this process.
func benchProxy(b *testing.B) string {
	b.Helper()
	e, err := NewEgress(EgressOptions{Helper: "/nonexistent", Judge: func(context.Context, *EgressSession, Destination) Verdict {
		return Verdict{Allow: true, Rule: "bench"}
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	procs := filepath.Join(b.TempDir(), "cgroup.procs")
	os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	s := e.NewSession()
	s.name, s.profile, s.netns, s.leader, s.procs = "s-bench", "default", true, os.Getpid(), []string{procs}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		b.Fatal(err)
	}
	s.diag = newSockDiag(fd)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.serve([]net.Listener{ln}, []string{"proxy"})
	return ln.Addr().String()
}

// echoServer answers every byte.
func echoServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// dialThrough opens a connection to target, through the proxy when one
// is given.
func dialThrough(proxy, target string) (net.Conn, io.Reader, error) {
	if proxy == "" {
		c, err := net.Dial("tcp", target)
		return c, c, err
	}
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT: %v %v", resp, err)
	}
	return c, br, nil
}

func medianMicros(b *testing.B, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2])/float64(time.Microsecond), "median-µs")
	b.ReportMetric(float64(d[len(d)*99/100])/float64(time.Microsecond), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEgressConnect is a new connection's latency, up to the first
// byte back: direct to a loopback echo, and through the proxy.
func BenchmarkEgressConnect(b *testing.B) {
	target := echoServer(b)
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			proxy := ""
			if via == "proxy" {
				proxy = benchProxy(b)
			}
			d := make([]time.Duration, 0, b.N)
			one := make([]byte, 1)
			for range b.N {
				t0 := time.Now()
				c, r, err := dialThrough(proxy, target)
				if err != nil {
					b.Fatal(err)
				}
				c.Write(one)
				if _, err := io.ReadFull(r, one); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
				c.Close()
			}
			medianMicros(b, d)
		})
	}
}

// BenchmarkEgressThroughput is 64 MiB one way and back, direct and
// through a CONNECT tunnel.
func BenchmarkEgressThroughput(b *testing.B) {
	target := echoServer(b)
	const size = 64 << 20
	buf := make([]byte, 256<<10)
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			proxy := ""
			if via == "proxy" {
				proxy = benchProxy(b)
			}
			b.SetBytes(size)
			for range b.N {
				c, r, err := dialThrough(proxy, target)
				if err != nil {
					b.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					for sent := 0; sent < size; sent += len(buf) {
						if _, err := c.Write(buf); err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				if _, err := io.CopyN(io.Discard, r, size); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkLaunch is a launch of /bin/true to its exit, as a session
// starts: without namespaces, with the mount namespace (private
// /dev/shm), and with the mount and network namespaces and the proxy's
// listener of a proxy session.
func BenchmarkLaunch(b *testing.B) {
	if !canIsolate() || Probe().LandlockABI < MinABI {
		b.Skip("needs root and Landlock")
	}
	e, err := NewEgress(EgressOptions{Judge: func(context.Context, *EgressSession, Destination) Verdict { return Verdict{} }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, mode := range []string{"no namespaces", "mount namespace", "mount and network namespaces"} {
		b.Run(mode, func(b *testing.B) {
			t := &testing.T{}
			_ = t
			d := make([]time.Duration, 0, b.N)
			for range b.N {
				l := benchLayout(b)
				p := Profile{Name: "b", Network: "none", Read: []string{"/usr", "/lib", "/lib64", "/bin", "/etc"}, Write: []string{"{cwd}", "/dev/shm"}, Devices: []string{"/dev/null"}}
				if mode == "mount and network namespaces" {
					p.Network = "proxy"
				}
				id, _, _ := Identify(l)
				s, err := p.Resolve(Vars{Cwd: l, CwdID: id, Home: "/nonexistent"}, nil)
				if err != nil {
					b.Fatal(err)
				}
				s.Argv, s.Dir, s.Env = []string{"/bin/true"}, l, []string{"PATH=/usr/bin:/bin"}
				var es *EgressSession
				if p.Network == "proxy" {
					es = e.NewSession()
					s.Egress = es
				}
				t0 := time.Now()
				_, cg, err := s.Attach(fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().UnixNano()), "")
				if err != nil {
					b.Fatal(err)
				}
				if mode == "no namespaces" {
					s.Isolate = nil
				}
				cmd := exec.Command("/bin/false")
				la, err := prepare(cmd, s)
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				la.closeChildEnds(cmd)
				if err := la.send(cmd.Process.Pid); err != nil {
					b.Fatal(err)
				}
				err = la.started(cmd)
				la.close()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(t0))
				if es != nil {
					es.Close()
				}
				cg.Kill()
				cg.Remove()
			}
			medianMicros(b, d)
		})
	}
}

func benchLayout(b *testing.B) string {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return dir
}
