package policy

import (
	"math"
	"net/netip"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Gateway is what the gateway tells the policy about itself: its own
// files at their configured paths (audit log and key, recordings, policy
// bundle, log file, state directory), which no session may touch, and the
// home directory `~` stands for. A path is a file or a directory (and
// what lies under it); one written with a final * also stands for every
// path that starts with it (audit.jsonl* for the log and its rotations).
type Gateway struct {
	Paths []string `json:"paths"`
	Home  string   `json:"home,omitempty"`
}

// homeRel writes p, an absolute path, as ~/… when it is home or lies
// under it; any other path is itself.
func homeRel(p, home string) string {
	if home == "" || !strings.HasPrefix(p, "/") {
		return p
	}
	if home = path.Clean(home); home == "/" {
		return p
	}
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, home+"/"); ok {
		return "~/" + rest
	}
	return p
}

// homeAbs is the inverse of homeRel: ~/… under home ("" when home is
// unknown).
func homeAbs(p, home string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	if home == "" {
		return ""
	}
	return path.Join(home, strings.TrimPrefix(p, "~"))
}

// startCwd is the directory a line starts in, as the analysis writes it:
// the foreground program's (input.cwd), or a start's or an exec's, under
// the home directory as ~/….
func (in *Input) startCwd() string {
	cwd := in.Cwd
	if cwd == "" && in.Start != nil && (in.Action == "start" || in.Action == "exec") {
		cwd = in.Start.Cwd
	}
	if cwd == "" || !strings.HasPrefix(cwd, "/") {
		return ""
	}
	home := ""
	if in.Gateway != nil {
		home = in.Gateway.Home
	}
	return homeRel(path.Clean(cwd), home)
}

// resolveOperand is p resolved against cwd, for the policy: lexically,
// and a path written with a trailing slash (or /.) that is a symbolic
// link as the link's target (rm -rf link/ removes what the link points
// to), read from the disk through real. An operand that cannot be
// resolved is itself.
func resolveOperand(cwd, p, home string, real *realDirs) string {
	r := resolvePath(cwd, p)
	if r == "" {
		r = beyondHome(cwd, p, home)
	}
	if r == "" {
		return p
	}
	if (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")) && r != "/" && r != "~" {
		if abs := homeAbs(r, home); strings.HasPrefix(abs, "/") && real.look() {
			if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return real.fromHome(real.walk(abs, true), home)
			}
		}
	}
	return r
}

// physical is the resolved path r with the links on the way to it on the
// disk followed, as the kernel will follow them: the links of its
// directory (x/etc, with x a link to /, is /etc), and its own when final
// (the command follows its last component: a write, a chmod). Under ~ it
// is written from ~, also when the home directory is itself reached
// through a link. r itself when nothing changes, or it lies where links
// name the process that follows them.
func physical(r, home string, real *realDirs, final bool) string {
	abs := homeAbs(r, home)
	if !strings.HasPrefix(abs, "/") || r == "/" || r == "~" || perProcess(abs) {
		return r // relative to a directory the line does not tell, or itself
	}
	// r is clean: its directory's links are its parents' (one look-up for
	// the paths of a directory).
	to := path.Join(real.walk(path.Dir(abs), true), path.Base(abs))
	if final {
		to = real.walk(to, true)
	}
	return real.fromHome(to, home)
}

// fromHome writes to, a path the disk's links were followed for, from ~
// when it lies in the home directory, also when that directory is itself
// reached through a link.
func (rd *realDirs) fromHome(to, home string) string {
	if home != "" {
		if rh := rd.dir(path.Clean(home)); rh != "/" && (to == rh || strings.HasPrefix(to, rh+"/")) {
			return homeRel(path.Join(path.Clean(home), strings.TrimPrefix(to, rh)), home)
		}
	}
	return homeRel(to, home)
}

// perProcess reports whether p lies in a file system whose links name
// something of the process that follows them (/proc/self, /dev/fd,
// /dev/stdin): the gateway following them would find its own, not the
// session's. Such a path is judged as written.
func perProcess(p string) bool {
	for _, fs := range []string{"/proc", "/dev", "/sys"} {
		if p == fs || strings.HasPrefix(p, fs+"/") {
			return true
		}
	}
	return false
}

// realDirs follows the links of paths on the disk as the kernel does,
// remembering each answer for one line, and counts the line's look-ups:
// past maxDiskLookups none is made, and the line is asked about
// (derivePaths), so no line of links can hold a decision for long.
type realDirs struct {
	seen  map[walkKey]string
	read  bool // a path was looked up
	looks int  // the look-ups made
	over  bool // a look-up was refused
}

// maxDiskLookups bounds the look-ups (lstat, readlink, stat) the paths of
// one line make: a line whose links need more is not followed.
const maxDiskLookups = 4096

// look takes one look-up from the line's allowance, false when none is
// left.
func (rd *realDirs) look() bool {
	if rd.looks >= maxDiskLookups {
		rd.over = true
		return false
	}
	rd.looks++
	rd.read = true
	return true
}

type walkKey struct {
	abs   string
	final bool
}

// maxDiskLinks is the kernel's bound on the links one lookup follows
// (MAXSYMLINKS): past it the lookup fails with ELOOP.
const maxDiskLinks = 40

// dir is dir (a directory or a file) with its links followed.
func (rd *realDirs) dir(dir string) string { return rd.walk(dir, true) }

// walk is abs, an absolute path that may hold . and .., with the symbolic
// links on the disk followed as the kernel follows them: component by
// component from the left, a .. taken from the directory a link led to
// (x/.., with x a link to /etc/ssh, is /etc), and a link followed to its
// target whether or not the target exists yet (a write through a
// dangling link creates the file it names). The last component is
// followed only when final, or when a / or /. comes after it. The first
// component that does not exist ends the reading: the rest is joined to
// it as written. abs itself, cleaned, past maxDiskLinks links.
func (rd *realDirs) walk(abs string, final bool) string {
	if abs == "/" || !strings.HasPrefix(abs, "/") {
		return abs
	}
	k := walkKey{abs, final}
	if r, ok := rd.seen[k]; ok {
		return r
	}
	r := rd.walkDisk(abs, final)
	if rd.seen == nil {
		rd.seen = map[walkKey]string{}
	}
	rd.seen[k] = r
	return r
}

func (rd *realDirs) walkDisk(abs string, final bool) string {
	parts := strings.Split(abs, "/")
	out, hops := "/", 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			out = path.Dir(out)
			continue
		}
		next := path.Join(out, c)
		if len(parts) == 0 && !final {
			return next // the last component, not followed
		}
		if !rd.look() {
			return path.Clean(abs)
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return path.Join(append([]string{next}, parts...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			out = next
			continue
		}
		if hops++; hops > maxDiskLinks || !rd.look() {
			return path.Clean(abs)
		}
		t, err := os.Readlink(next)
		if err != nil || t == "" {
			return path.Clean(abs)
		}
		if strings.HasPrefix(t, "/") {
			out = "/"
		}
		parts = append(strings.Split(t, "/"), parts...)
	}
	return out
}

// lineLink is a symbolic link a line makes (ln -s TARGET LINK): both
// paths resolved as the line's operands are (absolute, under ~, or
// relative to a directory the line does not tell), cleaned. target is ""
// when the line does not tell it (ln -s "$d" x).
type lineLink struct {
	link, target string
	// sure is true when the disk showed the link's name is not a
	// directory (where ln would put the link inside it instead).
	sure bool
	// raw is a relative target as written (ln -s ../x l), read from the
	// link's directory wherever mv or cp puts the link.
	raw string
	// moved is true for the name mv gave a directory: the data is at the
	// new name, so a path under it does not leave the working directory
	// by going there.
	moved bool
	// copied is true for the name cp -a (or -r) gave a directory: a
	// path under it is a copy of the one under the source, and leads
	// elsewhere only through a link the copy kept.
	copied bool
}

// longFlag reports whether one of flags is the long option name or an
// abbreviation of it getopt takes (at least min characters: --sy for
// --symbolic, which --s would share with --suffix).
func longFlag(flags []string, name string, min int) bool {
	return slices.ContainsFunc(flags, func(f string) bool {
		f, _, _ = strings.Cut(f, "=")
		return len(f) >= min && strings.HasPrefix(name, f)
	})
}

// madeLinks returns the links c makes, if it is ln -s: ln -s T L makes L
// (or L/T's name, when L is a directory), ln -s T makes T's name here,
// and ln -s T1 T2 … DIR makes each T's name in DIR. A relative target is
// taken from the link's directory (from c's, with -r). ok is false for
// ln -s -t DIR, which this does not read.
func madeLinks(c *Command, home string) (links []lineLink, ok bool) {
	if c.Name != "ln" || !slices.Contains(c.Flags, "s") && !longFlag(c.Flags, "--symbolic", 4) {
		return nil, true
	}
	if slices.Contains(c.Flags, "t") || longFlag(c.Flags, "--target-directory", 3) {
		return nil, false
	}
	relative := slices.Contains(c.Flags, "r") || longFlag(c.Flags, "--relative", 3)
	place := func(p string) string { // where the line's paths put p
		if r := resolvePath(c.Cwd, p); r != "" {
			return r
		}
		if r := beyondHome(c.Cwd, p, home); r != "" {
			return r
		}
		if c.Cwd == "" && p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$") {
			return path.Clean(p) // relative to a directory the line does not tell
		}
		return ""
	}
	target := func(t, l string) string {
		switch {
		case t == "$PWD" || t == "${PWD}" || t == "$(pwd)" || t == "`pwd`":
			return place(".")
		case strings.HasPrefix(t, "$PWD/") || strings.HasPrefix(t, "${PWD}/") || strings.HasPrefix(t, "$(pwd)/") || strings.HasPrefix(t, "`pwd`/"):
			if c.Cwd == "" {
				return ""
			}
			_, rest, _ := strings.Cut(t, "/")
			return place(rest)
		case relative || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") || strings.HasPrefix(t, "$HOME") || strings.HasPrefix(t, "${HOME}"):
			return place(t)
		case strings.HasPrefix(t, "$") || strings.Contains(t, "$(") || strings.Contains(t, "`"):
			return "" // a place the line does not tell
		}
		return joinFrom(path.Dir(l), t, home)
	}
	add := func(t, link string, sure bool) {
		l := place(link)
		if l == "" || l == "/" || l == "~" || l == "." || l == ".." || strings.HasPrefix(l, "../") {
			return
		}
		ll := lineLink{link: l, target: target(t, l), sure: sure}
		if !relative && t != "" && !strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "~") && !strings.HasPrefix(t, "$") && !strings.Contains(t, "`") {
			ll.raw = t
		}
		links = append(links, ll)
	}
	// isDir tells whether p names a directory on the disk now (ln then
	// makes the link inside it; with -n a link to one is replaced), or
	// known is false.
	noDeref := slices.Contains(c.Flags, "n") || longFlag(c.Flags, "--no-dereference", 6)
	isDir := func(p string) (dir, known bool) {
		abs := homeAbs(place(p), home)
		if !strings.HasPrefix(abs, "/") {
			return false, false
		}
		stat := os.Stat
		if noDeref {
			stat = os.Lstat
		}
		fi, err := stat(abs)
		return err == nil && fi.IsDir(), true
	}
	ops := c.Operands
	noDir := slices.Contains(c.Flags, "T") || longFlag(c.Flags, "--no-target-directory", 6)
	switch n := len(ops); {
	case n == 1:
		_, known := isDir(".")
		add(ops[0], path.Base(ops[0]), known)
	case n == 2:
		dir, known := isDir(ops[1])
		switch {
		case noDir || known && !dir:
			add(ops[0], ops[1], known)
		case known && dir:
			add(ops[0], path.Join(ops[1], path.Base(ops[0])), true)
		default: // either
			add(ops[0], ops[1], false)
			add(ops[0], path.Join(ops[1], path.Base(ops[0])), false)
		}
	case n > 2:
		_, known := isDir(ops[n-1])
		for _, t := range ops[:n-1] {
			add(t, path.Join(ops[n-1], path.Base(t)), known)
		}
	}
	return links, true
}

// maxLinkChain bounds a chain of the line's links followed for one path.
const maxLinkChain = 8

// throughLinks is what p (written as w) reaches through the line's
// links, the latest link of a name first: a path that goes on past a
// link goes through it, and one that names the link itself goes through
// it when the command follows its last component (final: a write, a
// chmod) or w ends in / or /. (rm x removes the link x; rm -rf x/ what it
// points to). itself is true when p names a link itself that the disk
// showed is no directory: p is then only the link's name. ok is false when a link on the way goes to a place the
// line does not tell, or the chain is longer than maxLinkChain.
func throughLinks(p, w string, final bool, links []lineLink) (reach string, itself, ok bool, first int) {
	first = -1
	if len(links) == 0 || p == "" || strings.HasPrefix(p, "$") {
		return p, false, true, first
	}
	final = final || strings.HasSuffix(w, "/") || strings.HasSuffix(w, "/.")
	q := path.Clean(p)
	for hop := range maxLinkChain + 1 {
		i := len(links) - 1
		for ; i >= 0; i-- {
			rest, cut := strings.CutPrefix(q, links[i].link)
			if cut && (rest == "" && final || strings.HasPrefix(rest, "/")) {
				break
			}
		}
		if i < 0 {
			if hop == 0 {
				return p, false, true, first
			}
			return q, itself, true, first
		}
		if links[i].target == "" {
			return p, false, false, first
		}
		if hop == 0 {
			itself = q == links[i].link && links[i].sure
			first = i
		}
		q = path.Clean(links[i].target + strings.TrimPrefix(q, links[i].link))
	}
	return p, false, false, first
}

// beyondHome resolves a path that climbs out of ~ (~/../../proc/x, or
// ../../x from a directory under ~), which resolvePath leaves unresolved,
// through the home directory ~ stands for: "" when home is unknown or p
// does not lie under ~ as written.
func beyondHome(cwd, p, home string) string {
	if home == "" || !strings.HasPrefix(home, "/") {
		return ""
	}
	rest, ok := underHome(cwd, p)
	if !ok {
		return ""
	}
	return homeRel(path.Join(home, rest), home)
}

// ddFile splits dd's of=FILE and if=FILE operands (the files it writes
// and reads) into the key and the file.
func ddFile(name, o string) (key, file string, ok bool) {
	if name != "dd" {
		return "", "", false
	}
	for _, k := range []string{"of=", "if="} {
		if v, ok := strings.CutPrefix(o, k); ok {
			return k, v, true
		}
	}
	return "", "", false
}

// derivePaths fills each command's Paths and each redirection's Path, and
// the shell's GatewayRefs. dd's operands are operand=value: the path of
// of=FILE (the file dd writes) is of= and FILE resolved, which the rules
// on written files read with the argument as written, and if=FILE's (the
// file it reads) is if= and FILE resolved.
//
// Each path stays as the line writes it, resolved by its words; what it
// reaches through symbolic links is recorded beside it (sh.reaches), and
// a path's facts hold for what it reaches too (pathIndex.derive): the
// links the line itself makes (ln -s, for the commands after it) and,
// for the commands followed says act on their files (deletes, writes,
// copies, permission changes) and for redirections to files, the links
// on the disk. The gateway and its sessions see the same files, except
// what each process sees of itself (/proc/self, /dev/fd), which is
// judged as written. Both readings are judged: ~/.config may be a link
// to a dotfiles directory, and ~/.config/gh/hosts.yml is sensitive
// either way.
func derivePaths(sh *Shell, gw *Gateway, followed func(*Command) bool) {
	home := ""
	if gw != nil {
		home = gw.Home
	}
	type gwPath struct {
		p      string
		prefix bool // written with a final *: every path that starts with it
	}
	var gwPaths []gwPath
	if gw != nil {
		for _, p := range gw.Paths {
			prefix := strings.HasSuffix(p, "*")
			p = strings.TrimSuffix(p, "*")
			if strings.HasPrefix(p, "/") {
				gwPaths = append(gwPaths, gwPath{homeRel(path.Clean(p), home), prefix})
			}
		}
	}
	sh.GatewayRefs = nil
	sh.reaches, sh.leaves, sh.readDisk = nil, nil, false
	ref := func(p string) {
		for _, g := range gwPaths {
			if p == g.p || strings.HasPrefix(p, strings.TrimSuffix(g.p, "/")+"/") || g.prefix && strings.HasPrefix(p, g.p) {
				sh.GatewayRefs = addOnce(sh.GatewayRefs, p)
			}
		}
	}
	// The links the line makes, for the commands after the one that makes
	// them: no look at the disk sees them before the line runs
	// (ln -s / x && rm -rf x/etc).
	var links []lineLink
	var real realDirs
	var gone map[string]bool // paths rm, unlink, rmdir or mv took away
	for i := range sh.Commands {
		c := &sh.Commands[i]
		onDisk := followed != nil && followed(c)
		final := finalFollowers[c.Name]
		realCwd := func() string { return physical(c.Cwd, home, &real, true) }
		// record notes that p (written o) reaches r through links.
		record := func(o, p, r string) {
			if sh.reaches == nil {
				sh.reaches = map[string][]string{}
			}
			sh.reaches[p] = addOnce(sh.reaches[p], r)
			if !underMoved(p, links) && leavesDir(o, r, c.Cwd, realCwd) {
				sh.leave(o, p)
			}
			if len(gwPaths) > 0 {
				ref(r)
			}
		}
		// resolve returns o resolved, and records what it reaches.
		resolve := func(o string, disk, final bool) string {
			if strings.HasSuffix(o, "/") || strings.HasSuffix(o, "/.") {
				sh.readDisk = true // resolveOperand looks the path up
			}
			p := resolveOperand(c.Cwd, o, home, &real)
			if p != o && (strings.HasSuffix(o, "/") || strings.HasSuffix(o, "/.")) {
				// rm -rf cache/ removes what the link cache names.
				if lex := resolveOperand(c.Cwd, strings.TrimRight(strings.TrimSuffix(o, "/."), "/"), home, &real); lex != p &&
					leavesDir(o, p, c.Cwd, realCwd) {
					sh.leave(o, p)
				}
			}
			// The links the line makes first: they replace what the disk
			// holds at their names (ln -sf T x over an old link x).
			reach, itself, ok, first := throughLinks(p, o, final, links)
			switch {
			case first >= 0 && links[first].copied:
				// A copy of a directory: the path is the copy's own unless
				// it goes through a link the copy kept (cp -a rd rd2 &&
				// rm -rf rd2/r/usr, r a link to /).
				in := reach
				if disk {
					in = physical(reach, home, &real, final)
				}
				rest := strings.TrimPrefix(path.Clean(p), links[first].link)
				if plain := path.Join(physical(links[first].target, home, &real, true), rest); in == reach || in == plain {
					reach = p
				} else {
					reach = in
				}
			case disk:
				// A name an earlier command of the line removed or moved
				// away is no longer the link the disk holds.
				reach = physical(reach, home, &real, final && !gone[reach])
			}
			if !ok && disk {
				sh.notFollowed("a path goes through a symbolic link the line makes to a place it does not tell, or through too many")
			}
			if itself {
				// The name of a link the line made, which the command
				// follows: only its target is there to judge (and the
				// ln's own operand keeps its name's facts).
				p = reach
			}
			if reach != p {
				record(o, p, reach)
			}
			// A .. after a link goes up from the link's target, where the
			// words go up from the link's directory (x/../passwd, with x
			// a link to /etc/ssh, is /etc/passwd).
			if disk && dotDot(o) {
				if raw := rawPath(c.Cwd, o, home); raw != "" && !perProcess(path.Clean(raw)) {
					if k := real.fromHome(real.walk(raw, final), home); k != p && k != reach {
						record(o, p, k)
					}
				}
			}
			if len(gwPaths) > 0 {
				ref(p)
			}
			return p
		}
		c.Paths = c.Operands // shared while every operand resolves to itself
		for j, o := range c.Operands {
			var p string
			if k, v, ok := ddFile(c.Name, o); ok {
				p = k + resolve(v, onDisk, final)
			} else {
				p = resolve(o, onDisk, final)
			}
			if p != o {
				if &c.Paths[0] == &c.Operands[0] {
					c.Paths = slices.Clone(c.Operands)
				}
				c.Paths[j] = p
			}
		}
		for j := range c.Redirects {
			r := &c.Redirects[j]
			r.Path = ""
			// A descriptor (2>&1) is no file.
			file := r.Op != ">&" && r.Op != "<&"
			if p := resolve(r.Target, file, file); p != r.Target {
				r.Path = p
			}
		}
		if len(gwPaths) > 0 {
			for _, a := range c.Args {
				if _, v, ok := strings.Cut(a, "="); ok {
					resolve(v, onDisk, final)
				}
			}
		}
		if taken := takenAway(c); len(taken) > 0 {
			if gone == nil {
				gone = map[string]bool{}
			}
			for _, p := range taken {
				gone[p] = true
			}
		}
		made, ok := madeLinks(c, home)
		if len(made) > 0 {
			sh.readDisk = true // madeLinks looked at the link's name
		}
		if !ok {
			sh.notFollowed("ln -t makes links the gateway does not follow")
		}
		links = append(links, made...)
		// mv and cp leave links too: a path under mv's new name reaches
		// what one under the old name did, cp -a copies a link as a link,
		// cp -s makes one.
		moved, ok := renamedLinks(c, links, home, &real, gone)
		if len(moved) > 0 {
			sh.readDisk = true
		}
		if !ok {
			sh.notFollowed("mv or cp -t moves names the gateway does not follow")
		}
		links = append(links, moved...)
		if len(links) > maxLineLinks {
			// Each path is compared with each link: past the bound the
			// line is asked about (input.unparseable), the latest links
			// still followed.
			sh.notFollowed("the line makes more symbolic links than the gateway follows")
			links = links[len(links)-maxLineLinks:]
		}
	}
	if real.over {
		sh.notFollowed("the line's paths go through more of the disk's links than the gateway reads")
	}
	sh.readDisk = sh.readDisk || real.read
}

// leave records that the operand o, resolved as p, leaves its command's
// working directory through a link: both words' facts say so, and the
// rules' outside_cwd reads the operand's.
func (sh *Shell) leave(o, p string) {
	if sh.leaves == nil {
		sh.leaves = map[string]bool{}
	}
	sh.leaves[o], sh.leaves[p] = true, true
}

// leavesDir reports whether r, which the operand o reaches through
// symbolic links, lies outside the working directory cwd (or the
// directory it is on the disk, realCwd) where o as written does not: ln
// -s ~ x && rm -rf x/.ssh deletes outside it as rm -rf ~/.ssh does. The
// rules' outside_cwd(o) already holds for o written absolute, from ~, from
// a variable or climbing with ..; with cwd unknown, so must it for r.
func leavesDir(o, r, cwd string, realCwd func() string) bool {
	if writtenOutside(o) {
		return false
	}
	if cwd == "" || !strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "~") {
		return writtenOutside(r)
	}
	within := func(d string) bool {
		return d == "/" || r == d || strings.HasPrefix(r, strings.TrimSuffix(d, "/")+"/")
	}
	return !within(cwd) && !within(realCwd())
}

// writtenOutside is the rules' outside_cwd(p): a path written absolute,
// from ~, from a variable, or with a .. component.
func writtenOutside(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") ||
		strings.Contains("/"+p+"/", "/../")
}

// dotDot reports whether p has a .. component after another one: where a
// link may stand before it.
func dotDot(p string) bool {
	i := strings.Index("/"+p+"/", "/../")
	return i > 0 && strings.Trim(p[:i], "./") != ""
}

// rawPath is o, as written (its . and .. kept), made absolute from cwd or
// the home directory; "" when the line does not tell where it starts.
func rawPath(cwd, o, home string) string {
	switch {
	case strings.HasPrefix(o, "/"):
		return o
	case o == "~" || strings.HasPrefix(o, "~/"):
		if home == "" {
			return ""
		}
		return home + "/" + strings.TrimPrefix(o, "~")
	case strings.HasPrefix(o, "~") || strings.HasPrefix(o, "$") || cwd == "":
		return ""
	}
	dir := homeAbs(cwd, home)
	if !strings.HasPrefix(dir, "/") {
		return ""
	}
	return dir + "/" + o
}

// renamedLinks returns the links mv, cp and ln leave: ln A B (no -s)
// makes B the file A, or a copy of A when A is a link; mv A B moves the name
// A, so that a path under B reaches what one under A did (A a link, or a
// directory whose links later paths go through: mv root r2 && rm -rf
// r2/etc, with root a link to /); cp with -a, -d, -P or -r (and neither
// -L nor -H) copies a link as a link; cp -s makes B a link to A. B is the
// name in it when B is a directory on the disk (mv A DIR), and either
// when the disk cannot tell. ok is false for mv -t and cp -t when the
// directory cannot be read from the arguments.
func renamedLinks(c *Command, links []lineLink, home string, real *realDirs, gone map[string]bool) (made []lineLink, ok bool) {
	has := func(short, long string, min int) bool {
		return short != "" && slices.Contains(c.Flags, short) || long != "" && longFlag(c.Flags, long, min)
	}
	var mv, symbolic, hard bool
	switch c.Name {
	case "mv":
		mv = true
	case "ln":
		if has("s", "--symbolic", 4) {
			return nil, true // madeLinks reads ln -s
		}
		hard = true // a hard link: the same file, or a copy of a link
	case "cp":
		symbolic = has("s", "--symbolic-link", 3)
		asLinks := (has("a", "--archive", 3) || has("d", "", 0) || has("P", "--no-dereference", 6) ||
			has("r", "--recursive", 3) || has("R", "", 0)) && !has("L", "--dereference", 4) && !has("H", "", 0)
		if !symbolic && !asLinks {
			return nil, true
		}
	default:
		return nil, true
	}
	// The names as written, resolved (c.Paths holds what cp follows, and
	// cp -a copies the link itself), read past the options that take a
	// value (mv -S .bak A B).
	names, dirArg, hasDir, ok := mvArgs(c.Args)
	if !ok {
		return nil, false
	}
	ops := make([]string, len(names))
	for i, o := range names {
		ops[i] = resolveOperand(c.Cwd, o, home, real)
	}
	dir, srcs, single := "", ops, false
	switch {
	case hasDir:
		dir = resolveOperand(c.Cwd, dirArg, home, real)
	case len(ops) < 2:
		return nil, true
	default:
		dir, srcs, single = ops[len(ops)-1], ops[:len(ops)-1], len(ops) == 2
	}
	noDir := has("T", "--no-target-directory", 6)
	isDir := func(p string) (bool, bool) {
		abs := homeAbs(p, home)
		if !strings.HasPrefix(abs, "/") || gone[p] || !real.look() {
			return false, false // a name the line removed may be made anew
		}
		fi, err := os.Stat(abs)
		return err == nil && fi.IsDir(), true
	}
	for _, src := range srcs {
		if src == "" || strings.HasPrefix(src, "$") {
			continue
		}
		// Where the name goes.
		var at []string
		switch d, known := isDir(dir); {
		case single && (noDir || known && !d):
			at = []string{dir}
		case !single || known && d:
			at = []string{path.Join(dir, path.Base(src))}
		default:
			at = []string{dir, path.Join(dir, path.Base(src))}
		}
		for _, l := range at {
			if l == "/" || l == "~" || l == "." || l == ".." || strings.HasPrefix(l, "../") {
				continue
			}
			t, found, tree := nameTarget(src, l, links, home, real, mv, symbolic, hard)
			if found {
				made = append(made, lineLink{link: path.Clean(l), target: t, moved: tree && mv, copied: tree && !mv})
			}
		}
	}
	return made, true
}

// nameTarget is what a path under the new name l of src reaches: for
// cp -s, src itself; for a link (one the line made, or on the disk), its
// target, a relative one read from l's directory as the moved or copied
// link will be; for mv or cp of a directory, the directory (dir); for a
// hard link (hard) to a file, the file. found is false when there is
// nothing to follow (a file cp copies).
func nameTarget(src, l string, links []lineLink, home string, real *realDirs, mv, symbolic, hard bool) (t string, found, dir bool) {
	if symbolic {
		return src, true, false
	}
	q := path.Clean(src)
	for i := len(links) - 1; i >= 0; i-- {
		if links[i].link == q {
			if links[i].raw != "" {
				return joinFrom(path.Dir(l), links[i].raw, home), true, false
			}
			return links[i].target, true, links[i].moved
		}
	}
	abs := homeAbs(q, home)
	if !strings.HasPrefix(abs, "/") || perProcess(abs) || !real.look() {
		return "", false, false
	}
	fi, err := os.Lstat(abs)
	switch {
	case err != nil:
		return "", false, false
	case fi.Mode()&os.ModeSymlink != 0:
		raw, err := os.Readlink(abs)
		if err != nil || raw == "" || !real.look() {
			return "", false, false
		}
		if strings.HasPrefix(raw, "/") {
			return homeRel(path.Clean(raw), home), true, false
		}
		return joinFrom(path.Dir(l), raw, home), true, false
	case fi.IsDir() && !hard:
		return real.fromHome(real.walk(abs, true), home), true, true
	case hard && fi.Mode().IsRegular():
		return q, true, false // ln F G: G is F
	}
	return "", false, false
}

// joinFrom is the relative path t read from the directory dir (a link's
// target from the link's directory): through the home directory when dir
// is written from ~, so a target that climbs out of ~ lands where the
// kernel takes it.
func joinFrom(dir, t, home string) string {
	if abs := homeAbs(dir, home); strings.HasPrefix(abs, "/") {
		return homeRel(path.Join(abs, t), home)
	}
	return path.Join(dir, t)
}

// underMoved reports whether p lies under a name mv gave a directory.
func underMoved(p string, links []lineLink) bool {
	q := path.Clean(p)
	for _, l := range links {
		if l.moved && (q == l.link || strings.HasPrefix(q, l.link+"/")) {
			return true
		}
	}
	return false
}

// mvArgs reads mv's and cp's arguments: the names (sources, then the
// destination unless -t names it), past the options that take a value
// (-S SUFFIX, --suffix, --sparse, --no-preserve, -t DIR,
// --target-directory, --context as --context=CTX only); dir is -t's. ok
// is false when -t's directory is missing.
func mvArgs(args []string) (names []string, dir string, hasDir, ok bool) {
	takes := func(long string) (string, bool) { // a long option's full name, if it takes a value
		name, _, _ := strings.Cut(long, "=")
		for _, o := range []string{"--suffix", "--sparse", "--no-preserve", "--target-directory"} {
			if len(name) >= 4 && strings.HasPrefix(o, name) {
				return o, true
			}
		}
		return "", false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(names, args[i+1:]...), dir, hasDir, !hasDir || dir != ""
		case strings.HasPrefix(a, "--"):
			o, ok := takes(a)
			if !ok {
				continue
			}
			v, joined := "", false
			if _, v, joined = strings.Cut(a, "="); !joined {
				if i+1 >= len(args) {
					return names, dir, hasDir || o == "--target-directory", false
				}
				i++
				v = args[i]
			}
			if o == "--target-directory" {
				dir, hasDir = v, true
			}
		case len(a) > 1 && a[0] == '-':
			// A cluster of short options: the first of S and t takes the
			// rest of the word, or the next argument.
			for j := 1; j < len(a); j++ {
				if a[j] != 'S' && a[j] != 't' {
					continue
				}
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return names, dir, hasDir || a[j] == 't', false
					}
					i++
					v = args[i]
				}
				if a[j] == 't' {
					dir, hasDir = v, true
				}
				break
			}
		default:
			names = append(names, a)
		}
	}
	return names, dir, hasDir, !hasDir || dir != ""
}

// takenAway are the paths c removes or moves away: rm's and unlink's,
// and mv's sources (rmdir fails on a link; rm -i, mv -i and mv -n may
// leave them).
func takenAway(c *Command) []string {
	asks := slices.Contains(c.Flags, "i") || slices.Contains(c.Flags, "I") || slices.Contains(c.Flags, "n") ||
		longFlag(c.Flags, "--interactive", 4) || longFlag(c.Flags, "--no-clobber", 5)
	switch {
	case c.Name == "unlink" || c.Name == "rm" && !asks:
		return c.Paths
	case c.Name == "mv" && !asks && len(c.Paths) > 1:
		var out []string
		for _, p := range c.Paths[:len(c.Paths)-1] {
			if p != c.Paths[len(c.Paths)-1] {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}

// maxLineLinks bounds the links a line makes that its paths are followed
// through (ln -s T L makes two: L, and L/T's name should L be a
// directory).
const maxLineLinks = 64

// finalFollowers are the commands that follow a link their operand names
// (a write opens it, chmod changes its target); rm, mv, ln, install,
// sed -i and the like act on the link itself.
var finalFollowers = map[string]bool{
	"cp": true, "truncate": true, "touch": true, "tee": true, "dd": true,
	"chmod": true, "chown": true, "chgrp": true, "setfacl": true,
}

// deriveHosts fills sh.Hosts: the canonical host of every URL in the
// arguments of commands that are not data commands, every bare host
// argument of a network client, and /dev/tcp|udp/HOST/PORT redirections.
func deriveHosts(sh *Shell, isNetClient, isData func(string) bool) {
	sh.Hosts = nil
	add := func(h string) {
		if c, ok := canonicalHost(h); ok {
			sh.Hosts = addOnce(sh.Hosts, c)
		}
	}
	for _, c := range sh.Commands {
		if isData(c.Name) {
			continue
		}
		net := isNetClient(c.Name)
		for _, a := range c.Args {
			for _, u := range urlHosts(a) {
				add(u)
			}
			if net && !strings.HasPrefix(a, "-") && !strings.Contains(a, "://") {
				add(bareHost(a))
			}
		}
		for _, r := range c.Redirects {
			if rest, ok := strings.CutPrefix(r.Target, "/dev/tcp/"); ok {
				add(strings.Split(rest, "/")[0])
			} else if rest, ok := strings.CutPrefix(r.Target, "/dev/udp/"); ok {
				add(strings.Split(rest, "/")[0])
			}
		}
	}
}

// urlHosts returns the host of each URL (scheme://…) in s.
func urlHosts(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return out
		}
		s = s[i+3:]
		end := strings.IndexAny(s, "/?#\\ \t\n'\"")
		auth := s
		if end >= 0 {
			auth = s[:end]
		}
		out = append(out, bareHost(auth))
	}
}

// codeHosts returns the hosts code names, canonical: the host of each URL
// in its text, and each string literal ('…', "…", `…`) that is an IP
// address in any spelling inet_aton or an IPv6 parser reads, or a dotted
// host name (socket.connect(("169.254.169.254", 80)), "2852039166"). A
// string that merely mentions an address ("see 169.254.169.254") names
// no host. A literal is a run of host characters between two equal
// quotes, whichever of them opens: an apostrophe in a comment cannot
// shift what is read as inside a string.
func codeHosts(code string) []string {
	if len(code) > maxCode {
		code = code[:maxCode]
	}
	var out []string
	add := func(h string) {
		if c, ok := canonicalHost(h); ok {
			out = addOnce(out, c)
		}
	}
	for _, h := range urlHosts(code) {
		add(h)
	}
	for i := 0; i < len(code); i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		j := i + 1
		for j < len(code) && hostChar(code[j]) {
			j++
		}
		if j < len(code) && code[j] == q && j > i+1 && literalHost(code[i+1:j]) {
			add(code[i+1 : j])
		}
		i = j - 1 // the run's end, which may open the next literal
	}
	return out
}

func hostChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-' || c == '[' || c == ']'
}

// literalHost: s, a whole string literal, is an IP address or a dotted
// host name (not a word such as "metadata", which a dictionary key is as
// often as a host).
func literalHost(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t/") {
		return false
	}
	if _, ok := inetAton(s); ok && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 || ok && len(s) >= 8 {
		return true // 169.254.169.254, 0xa9fea9fe, 2852039166; not "1" or "80"
	}
	if strings.Contains(s, ":") {
		_, err := netip.ParseAddr(strings.Trim(s, "[]"))
		return err == nil
	}
	if !strings.Contains(strings.Trim(s, "."), ".") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// bareHost is the host of host, host:port, user@host, host/path or
// [v6]:port.
func bareHost(s string) string {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		if j := strings.IndexByte(s, ']'); j > 0 {
			return s[1:j]
		}
		return ""
	}
	if j := strings.IndexAny(s, "/?#"); j >= 0 {
		s = s[:j]
	}
	if strings.Count(s, ":") == 1 {
		s, _, _ = strings.Cut(s, ":")
	}
	return s
}

// canonicalHost writes a host in one spelling: an IPv4 address in every
// form inet_aton reads (2852039166, 0xa9fea9fe, 0251.0376.0251.0376,
// 169.254.43518, mixes) as dotted decimal, an IPv6 address that embeds an
// IPv4 one (::ffff:…, 64:ff9b::…, ::a.b.c.d) as that, any other compressed,
// and a name in lower case without its final dot. Strings that are no
// host give false.
func canonicalHost(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "" || len(h) > 253 || strings.ContainsAny(h, " \t/\\'\"$`") {
		return "", false
	}
	if v4, ok := inetAton(h); ok {
		return v4, true
	}
	if strings.Contains(h, ":") {
		if i := strings.IndexByte(h, '%'); i >= 0 {
			h = h[:i]
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			return "", false
		}
		if a.Is4In6() {
			return a.Unmap().String(), true
		}
		b := a.As16()
		nat64 := [12]byte{0, 0x64, 0xff, 0x9b}
		compat := [12]byte{}
		if [12]byte(b[:12]) == nat64 || [12]byte(b[:12]) == compat && (b[12] != 0 || b[13] != 0) {
			return netip.AddrFrom4([4]byte(b[12:])).String(), true
		}
		return a.String(), true
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return "", false
		}
	}
	return h, true
}

// inetAton reads an IPv4 address as inet_aton(3) does: one to four parts,
// each decimal, 0x hex or 0 octal, the last filling the remaining bytes.
func inetAton(s string) (string, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return "", false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" {
			return "", false
		}
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") && len(p) > 2:
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 64)
		if err != nil {
			return "", false
		}
		vals = append(vals, v)
	}
	var ip uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return "", false
		}
		ip |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) || last > math.MaxUint32 {
		return "", false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}).String(), true
}
