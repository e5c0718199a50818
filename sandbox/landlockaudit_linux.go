package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Reading Landlock's denials from the kernel's audit records. From ABI 7
// a domain logs its denials through the audit subsystem (the launcher
// asks for them after exec too: LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON),
// but only while auditing is on (auditctl -e 1), which is the operator's
// choice: the gateway never turns it on. The gateway (root) joins the
// read-only multicast group of the audit netlink socket
// (AUDIT_NLGRP_READLOG, which needs CAP_AUDIT_READ), so it reads beside
// auditd rather than in its place, and takes only messages the kernel
// sent (sender port 0). A denial (AUDIT_LANDLOCK_ACCESS) names its domain;
// the domain's record (AUDIT_LANDLOCK_DOMAIN, status=allocated, in the
// same event as its first denial) names the pid that made it, which is a
// launch's launcher, whose pid its program keeps: that is how a denial is
// matched to its launch, and a denial of any other domain (another
// gateway's session, another program's sandbox) is dropped. A domain made
// before the reader joined is never matched: its first denial was missed.
//
// Records reach the reader asynchronously (the kernel's kauditd thread).
// Sync waits until every record logged before it has been read: it sends
// a user message of its own (AUDIT_TRUSTED_APP, "termgate-sync=NONCE"),
// which the kernel queues behind them, and waits for it to come back. The
// mark is also written to the system's audit log, so the gateway sends one
// only for a call whose output reports a refusal.

// LandlockAudit reads Landlock's denials for the launches that watch it.
type LandlockAudit struct {
	fd    int // the multicast reader
	stopR *os.File
	stopW *os.File
	done  chan struct{}
	nonce string

	mu       sync.Mutex
	domains  map[uint64]int               // domain → the pid that made it (a watched launch's)
	pending  []*LandlockDenial            // denials whose domain is not known yet (bounded)
	watchers map[int]func(LandlockDenial) // by launch pid
	syncs    map[uint64]chan struct{}     // sync marks in flight, by number
	next     uint64
}

// maxPending bounds the denials kept while their domain is unknown or
// not watched yet; maxDomains the domains remembered.
const (
	maxPending = 256
	maxDomains = 4096
)

// AuditEnabled reports the kernel's audit state: 0 off, 1 on, 2 on and
// locked; an error when the kernel has no audit or the gateway may not
// ask.
func AuditEnabled() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return 0, fmt.Errorf("the audit netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := auditRequest(fd, unix.AUDIT_GET, nil); err != nil {
		return 0, err
	}
	buf := make([]byte, 8192)
	for range 4 {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, fmt.Errorf("reading the audit status: %w", err)
		}
		for _, m := range parseNetlinkMessages(buf[:n]) {
			switch m.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return 0, fmt.Errorf("the audit status: %w", unix.Errno(-e))
					}
				}
			case unix.AUDIT_GET:
				if len(m.Data) < 8 {
					return 0, errors.New("the audit status: short reply")
				}
				return int(binary.NativeEndian.Uint32(m.Data[4:8])), nil
			}
		}
	}
	return 0, errors.New("the audit status: no reply")
}

// SetAuditEnabled turns the kernel's auditing on (1) or off (0). The
// gateway never calls it (auditing is the operator's choice); tests do.
func SetAuditEnabled(v int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return fmt.Errorf("the audit netlink socket: %w", err)
	}
	defer unix.Close(fd)
	st := make([]byte, 8) // struct audit_status: mask, enabled (the kernel zeroes the rest)
	binary.NativeEndian.PutUint32(st[0:], unix.AUDIT_STATUS_ENABLED)
	binary.NativeEndian.PutUint32(st[4:], uint32(v))
	if err := auditRequest(fd, unix.AUDIT_SET, st); err != nil {
		return err
	}
	return auditAck(fd)
}

// auditRequest sends one request to the kernel, asking for an ack.
func auditRequest(fd int, typ uint16, payload []byte) error {
	msg := make([]byte, 16+len(payload))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	copy(msg[16:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("asking the kernel's audit: %w", err)
	}
	return nil
}

// auditAck waits for the kernel's answer to a request.
func auditAck(fd int) error {
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("the kernel's audit answer: %w", err)
	}
	for _, m := range parseNetlinkMessages(buf[:n]) {
		if m.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
				return fmt.Errorf("the kernel's audit: %w", unix.Errno(-e))
			}
			return nil
		}
	}
	return errors.New("the kernel's audit: no answer")
}

// OpenLandlockAudit joins the audit log's multicast group and starts
// reading. It fails where the kernel has no audit or the gateway lacks
// CAP_AUDIT_READ; it does not need auditing on (records flow once the
// operator turns it on).
func OpenLandlockAudit() (*LandlockAudit, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("the audit netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("joining the audit log's multicast group: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	var nb [8]byte
	_, _ = rand.Read(nb[:])
	a := &LandlockAudit{fd: fd, stopR: r, stopW: w, done: make(chan struct{}), nonce: hex.EncodeToString(nb[:]),
		domains: map[uint64]int{}, watchers: map[int]func(LandlockDenial){}, syncs: map[uint64]chan struct{}{}}
	go a.loop()
	return a, nil
}

// Close stops the reader and waits for it.
func (a *LandlockAudit) Close() {
	if a == nil {
		return
	}
	a.stopW.Close()
	<-a.done
}

// Watch hands fn every denial of the domain that the process pid made
// (a launch's: its program's pid), until the returned cancel. fn runs on
// the reader's goroutine: it must be quick.
func (a *LandlockAudit) Watch(pid int, fn func(LandlockDenial)) (cancel func()) {
	if a == nil || pid <= 0 {
		return func() {}
	}
	a.mu.Lock()
	a.watchers[pid] = fn
	// Denials read before the watch began (the launch's first moments).
	deliver := a.flushLocked(func(d *LandlockDenial) bool { return a.domains[d.Domain] == pid })
	a.mu.Unlock()
	for _, f := range deliver {
		f()
	}
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.watchers, pid)
		for d, p := range a.domains {
			if p == pid {
				delete(a.domains, d)
			}
		}
	}
}

// Sync returns once every record the kernel logged before it was read
// (and handed to its watcher), or with an error when auditing is off or
// ctx ends first.
func (a *LandlockAudit) Sync(ctx context.Context) error {
	if a == nil {
		return errors.New("no audit reader")
	}
	on, err := AuditEnabled()
	if err != nil {
		return err
	}
	if on == 0 {
		return errors.New("auditing is off")
	}
	a.mu.Lock()
	a.next++
	n := a.next
	ch := make(chan struct{})
	a.syncs[n] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.syncs, n)
		a.mu.Unlock()
	}()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return fmt.Errorf("the audit netlink socket: %w", err)
	}
	err = auditRequest(fd, auditTrustedApp, []byte(a.mark(n)+"\x00")) // the kernel takes the last byte for a NUL
	if err == nil {
		err = auditAck(fd)
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-a.done:
		return errors.New("the audit reader stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mark is the text of sync mark n.
func (a *LandlockAudit) mark(n uint64) string {
	return fmt.Sprintf("termgate-sync=%s-%d", a.nonce, n)
}

// loop reads until Close.
func (a *LandlockAudit) loop() {
	defer close(a.done)
	defer a.stopR.Close()
	defer unix.Close(a.fd)
	buf := make([]byte, 1<<16)
	fds := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLIN}, {Fd: int32(a.stopR.Fd()), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents != 0 {
				return
			}
			continue
		}
		n, from, err := unix.Recvfrom(a.fd, buf, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOBUFS):
			continue // ENOBUFS: records were lost to an overrun; read on
		case err != nil:
			return
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // only the kernel speaks for the audit log
		}
		for _, m := range parseNetlinkMessages(buf[:n]) {
			a.handle(m)
		}
	}
}

// handle takes one record.
func (a *LandlockAudit) handle(m auditMessage) {
	if m.Type == auditTrustedApp {
		a.syncMark(m.Data)
		return
	}
	ev, ok := parseLandlock(m.Type, m.Data)
	if !ok {
		return
	}
	var deliver []func()
	a.mu.Lock()
	switch {
	case ev.Deallocated:
		delete(a.domains, ev.Domain)
	case ev.Allocated:
		if len(a.domains) >= maxDomains {
			for d := range a.domains { // forget one: a bound, not an order
				delete(a.domains, d)
				break
			}
		}
		a.domains[ev.Domain] = ev.Pid
		// Its first denial came just before, in the same event.
		deliver = a.flushLocked(func(d *LandlockDenial) bool { return d.Domain == ev.Domain })
	case ev.Denial != nil:
		if pid, ok := a.domains[ev.Domain]; ok && a.watchers[pid] != nil {
			deliver = append(deliver, a.deliverLocked(pid, *ev.Denial))
			break
		}
		if len(a.pending) == maxPending {
			a.pending = append(a.pending[:0], a.pending[1:]...)
		}
		a.pending = append(a.pending, ev.Denial)
	}
	a.mu.Unlock()
	for _, f := range deliver {
		f()
	}
}

// flushLocked takes the pending denials that match and whose domain's
// launch is watched, and returns their deliveries.
func (a *LandlockAudit) flushLocked(match func(*LandlockDenial) bool) []func() {
	var deliver []func()
	kept := a.pending[:0]
	for _, d := range a.pending {
		if pid, ok := a.domains[d.Domain]; ok && match(d) && a.watchers[pid] != nil {
			deliver = append(deliver, a.deliverLocked(pid, *d))
		} else {
			kept = append(kept, d)
		}
	}
	clear(a.pending[len(kept):])
	a.pending = kept
	return deliver
}

// deliverLocked is the call that hands d to pid's watcher, made after the
// lock is released.
func (a *LandlockAudit) deliverLocked(pid int, d LandlockDenial) func() {
	fn := a.watchers[pid]
	if fn == nil {
		return func() {}
	}
	return func() { fn(d) }
}

// syncMark wakes the Sync whose mark a user message carries.
func (a *LandlockAudit) syncMark(data []byte) {
	s := string(data)
	i := strings.Index(s, "termgate-sync="+a.nonce+"-")
	if i < 0 {
		return
	}
	rest := s[i+len("termgate-sync="+a.nonce+"-"):]
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	var n uint64
	if _, err := fmt.Sscan(rest, &n); err != nil {
		return
	}
	a.mu.Lock()
	if ch, ok := a.syncs[n]; ok {
		close(ch)
		delete(a.syncs, n)
	}
	a.mu.Unlock()
}

// LandlockDenialsSource says, for people, how the gateway learns what
// Landlock refused on this machine now: from the kernel's audit records,
// or inferred from the programs' own permission errors.
func LandlockDenialsSource(abi int) string {
	const inferred = "inferred from the programs' own permission errors"
	switch on, err := AuditEnabled(); {
	case abi < 7:
		return fmt.Sprintf("%s (Landlock ABI %d logs no denial after exec; 7 does)", inferred, abi)
	case err != nil:
		return fmt.Sprintf("%s (the kernel's audit cannot be read: %v)", inferred, err)
	case on == 0:
		return inferred + " (the kernel's auditing is off; `auditctl -e 1` turns it on, and the gateway then reads Landlock's own records)"
	default:
		return "read from the kernel's audit records (auditing is on), as Landlock logs them"
	}
}
