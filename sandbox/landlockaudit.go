package sandbox

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Parsing the kernel's audit records, as they come over netlink: a
// netlink header whose type is the record's, then the text
// "audit(SECONDS.MILLIS:SERIAL): key=value key=value…". Everything here
// is outside input (FuzzParseAuditMessages): it is bounded, and never
// panics.

// Audit record types read here.
const (
	auditLandlockAccess = 1423 // AUDIT_LANDLOCK_ACCESS
	auditLandlockDomain = 1424 // AUDIT_LANDLOCK_DOMAIN
	auditTrustedApp     = 1121 // AUDIT_TRUSTED_APP: the gateway's own sync marks
)

// auditMessage is one netlink message: its type, and its payload.
type auditMessage struct {
	Type uint16
	Data []byte
}

// parseNetlinkMessages splits a datagram into its messages; a truncated
// or malformed tail is dropped.
func parseNetlinkMessages(b []byte) []auditMessage {
	var out []auditMessage
	for len(b) >= 16 {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if n < 16 || n > len(b) {
			break
		}
		out = append(out, auditMessage{Type: typ, Data: b[16:n]})
		n = (n + 3) &^ 3 // NLMSG_ALIGN
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return out
}

// auditRecord is one record's text, parsed.
type auditRecord struct {
	Serial uint64
	Fields map[string]string // values unquoted, or decoded from hex
}

// maxAuditFields bounds what one record yields.
const maxAuditFields = 64

// parseAuditRecord parses "audit(…:SERIAL): k=v …". A quoted value is
// taken as is; an unquoted one of a field that holds untrusted text
// (path, exe, comm, name: the kernel writes those in hex when they hold
// a space, a quote or a control character) is decoded from hex.
func parseAuditRecord(data []byte) (auditRecord, error) {
	s := string(data)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	head, body, ok := strings.Cut(s, "): ")
	if !ok || !strings.HasPrefix(head, "audit(") {
		return auditRecord{}, errors.New("no audit( header")
	}
	_, serial, ok := strings.Cut(head, ":")
	if !ok {
		return auditRecord{}, errors.New("no serial")
	}
	n, err := strconv.ParseUint(serial, 10, 64)
	if err != nil {
		return auditRecord{}, errors.New("bad serial")
	}
	r := auditRecord{Serial: n, Fields: map[string]string{}}
	for body != "" && len(r.Fields) < maxAuditFields {
		body = strings.TrimLeft(body, " ")
		key, rest, ok := strings.Cut(body, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			break
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			val, body = rest[1:1+end], rest[2+end:]
		} else {
			val, body, _ = strings.Cut(rest, " ")
			if untrustedField(key) && val != "(null)" {
				if b, err := hex.DecodeString(val); err == nil {
					val = string(b)
				}
			}
		}
		if _, dup := r.Fields[key]; !dup {
			r.Fields[key] = val
		}
	}
	return r, nil
}

func untrustedField(key string) bool {
	switch key {
	case "path", "exe", "comm", "name", "ocomm":
		return true
	}
	return false
}

// LandlockDenial is one access Landlock refused to a launch, as the
// kernel's audit record (AUDIT_LANDLOCK_ACCESS) says.
type LandlockDenial struct {
	Domain   uint64
	Blockers []string // the rights that were missing: fs.write_file, net.connect_tcp, …
	// Path is the file (or directory) for a filesystem right, "" else;
	// Port the TCP port of a network right (0 else).
	Path    string
	Address string // the TCP peer's address, as the record gives it
	Port    int
}

// Access names a denial's kind as the gateway's refusals do: write (a
// right that changes the file system), file (one that reads it), connect,
// bind, or the blocker itself (scope.signal, …).
func (d LandlockDenial) Access() string {
	access := ""
	for _, b := range d.Blockers {
		switch {
		case b == "net.connect_tcp":
			return "connect"
		case b == "net.bind_tcp":
			return "bind"
		case b == "fs.read_file" || b == "fs.read_dir" || b == "fs.execute":
			if access == "" {
				access = "file"
			}
		case strings.HasPrefix(b, "fs."):
			access = "write"
		default:
			if access == "" {
				access = b
			}
		}
	}
	return access
}

// landlockEvent is what one audit record says of Landlock: a denial, or
// that a domain was allocated by pid.
type landlockEvent struct {
	Denial      *LandlockDenial
	Domain      uint64
	Allocated   bool // by Pid
	Deallocated bool
	Pid         int
}

// parseLandlock reads a Landlock record (typ: its audit type); ok is
// false for any other record or one that does not parse.
func parseLandlock(typ uint16, data []byte) (landlockEvent, bool) {
	if typ != auditLandlockAccess && typ != auditLandlockDomain {
		return landlockEvent{}, false
	}
	r, err := parseAuditRecord(data)
	if err != nil {
		return landlockEvent{}, false
	}
	dom, err := strconv.ParseUint(r.Fields["domain"], 16, 64)
	if err != nil || dom == 0 {
		return landlockEvent{}, false
	}
	if typ == auditLandlockDomain {
		if r.Fields["status"] == "deallocated" {
			return landlockEvent{Domain: dom, Deallocated: true}, true
		}
		if r.Fields["status"] != "allocated" {
			return landlockEvent{}, false
		}
		pid, err := strconv.Atoi(r.Fields["pid"])
		if err != nil || pid <= 0 {
			return landlockEvent{}, false
		}
		return landlockEvent{Domain: dom, Allocated: true, Pid: pid}, true
	}
	blockers := r.Fields["blockers"]
	if blockers == "" {
		return landlockEvent{}, false
	}
	d := &LandlockDenial{Domain: dom, Blockers: strings.Split(blockers, ","), Path: r.Fields["path"]}
	if len(d.Blockers) > 32 {
		d.Blockers = d.Blockers[:32]
	}
	d.Address = r.Fields["daddr"]
	if d.Address == "" {
		d.Address = r.Fields["saddr"]
	}
	for _, k := range []string{"dest", "src"} {
		if p, err := strconv.Atoi(r.Fields[k]); err == nil && p > 0 && p < 65536 {
			d.Port = p
			break
		}
	}
	return landlockEvent{Denial: d, Domain: dom}, true
}
