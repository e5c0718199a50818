package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// HoldAuditOn keeps the kernel's auditing on until release, for tests
// that read Landlock's records (the gateway never calls it: auditing is
// the operator's choice). It turns auditing on if it was off, and the
// last holder on the machine (every test process holds a shared lock on
// one file under the temporary directory) turns it back off, and only
// when a holder turned it on: auditing the operator turned on stays on.
// A holder that releases takes the lock whole, so a new holder waits for
// it to have turned auditing off before it looks.
func HoldAuditOn() (release func() error, err error) {
	path := filepath.Join(os.TempDir(), "termgate-audit-hold.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the audit hold's lock: %w", err)
	}
	fd := int(f.Fd())
	fail := func(err error) (func() error, error) {
		f.Close()
		return nil, err
	}
	// Shared: holders do not wait for each other (two in one process
	// would wait forever). Two may both find auditing off and turn it
	// on, which is the same.
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		return fail(err)
	}
	on, err := AuditEnabled()
	if err != nil {
		return fail(err)
	}
	if on == 0 {
		if err := SetAuditEnabled(1); err != nil {
			return fail(err)
		}
		if err := writeMark(f, "on\n"); err != nil {
			return fail(err)
		}
	}
	return func() error {
		defer f.Close()
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			return nil // another holder is left
		}
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 16))
		if err != nil || strings.TrimSpace(string(b)) != "on" {
			return err // the operator's auditing, not ours
		}
		if err := SetAuditEnabled(0); err != nil {
			return err
		}
		return writeMark(f, "")
	}, nil
}

func writeMark(f *os.File, s string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(s), 0)
	return err
}
