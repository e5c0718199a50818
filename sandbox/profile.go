package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Profile is a confinement as the policy bundle states it
// (data.termgate.profiles.<name>). Paths may hold {cwd}, {home}, {tmp}
// (the session's private temporary directory) and {path} (the
// directories of PATH, each widened to the tool-chain root that holds it,
// such as ~/.pyenv).
type Profile struct {
	Name        string   `json:"-"`
	Description string   `json:"description"`
	Unconfined  bool     `json:"unconfined"` // the "none" profile: only when the operator says so
	Read        []string `json:"read"`       // read and execute
	Write       []string `json:"write"`      // read, write, execute
	Devices     []string `json:"devices"`    // device files read and written, ioctl allowed
	// Network: "none" (only unix sockets), "tcp" (outbound TCP to
	// ConnectPorts; no listening), or "any".
	Network      string `json:"network"`
	ConnectPorts []int  `json:"connect_ports"`
	Limits       Limits `json:"limits"`
}

// Limits bound a session's resources. Zero means the default.
type Limits struct {
	Processes int   `json:"processes"`  // tasks in the session's cgroup (RLIMIT_NPROC without one)
	OpenFiles int   `json:"open_files"` // RLIMIT_NOFILE
	FileSize  int64 `json:"file_size"`  // bytes, RLIMIT_FSIZE
	Memory    int64 `json:"memory"`     // bytes of data, RLIMIT_DATA
	CPU       int   `json:"cpu_seconds"`
}

// DefaultLimits apply where a profile leaves a limit at zero.
func DefaultLimits() Limits {
	return Limits{Processes: 512, OpenFiles: 4096, FileSize: 4 << 30, Memory: 8 << 30}
}

// Spec is what the launcher is handed: a profile with every path made
// concrete, and the program to run.
type Spec struct {
	Profile     string   `json:"profile"`
	Argv        []string `json:"argv"`
	Env         []string `json:"env"`
	Dir         string   `json:"dir"`
	Read        []string `json:"read"`
	Write       []string `json:"write"`
	Devices     []string `json:"devices"`
	Network     string   `json:"network"`
	Ports       []int    `json:"ports"`
	Limits      Limits   `json:"limits"`
	Cgroups     []string `json:"cgroups"`     // cgroup.procs files to join before exec
	BestEffort  bool     `json:"best_effort"` // degrade instead of refusing
	UID         int      `json:"uid"`         // -1: keep
	GID         int      `json:"gid"`
	Unconfined  bool     `json:"unconfined"`
	NeedsCgroup bool     `json:"needs_cgroup"` // processes can only be bounded by a cgroup (uid 0)
	MinABI      int      `json:"min_abi"`      // the Landlock ABI required; 0: MinABI
}

// RequiredABI is the Landlock ABI the spec needs.
func (s Spec) RequiredABI() int {
	if s.MinABI > MinABI {
		return s.MinABI
	}
	return MinABI
}

// Vars are the values of a profile's placeholders.
type Vars struct {
	Cwd, Home, Tmp string
	Path           string // $PATH
}

// Resolve makes a launch spec of a profile. protected lists files and
// directories of the gateway's own (policy, audit log and key,
// recordings): a profile that would let the session read or write one of
// them is refused.
func (p Profile) Resolve(v Vars, protected []string) (Spec, error) {
	s := Spec{Profile: p.Name, Network: p.Network, Ports: p.ConnectPorts, Limits: p.Limits, UID: -1, GID: -1, Unconfined: p.Unconfined}
	if p.Unconfined {
		return s, nil
	}
	switch p.Network {
	case "none", "any":
	case "tcp":
		if len(p.ConnectPorts) == 0 {
			return s, fmt.Errorf("profile %s: network tcp needs connect_ports", p.Name)
		}
	default:
		return s, fmt.Errorf("profile %s: network must be none, tcp or any, not %q", p.Name, p.Network)
	}
	expand := func(list []string) []string {
		var out []string
		for _, e := range list {
			if e == "{path}" {
				out = append(out, pathRoots(v.Path, v.Home)...)
				continue
			}
			e = strings.NewReplacer("{cwd}", v.Cwd, "{home}", v.Home, "{tmp}", v.Tmp).Replace(e)
			if e == "" || !filepath.IsAbs(e) {
				continue
			}
			out = append(out, filepath.Clean(e))
		}
		sort.Strings(out)
		return compact(out)
	}
	s.Read, s.Write, s.Devices = expand(p.Read), expand(p.Write), expand(p.Devices)
	def := DefaultLimits()
	if s.Limits.Processes == 0 {
		s.Limits.Processes = def.Processes
	}
	if s.Limits.OpenFiles == 0 {
		s.Limits.OpenFiles = def.OpenFiles
	}
	if s.Limits.FileSize == 0 {
		s.Limits.FileSize = def.FileSize
	}
	if s.Limits.Memory == 0 {
		s.Limits.Memory = def.Memory
	}
	for _, prot := range protected {
		if prot == "" {
			continue
		}
		prot = filepath.Clean(prot)
		for _, root := range append(append([]string{}, s.Read...), s.Write...) {
			if within(prot, root) {
				return s, fmt.Errorf("profile %s would let the session reach the gateway's own %s (through %s); start the session in another directory", p.Name, prot, root)
			}
		}
	}
	return s, nil
}

func compact(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// within reports whether path is root or below it.
func within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root+"/")
}

// pathRoots lists PATH's directories, each widened to the tool-chain
// directory that holds it under the home directory (~/.pyenv/shims →
// ~/.pyenv), so that the user's own python or node still runs.
func pathRoots(path, home string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		parts := strings.Split(d, "/")
		for i, part := range parts {
			if strings.HasPrefix(part, ".") && i > 0 {
				d = strings.Join(parts[:i+1], "/")
				break
			}
		}
		if home != "" && (d == home || d == "/") {
			continue // never the whole home or the whole tree
		}
		out = append(out, d)
	}
	return out
}

// ParseProfiles reads data.termgate.profiles (as JSON decodes it).
func ParseProfiles(v any) (map[string]Profile, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("data.termgate.profiles must be an object of profiles")
	}
	out := map[string]Profile{}
	for name, raw := range m {
		b, err := jsonMarshal(raw)
		if err != nil {
			return nil, err
		}
		var p Profile
		if err := jsonUnmarshalStrict(b, &p); err != nil {
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
		p.Name = name
		if !p.Unconfined && p.Network == "" {
			return nil, fmt.Errorf("profile %s: network is required (none, tcp or any)", name)
		}
		out[name] = p
	}
	return out, nil
}

// exists reports whether a path exists (a rule for a missing path is
// left out rather than failing the launch).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshalStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Attach readies the spec for one launch: tmp, when given, is the launch's
// private temporary directory (writable, and its TMPDIR); name names its
// pids cgroup. It checks what this kernel can enforce and refuses what it
// cannot, unless BestEffort, and returns how the launch will be confined
// and the cgroup the caller empties and removes when the launch is over.
func (s *Spec) Attach(name, tmp string) (Status, *Cgroup, error) {
	st := Status{Profile: s.Profile}
	if tmp != "" {
		s.Env = setEnv(s.Env, "TMPDIR", tmp)
		if !s.Unconfined {
			s.Write = append(s.Write, tmp)
		}
	}
	if s.Unconfined {
		return st, nil, nil
	}
	support := Probe()
	st.LandlockABI = min(support.LandlockABI, MinABI)
	st.Seccomp = support.SeccompAPI > 0
	st.Enforced = true
	if need := s.RequiredABI(); support.LandlockABI < need {
		if !s.BestEffort {
			return st, nil, fmt.Errorf("this kernel's Landlock ABI is %d and confined sessions need %d (termgate sandbox check; --sandbox=best-effort runs degraded)", support.LandlockABI, need)
		}
		st.NotEnforced = append(st.NotEnforced, fmt.Sprintf("landlock ABI %d < %d", support.LandlockABI, need))
	}
	cg, err := NewCgroup(name, s.Limits.Processes)
	switch {
	case err == nil:
		st.Cgroup = true
		s.Cgroups = []string{cg.Procs()}
	case s.NeedsCgroup && !s.BestEffort:
		return st, nil, fmt.Errorf("its process count cannot be bounded (%v); RLIMIT_NPROC does not bind root (--session-user, or --sandbox=best-effort)", err)
	case s.NeedsCgroup:
		st.NotEnforced = append(st.NotEnforced, "process count: no pids cgroup, and RLIMIT_NPROC does not bind root")
	}
	return st, cg, nil
}

// setEnv sets name=value in a copy of env.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
