package redact

import (
	"bytes"
	"regexp"
)

// Secrets that span lines are found line by line with a little state, so
// that a stream never has to hold back more than one line to catch them:
//
//   - a private-key block: every line from the one after
//     "-----BEGIN … PRIVATE KEY-----" through "-----END …" is masked whole;
//   - the data of a Kubernetes Secret (kubectl get secret -o yaml/json):
//     every indented "name: value" line under a "data:" or "stringData:"
//     line is masked after its colon.
//
// A block that never ends is masked to the end: fail closed.

type blockKind uint8

const (
	blockNone blockKind = iota
	blockPEM
	blockK8s
)

// blockState is carried from line to line.
type blockState struct {
	kind blockKind
}

var (
	pemBegin = regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	k8sData  = regexp.MustCompile(`^\s{0,8}"?(?:data|stringData)"?:\s*\{?\s*$`)
	k8sItem  = regexp.MustCompile(`^\s+"?[\w.-]+"?:\s*"?([^"\s]+)"?,?\s*$`)
)

// line finds what a block masks in one line (without its newline), and
// moves the state on. final is false for a line whose end has not arrived
// yet: it is masked if the block covers it, and the state is not moved.
func (st *blockState) line(l []byte, off int, final bool, add func(start, end int, rule string)) {
	switch st.kind {
	case blockPEM:
		if m := pemEnd.FindIndex(l); m != nil {
			if m[0] > 0 {
				add(off, off+m[0], "private-key")
			}
			if final {
				st.kind = blockNone
			}
			return
		}
		if len(bytes.TrimSpace(l)) > 0 {
			add(off, off+len(l), "private-key")
		}
		return
	case blockK8s:
		if m := k8sItem.FindSubmatchIndex(l); m != nil {
			add(off+m[2], off+m[3], "kubernetes-secret")
			return
		}
		if !final {
			return
		}
		st.kind = blockNone
	}
	if m := pemBegin.FindIndex(l); m != nil {
		rest := l[m[1]:]
		if e := pemEnd.FindIndex(rest); e != nil {
			// One line: a key with literal \n escapes, or a pasted block.
			if e[0] > 0 {
				add(off+m[1], off+m[1]+e[0], "private-key")
			}
			return
		}
		if len(bytes.TrimSpace(rest)) > 0 {
			add(off+m[1], off+len(l), "private-key")
		}
		if final {
			st.kind = blockPEM
		}
		return
	}
	if final && k8sData.Match(l) {
		st.kind = blockK8s
	}
}

// blockKeywords decide whether a text needs the block scanner at all.
var blockKeywords = [][]byte{[]byte("-----BEGIN"), []byte("ata:"), []byte("ata\":")}
