package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// fuzzRecord builds a record from data: an operation per byte (a string
// field, a list of strings, a number, a flag, a nested object, a list of
// mixed values, a null, a value only json.Marshal knows), its strings cut
// from the bytes that follow, as they come (invalid UTF-8, controls,
// quotes and HTML characters included).
func fuzzRecord(data []byte) Record {
	next := func(n int) string {
		n = min(n, len(data))
		s := string(data[:n])
		data = data[n:]
		return s
	}
	var build func(depth int) map[string]any
	build = func(depth int) map[string]any {
		m := map[string]any{}
		for len(data) > 0 {
			op := data[0]
			data = data[1:]
			key := next(int(op>>4) % 6)
			switch op % 11 {
			case 0:
				m[key] = next(int(op>>3) + 1)
			case 1:
				var ss []string
				for range int(op>>5) % 4 {
					ss = append(ss, next(int(op>>2)%9))
				}
				m[key] = ss
			case 2:
				m[key] = int(op) - 128
			case 3:
				m[key] = int64(op)<<40 - 1<<46
			case 4:
				m[key] = op&0x10 != 0
			case 5:
				if depth < 4 {
					m[key] = build(depth + 1)
					return m
				}
			case 6:
				m[key] = []any{next(3), int(op), nil, []string{next(2)}, map[string]any{next(2): next(4)}}
			case 7:
				m[key] = nil
			case 8:
				m[key] = float64(op) / 7 // json.Marshal's own
			case 9:
				m[key] = []string{}
			case 10:
				m[key] = Record{next(2): uint32(op), "": []any{}}
			}
		}
		return m
	}
	return Record(build(0))
}

// FuzzCanonical: the record encoder gives exactly json.Marshal's bytes,
// which the chain's seals are over and verify computes again.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte("\x00echo hi\x01\x21\x05\x30\x00\x13<&>\"\\\n\t\x7f"))
	f.Add([]byte("\x00\xe2\x80\xa8\xe2\x80\xa9\xff\xfe\xc3\xbc\x08\x0c\x0d\x1f"))
	f.Add([]byte(strings.Repeat("\x05\x06\x0a\x01\x08\x09\x02\x03\x04\x07", 6)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzRecord(data)
		want, werr := json.Marshal(r)
		got, gerr := canonical(r)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("json.Marshal: %v, canonical: %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical differs:\n got %s\nwant %s", got, want)
		}
	})
}

// TestCanonicalEveryByte: each byte and a few runes, alone in a string,
// as a key and as a value.
func TestCanonicalEveryByte(t *testing.T) {
	var vals []string
	for c := range 256 {
		vals = append(vals, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	vals = append(vals, "\u2028", "x\u2029y", "ü", "\U0001F600", "\xed\xa0\x80", "")
	for _, s := range vals {
		r := Record{s: s, "l": []string{s, s}, "o": map[string]any{s: []any{s, 1, true, nil}}}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonical(r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s (%v), want %s", s, got, err, want)
		}
	}
	if _, err := canonical(Record{"nan": func() {}}); err == nil {
		t.Fatal("a value json cannot encode was encoded")
	}
}

// execLikeRecord is a record as the exec gate writes one per exec.
func execLikeRecord() Record {
	r := Record{}
	r.Set("event.kind", "event").Set("event.provider", "termgate").Set("event.dataset", "termgate.audit").
		Set("event.module", "termgate").Set("observer.product", "termgate").Set("observer.vendor", "termgate").
		Set("observer.version", "dev").Set("host.name", "build-host").Set("user.name", "root").
		Set("gen_ai.tool.call.id", "c-0123456789").Set("gen_ai.tool.name", "send").Set("gen_ai.agent.name", "agent").
		Set("termgate.session.id", "s-0123456789abcdef").Set("termgate.session.name", "build").
		Set("process.working_directory", "/home/u/src/project").Set("process.name", "cc").
		Set("rule.id", "exec.allow").Set("rule.ruleset", "builtin").Set("rule.version", "1").Set("termgate.policy.hash", strings.Repeat("ab", 32)).
		Set("termgate.decision.action", "allow").Set("termgate.decision.rule", "exec.allow").
		Set("termgate.decision.severity", "low").Set("event.severity", 1).Set("event.reason", "an ordinary program").
		Set("event.category", []string{"process", "intrusion_detection"}).Set("event.type", []string{"start", "allowed"}).
		Set("event.action", "process-exec").Set("event.outcome", "success").
		Set("process.args", []string{"cc", "-O2", "-c", "-o", "f12.o", "f12.c"}).Set("process.args_count", 6).
		Set("process.command_line", "cc -O2 -c -o f12.o f12.c").Set("process.executable", "/usr/bin/x86_64-linux-gnu-gcc-12").
		Set("@timestamp", "2026-11-24T22:00:00.123456Z").Set("process.pid", 4242).Set("process.parent.pid", 4241).
		Set("termgate.exec.mode", "enforce").Set("termgate.exec.syscall", "execve").Set("termgate.exec.identified_by", "path").
		Set("termgate.exec.parents", []string{"bash", "make"}).Set("message", "exec allowed: cc by exec.allow").
		Set("event.sequence", 12345).Set("termgate.chain.prev", strings.Repeat("cd", 32))
	return r
}

// BenchmarkCanonical: an exec's record, encoded by json.Marshal and by
// canonical, side by side.
//
//	go test ./audit -run '^$' -bench Canonical
func BenchmarkCanonical(b *testing.B) {
	r := execLikeRecord()
	want, _ := json.Marshal(r)
	if got, _ := canonical(r); !bytes.Equal(got, want) {
		b.Fatalf("canonical differs:\n got %s\nwant %s", got, want)
	}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonical(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
