package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// fit cuts a record's longest fields until its JSON takes at most limit
// bytes, and returns that JSON. A string is cut to a prefix followed by
// TruncationMarker's text (its length and sha256, so the whole value can
// still be matched where it is kept, such as a session's recording); a
// long array keeps its first half and says how many elements it had.
// termgate.truncated lists the fields cut. A record that cannot be cut
// enough (many short fields) is written as it is.
func fit(r Record, limit int) ([]byte, error) {
	orig := map[string]string{} // path → the whole string
	var cut []string
	// Strings longer than the whole record may be are cut at once, without
	// encoding them first.
	walk(map[string]any(r), "", func(l leaf) {
		if l.isString && l.size > limit {
			orig[l.path] = l.str
			cut = append(cut, l.path)
			l.set(truncate(l.str, limit/4))
		}
	})
	for range 256 {
		if len(cut) > 0 {
			sort.Strings(cut)
			r.Set("termgate.truncated", cut)
		}
		canon, err := canonical(r)
		if err != nil || len(canon) <= limit {
			return canon, err
		}
		excess := len(canon) - limit
		var best, arr leaf
		walk(map[string]any(r), "", func(l leaf) {
			switch {
			case l.path == "termgate.truncated" || len(l.path) > 19 && l.path[:19] == "termgate.truncated.":
			case l.isString && l.size > best.size:
				best = l
			case !l.isString && l.elems > 8 && l.size > arr.size:
				arr = l
			}
		})
		switch {
		case best.size >= 192:
			whole, seen := orig[best.path]
			if !seen {
				whole = best.str
				orig[best.path] = whole
				cut = append(cut, best.path)
			}
			keep := max(64, len(best.str)-excess-len(marker(whole))-16)
			if len(best.str) > 2*keep+64 {
				keep = max(keep, len(best.str)/4) // converge in a few steps where escapes inflate
			}
			best.set(truncate(whole, keep))
		case arr.elems > 8:
			best = arr
			a := best.array
			n := len(a) / 2
			kept := append(append([]any{}, a[:n]...), fmt.Sprintf("…[truncated: %d of %d elements]", len(a)-n, len(a)))
			if _, seen := orig[best.path]; !seen {
				orig[best.path] = ""
				cut = append(cut, best.path)
			}
			best.set(kept)
		default:
			return canon, nil
		}
	}
	return canonical(r)
}

// TruncationMarker is the text that ends a cut string, for a value of n
// bytes with the given sha256 (hex).
func TruncationMarker(n int, sha string) string {
	return fmt.Sprintf("…[truncated: %d bytes, sha256:%s]", n, sha)
}

func marker(whole string) string {
	h := sha256.Sum256([]byte(whole))
	return TruncationMarker(len(whole), hex.EncodeToString(h[:]))
}

// truncate keeps a prefix of at most keep bytes, whole runes, and the marker.
func truncate(whole string, keep int) string {
	p := whole[:min(keep, len(whole))]
	for len(p) > 0 && !utf8.ValidString(p[max(0, len(p)-utf8.UTFMax):]) {
		p = p[:len(p)-1]
	}
	return p + marker(whole)
}

// leaf is a string or an array somewhere in a record, and how to replace it.
type leaf struct {
	path     string
	size     int // a string's bytes, an array's encoded bytes
	isString bool
	str      string
	array    []any
	elems    int
	set      func(any)
}

func walk(v any, path string, visit func(leaf)) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := join(k)
			switch cv := c.(type) {
			case string:
				visit(leaf{path: p, size: len(cv), isString: true, str: cv, set: func(n any) { x[k] = n }})
			case []string:
				a := make([]any, len(cv))
				for i, s := range cv {
					a[i] = s
				}
				x[k] = a
				walkArray(a, p, func(n any) { x[k] = n }, visit)
			case []any:
				walkArray(cv, p, func(n any) { x[k] = n }, visit)
			default:
				walk(c, p, visit)
			}
		}
	case Record:
		walk(map[string]any(x), path, visit)
	}
}

func walkArray(a []any, path string, set func(any), visit func(leaf)) {
	size := 0
	for i, e := range a {
		p := path + "." + strconv.Itoa(i)
		switch ev := e.(type) {
		case string:
			size += len(ev)
			visit(leaf{path: p, size: len(ev), isString: true, str: ev, set: func(n any) { a[i] = n }})
		default:
			if b, err := json.Marshal(ev); err == nil {
				size += len(b)
			}
			walk(ev, p, visit)
		}
	}
	visit(leaf{path: path, size: size, elems: len(a), array: a, set: set})
}
