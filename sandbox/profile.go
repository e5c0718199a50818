package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
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
	// Network: "none" (only unix sockets), "proxy" (TCP through the
	// gateway's egress proxy, each new destination judged: see Egress),
	// "tcp" (outbound TCP to ConnectPorts; no listening), or "any".
	Network      string `json:"network"`
	ConnectPorts []int  `json:"connect_ports"`
	// Direct are destinations a proxy session reaches by plain TCP, for
	// programs that speak no proxy protocol (database clients): the
	// gateway forwards each, judged and audited per connection.
	Direct []Direct `json:"direct"`
	// UnixSockets lets a proxy session make unix sockets, and so connect
	// to one outside it (an ssh agent, a database's local socket), which
	// Landlock below ABI 9 cannot tell apart from its own; without it,
	// socket(AF_UNIX) is refused (socketpair is not), as network none
	// refuses connect.
	UnixSockets bool   `json:"unix_sockets"`
	Limits      Limits `json:"limits"`
	// Env is the environment allowlist: the gateway's variables a session
	// gets, by name or by a pattern with * (LC_*). Nil: DefaultEnv.
	Env []string `json:"env"`
	// List are directories whose names a session may list, and those of
	// every directory below them (Landlock's read-dir right is
	// inherited): names, never contents. ["/"] lets ls / and ls ~ work.
	List []string `json:"list"`
	// SetEnv are variables a confined session gets from the gateway
	// (NAME=value; the value may hold {home}, {cwd}, {cache} — the
	// gateway's per-user cache directory for sessions —, {tmp} — the
	// launch's private directory — and the placeholders Vars.More names):
	// where tools keep their caches and state. One whose value names a
	// placeholder without a value is left out.
	SetEnv []string `json:"set_env"`
}

// Limits bound a session's resources. Zero means the default.
type Limits struct {
	Processes int   `json:"processes"`  // tasks in the session's cgroup (RLIMIT_NPROC without one)
	OpenFiles int   `json:"open_files"` // RLIMIT_NOFILE
	FileSize  int64 `json:"file_size"`  // bytes, RLIMIT_FSIZE
	Memory    int64 `json:"memory"`     // bytes of data per process, RLIMIT_DATA
	CPU       int   `json:"cpu_seconds"`
	// SessionMemory bounds the memory of the whole session (its memory
	// cgroup: memory.limit_in_bytes on v1, memory.max on v2), page cache
	// and /dev/shm included. Zero: DefaultSessionMemory, a share of RAM.
	SessionMemory int64 `json:"session_memory"`
	// Shm is the size of the session's private /dev/shm (bytes; zero:
	// DefaultShm).
	Shm int64 `json:"shm"`
}

// Direct is a destination a session reaches without a proxy: the
// gateway listens on Port inside the session's network namespace (on
// 127.0.0.1 for a loopback Host, on an address of its own for a named
// one, which the session's /etc/hosts gives the name) and forwards each
// connection to Host:Port, once the judge allows it.
type Direct struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// DefaultLimits apply where a profile leaves a limit at zero.
func DefaultLimits() Limits {
	return Limits{Processes: 512, OpenFiles: 4096, FileSize: 4 << 30, Memory: 8 << 30}
}

// Spec is what the launcher is handed: a profile with every path made
// concrete, and the program to run.
type Spec struct {
	Profile string   `json:"profile"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	// DirID is the identity of Dir as the gateway checked it: the launcher
	// opens Dir without following links and refuses another directory.
	DirID   FileID   `json:"dir_id"`
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Devices []string `json:"devices"`
	List    []string `json:"list"`
	// SetEnv are the profile's set_env with every placeholder but {tmp}
	// put in; Attach sets them, {tmp} too, in Env.
	SetEnv []string `json:"-"`
	// Grants are Read, Write and Devices as Attach checked them, each with
	// its identity: the launcher builds its Landlock rules from these
	// alone, opening each without following links.
	Grants      []Grant  `json:"grants"`
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
	Direct      []Direct `json:"direct"`
	UnixSockets bool     `json:"unix_sockets"`
	// Isolate is what the launcher unshares before it drops its
	// capabilities (Attach fills it): see Isolation.
	Isolate *Isolation `json:"isolate,omitempty"`

	// Egress is the gateway's proxy for this launch, required with network
	// proxy: Attach binds it to the launch, Started hands it the listeners
	// the launcher made, and the caller closes it when the launch is over.
	Egress *EgressSession `json:"-"`

	// ExecGate: the launcher holds every execve and execveat of the
	// launch's processes for the gateway (seccomp user notification),
	// and hands it the listener on descriptor GateFD (prepare sets it)
	// before its own exec.
	ExecGate bool `json:"exec_gate"`
	GateFD   int  `json:"gate_fd,omitempty"`
	// NameRefusals: without the exec gate, the launcher still sends the
	// calls the profile refuses to a listener of its own (no exec goes
	// to it), handed over the same way, so that they are named
	// (refuse_linux.go).
	NameRefusals bool `json:"name_refusals,omitempty"`

	guard *guard // the gateway's own files, as Resolve found them
}

// Grant is one path a session may reach, and how.
type Grant struct {
	Path   string `json:"path"`
	Access string `json:"access"` // read, write, device, or list (names only)
	Dir    bool   `json:"dir"`
	ID     FileID `json:"id"`
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
	// CwdID is the identity of Cwd as the gateway checked it (zero: Attach
	// takes it).
	CwdID FileID
	Path  string // $PATH
	// Cache is {cache}: the gateway's per-user directory for sessions'
	// caches ("": entries that name it are left out).
	Cache string
	// ReadDeny is what a DIR/* read entry leaves out, and what no session
	// may start in (see NewDenyList); nil: DefaultReadDeny.
	ReadDeny []string
	// More are further placeholders set_env may name ("{gomodcache}").
	More map[string]string
}

// check is what can be said of a profile without a launch: its network
// and the destinations it reaches directly. ParseProfiles runs it, so that
// a bundle with a profile no launch could use is refused when it is
// loaded, not at the first start that names it.
func (p Profile) check() error {
	if p.Unconfined {
		return nil
	}
	switch p.Network {
	case "none", "any", "proxy":
	case "tcp":
		if len(p.ConnectPorts) == 0 {
			return fmt.Errorf("profile %s: network tcp needs connect_ports", p.Name)
		}
	default:
		return fmt.Errorf("profile %s: network must be none, proxy, tcp or any, not %q", p.Name, p.Network)
	}
	if len(p.Direct) > 0 {
		if p.Network != "proxy" {
			return fmt.Errorf("profile %s: direct destinations need network proxy", p.Name)
		}
		if err := checkDirect(p.Direct); err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
	}
	return nil
}

// Resolve makes a launch spec of a profile. Every path is resolved to the
// real one (links, "..", /proc/self/root) before anything is checked.
// protected lists files and directories of the gateway's own (policy,
// audit log and key, recordings, log, state): a profile that would grant
// "/", one of them, a directory that holds one, or one inside them, is
// refused, however the path is spelled. A {path} directory that would is
// left out instead: it is a convenience, not the profile's word.
func (p Profile) Resolve(v Vars, protected []string) (Spec, error) {
	s := Spec{Profile: p.Name, Network: p.Network, Ports: p.ConnectPorts, Limits: p.Limits, UID: -1, GID: -1, Unconfined: p.Unconfined, DirID: v.CwdID}
	if p.Unconfined {
		return s, nil
	}
	if err := p.check(); err != nil {
		return s, err
	}
	if len(p.Direct) > 0 {
		s.Direct = p.Direct
	}
	s.UnixSockets = p.UnixSockets
	g, err := newGuard(protected)
	if err != nil {
		return s, err
	}
	s.guard = g
	denyPatterns := v.ReadDeny
	if denyPatterns == nil {
		denyPatterns = DefaultReadDeny()
	}
	deny, err := NewDenyList(denyPatterns, v.Home, protected)
	if err != nil {
		return s, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	var errs []error
	vars := strings.NewReplacer("{cwd}", v.Cwd, "{home}", v.Home, "{tmp}", v.Tmp, "{cache}", v.Cache)
	expand := func(access string, list []string) []string {
		var out []string
		for _, e := range list {
			if dir, ok := strings.CutSuffix(e, "/*"); ok && access == "read" {
				// Every entry of dir, less what the deny list names.
				x := vars.Replace(dir)
				if x == "" || !filepath.IsAbs(x) || strings.Contains(x, "{") {
					continue
				}
				real, err := RealPath(x)
				if err != nil || real == "/" {
					continue
				}
				cands, _ := deny.expandDir(real, MaxListed)
				for _, c := range cands {
					if _, err := g.grant(access, c); err == nil {
						out = append(out, c) // a refused entry is left out, as a {path} one is
					}
				}
				continue
			}
			fromPath := e == "{path}"
			var cands []string
			if fromPath {
				// A PATH directory widened to its tool chain's root, or the
				// directory itself when the root holds what the deny list
				// names (~/.local/bin, not ~/.local).
				for _, r := range pathRoots(v.Path, v.Home) {
					for _, c := range []string{r.root, r.dir} {
						if real, err := RealPath(c); err == nil && !deny.Denies(real) {
							cands = append(cands, c)
							break
						}
					}
				}
			} else {
				x := vars.Replace(e)
				if x == "" || !filepath.IsAbs(x) || strings.Contains(x, "{") {
					continue // an empty placeholder, or one this build does not know
				}
				cands = []string{x}
			}
			// A path the session can write below ({cwd}/x, {tmp}/x) could
			// be a link a session made: it must resolve below it still.
			var base string
			for _, ph := range []struct{ name, dir string }{{"{cwd}", v.Cwd}, {"{tmp}", v.Tmp}} {
				if strings.HasPrefix(e, ph.name) && ph.dir != "" {
					base = ph.dir
					if r, rerr := RealPath(ph.dir); rerr == nil {
						base = r
					}
				}
			}
			for _, c := range cands {
				real, err := RealPath(c)
				if errors.Is(err, fs.ErrNotExist) {
					continue // a rule for a missing path is left out
				}
				var gr Grant
				if err == nil {
					gr, err = g.grant(access, real)
				}
				switch {
				case err != nil:
				case base != "" && !within(real, base):
					err = fmt.Errorf("it resolves to %s, outside %s", real, base)
				case e == "{cwd}" && !v.CwdID.IsZero() && gr.ID != v.CwdID:
					err = errors.New("it is not the directory the gateway checked (it was replaced)")
				case strings.HasPrefix(e, "{cwd}") && deny.Denies(real):
					// The agent chose the directory: it must not open what
					// reads by deny-list keep closed (~/.aws, ~/.config).
					err = ErrReadDenied
				}
				if err != nil {
					if !fromPath {
						spelled := e
						if c != e {
							spelled += " (" + c + ")"
						}
						errs = append(errs, fmt.Errorf("%s %s is refused: %w", access, spelled, err))
					}
					continue
				}
				out = append(out, real)
			}
		}
		sort.Strings(out)
		return compact(out)
	}
	s.Read, s.Write, s.Devices = expand("read", p.Read), expand("write", p.Write), expand("device", p.Devices)
	s.List = expand("list", p.List)
	if len(errs) > 0 {
		return s, fmt.Errorf("profile %s would let the session reach what no session may: %w; start the session in another directory", p.Name, errors.Join(errs...))
	}
	s.SetEnv = setEnvOf(p.SetEnv, v)
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
	if s.Limits.SessionMemory == 0 {
		s.Limits.SessionMemory = DefaultSessionMemory()
	}
	if s.Limits.Shm == 0 {
		s.Limits.Shm = DefaultShm
	}
	return s, nil
}

// grant checks one resolved path for access and returns its identity and
// whether it is a directory. A list grant (names only) may be any
// directory, "/" and those that hold the gateway's files included: what
// it opens is the names in them, never a file.
func (g *guard) grant(access, real string) (Grant, error) {
	gr := Grant{Path: real, Access: access}
	id, dir, err := Identify(real)
	if err != nil {
		return gr, err
	}
	gr.ID, gr.Dir = id, dir
	if access == "list" {
		if !dir {
			return gr, errors.New("only a directory's names can be listed")
		}
		return gr, nil
	}
	if err := g.check(real, id); err != nil {
		return gr, err
	}
	if access == "write" {
		if r := UnderMagicRoot(real); r != "" && !within(real, "/dev/shm") {
			return gr, fmt.Errorf("it is under %s, the kernel's own files", r)
		}
		if fsName, err := PseudoFS(real); err != nil {
			return gr, err
		} else if fsName != "" {
			return gr, fmt.Errorf("it is on %s, the kernel's own file system", fsName)
		}
	}
	return gr, nil
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

// pathRoot is a PATH directory and the tool-chain directory that holds it.
type pathRoot struct{ root, dir string }

// pathRoots lists PATH's directories, each widened to the tool-chain
// directory that holds it under the home directory (~/.pyenv/shims →
// ~/.pyenv), so that the user's own python or node still runs.
func pathRoots(path, home string) []pathRoot {
	var out []pathRoot
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		r := d
		parts := strings.Split(d, "/")
		for i, part := range parts {
			if strings.HasPrefix(part, ".") && i > 0 {
				r = strings.Join(parts[:i+1], "/")
				break
			}
		}
		if home != "" && (r == home || r == "/") {
			continue // never the whole home or the whole tree
		}
		out = append(out, pathRoot{root: r, dir: d})
	}
	return out
}

// setEnvOf puts the placeholders of set_env's values in ({tmp} stays,
// for Attach). A variable whose value names a placeholder without a
// value, or one this build does not know, is left out.
func setEnvOf(list []string, v Vars) []string {
	known := map[string]string{"{home}": v.Home, "{cwd}": v.Cwd, "{cache}": v.Cache}
	for k, x := range v.More {
		known["{"+strings.Trim(k, "{}")+"}"] = x
	}
	var out []string
next:
	for _, kv := range list {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !PlainName(name) {
			continue
		}
		var b strings.Builder
		for value != "" {
			i := strings.IndexByte(value, '{')
			j := strings.IndexByte(value[max(i, 0):], '}')
			if i < 0 || j < 0 {
				b.WriteString(value)
				break
			}
			ph := value[i : i+j+1]
			b.WriteString(value[:i])
			value = value[i+j+1:]
			if ph == "{tmp}" {
				b.WriteString(ph)
				continue
			}
			x, ok := known[ph]
			if !ok || x == "" {
				continue next
			}
			b.WriteString(x)
		}
		out = append(out, name+"="+b.String())
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
		for _, kv := range p.SetEnv {
			if n, _, ok := strings.Cut(kv, "="); !ok || !PlainName(n) {
				return nil, fmt.Errorf("profile %s: set_env %q is not NAME=value", name, kv)
			}
		}
		if !p.Unconfined && p.Network == "" {
			return nil, fmt.Errorf("profile %s: network is required (none, proxy, tcp or any)", name)
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshalStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Attach readies the spec for one launch: tmp, when given, is the launch's
// private temporary directory (writable, and its TMPDIR); name names its
// cgroup. It checks what this kernel can enforce and refuses what it
// cannot, unless BestEffort, seals the spec (every path checked again and
// given its identity, the working directory compared with what the
// gateway checked), and returns how the launch will be confined and the
// cgroup the caller empties and removes when the launch is over.
func (s *Spec) Attach(name, tmp string) (Status, *Cgroup, error) {
	st := Status{Profile: s.Profile}
	if tmp != "" {
		s.Env = setEnv(s.Env, "TMPDIR", tmp)
		if !s.Unconfined {
			s.Write = append(s.Write, tmp)
		}
	}
	// Where tools keep their caches and state (the profile's set_env):
	// {tmp} is the launch's private directory; without one, a variable
	// that names it is left out.
	for _, kv := range s.SetEnv {
		name, value, _ := strings.Cut(kv, "=")
		if strings.Contains(value, "{tmp}") {
			if tmp == "" {
				continue
			}
			value = strings.ReplaceAll(value, "{tmp}", tmp)
		}
		s.Env = setEnv(s.Env, name, value)
	}
	if err := s.prepareIsolation(name, &st); err != nil {
		return st, nil, err
	}
	if err := s.seal(); err != nil {
		return st, nil, err
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
		s.Cgroups = cg.ProcsFiles()
		if !cg.CanFreeze() {
			st.NotEnforced = append(st.NotEnforced, "no freezer: closing sweeps the cgroup instead of freezing it")
		}
	case s.NeedsCgroup && !s.BestEffort:
		return st, nil, fmt.Errorf("its process count cannot be bounded (%v); RLIMIT_NPROC does not bind root (--session-user, or --sandbox=best-effort)", err)
	case s.NeedsCgroup:
		st.NotEnforced = append(st.NotEnforced, "process count: no pids cgroup, and RLIMIT_NPROC does not bind root")
	}
	if cg != nil {
		if err := cg.LimitMemory(s.Limits.SessionMemory); err == nil {
			st.MemoryLimit = s.Limits.SessionMemory
		} else {
			st.NotEnforced = append(st.NotEnforced, "session memory: "+err.Error()+" (RLIMIT_DATA bounds each process only)")
		}
		s.Cgroups = cg.ProcsFiles()
	} else {
		st.NotEnforced = append(st.NotEnforced, "session memory: no cgroup (RLIMIT_DATA bounds each process only)")
	}
	if s.Egress != nil && s.Network == "proxy" {
		s.Egress.procs = s.Cgroups
	}
	return st, cg, nil
}

// prepareIsolation decides what the launcher unshares (Isolation), and
// readies a proxy launch's egress, before the spec is sealed.
func (s *Spec) prepareIsolation(name string, st *Status) error {
	if s.Unconfined {
		return nil
	}
	if canIsolate() {
		s.Isolate = &Isolation{Shm: s.Limits.Shm}
		st.PrivateShm = true
	} else {
		s.Isolate = nil
		st.NotEnforced = append(st.NotEnforced, "/dev/shm: shared with the host (a private one needs a root gateway)")
	}
	switch s.Network {
	case "proxy":
		if s.Egress == nil {
			return fmt.Errorf("profile %s sends the network through the gateway's egress proxy, and this launch has none; nothing was started", s.Profile)
		}
		return s.Egress.prepare(s, name, st)
	case "tcp":
		st.Network = fmt.Sprintf("tcp to ports %v of any host", s.Ports)
	case "any":
		st.Network = "any"
	}
	return nil
}

// seal checks the working directory against the identity the gateway
// checked (or takes it, when none was given), and every granted path
// again: resolved, refused when it reaches the gateway's own files, and
// given the identity the launcher will demand.
func (s *Spec) seal() error {
	if s.Dir != "" {
		id, dir, err := Identify(s.Dir)
		switch {
		case err != nil:
			return fmt.Errorf("the working directory: %w; nothing was started", err)
		case !dir:
			return fmt.Errorf("the working directory %s is not a directory; nothing was started", s.Dir)
		case s.DirID.IsZero():
			s.DirID = id
		case id != s.DirID:
			return fmt.Errorf("the working directory %s was replaced after it was checked; nothing was started", s.Dir)
		}
	}
	if s.Unconfined {
		return nil
	}
	g := s.guard
	if g == nil {
		var err error
		if g, err = newGuard(nil); err != nil {
			return err
		}
	}
	s.Grants = s.Grants[:0]
	for _, l := range []struct {
		access string
		paths  *[]string
	}{{"read", &s.Read}, {"write", &s.Write}, {"device", &s.Devices}, {"list", &s.List}} {
		var kept []string
		for _, p := range *l.paths {
			// Every path is real by now (Resolve made it so, and the
			// gateway's own tmp and session directories are): one that
			// resolves elsewhere had a link put in it, and is refused
			// rather than followed.
			real, err := RealPath(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", l.access, p, err)
			}
			if real != filepath.Clean(p) {
				return fmt.Errorf("%s %s now resolves to %s (a link was put in its way); nothing was started", l.access, p, real)
			}
			gr, err := g.grant(l.access, real)
			if err != nil {
				return fmt.Errorf("%s %s is refused: %w; nothing was started", l.access, real, err)
			}
			s.Grants = append(s.Grants, gr)
			kept = append(kept, real)
		}
		*l.paths = kept
	}
	return nil
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

// DefaultEnv is the environment allowlist of a profile that names none:
// what developer tools need, and no credential.
func DefaultEnv() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ",
		"TERM", "COLORTERM", "NO_COLOR", "EDITOR", "VISUAL", "PAGER",
		"PYENV_ROOT", "PYENV_VERSION", "NVM_DIR", "NVM_BIN", "NVM_INC", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
		"GOPATH", "GOROOT", "GOTOOLCHAIN", "GOFLAGS", "GOPROXY", "GOPRIVATE", "ASDF_*", "VIRTUAL_ENV",
		"CONDA_PREFIX", "CONDA_DEFAULT_ENV", "JAVA_HOME", "PNPM_HOME", "BUN_INSTALL", "DENO_INSTALL", "VOLTA_HOME",
		"MANPATH", "PKG_CONFIG_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR",
	}
}

// DefaultEnvDeny are the variables no session gets even when an allowlist
// names them: credentials by their usual names.
func DefaultEnvDeny() []string {
	return []string{
		"AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "CLOUDSDK_*",
		"*_TOKEN", "*_TOKEN_*", "TOKEN", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_KEY", "*_APIKEY",
		"*_ACCESS_KEY*", "*_PRIVATE_KEY*", "*CREDENTIAL*", "*_COOKIE", "*_SESSION",
	}
}

// MatchEnv reports whether a variable name matches one of the patterns:
// a name, or a pattern with * for any run of characters (LC_*, *_TOKEN).
func MatchEnv(name string, patterns []string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if strings.Contains(p, "*") {
			if ok, err := path.Match(p, name); err == nil && ok {
				return true
			}
		}
	}
	return false
}

// Environ returns the variables of env this profile lets a session have:
// those its allowlist (or DefaultEnv) names, less those deny names. A
// variable whose name is not a plain identifier is never passed on (an
// exported shell function, BASH_FUNC_x%%, is one).
func (p Profile) Environ(env, deny []string) []string {
	allow := p.Env
	if allow == nil {
		allow = DefaultEnv()
	}
	out := []string{}
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !PlainName(name) || strings.HasPrefix(name, "BASH_FUNC_") {
			continue
		}
		if MatchEnv(name, allow) && !MatchEnv(name, deny) {
			out = append(out, kv)
		}
	}
	return out
}

// PlainName reports whether name is a plain variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func PlainName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
