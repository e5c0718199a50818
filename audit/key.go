package audit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LoadKey reads the chain key from path; with create, a missing key is
// made (32 random bytes, hex, mode 0600 in a 0700 directory). A key file
// that others can read is refused: whoever reads the key can re-seal an
// edited log.
func LoadKey(path string, create bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		if _, err := f.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
			f.Close()
			return nil, fmt.Errorf("audit key: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		return raw, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit key %s can be read by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("audit key %s: want at least 16 bytes as hex", path)
	}
	return key, nil
}
