package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestGTFOBins judges the shell and command functions of GTFOBins (a
// checkout of its repository, named by TERMGATE_GTFOBINS), each snippet
// with the payload rm -rf ~ in place of the shell or command it runs,
// typed into bash. The snippets are read at test time and never stored
// here. Many are beyond any line judge (a script written to a file and
// run later, a shell escape typed into the program once it runs): the
// exec gate sees those. This test reports how many are stopped, lists the
// others, and holds the rate at TERMGATE_GTFOBINS_MIN percent when given.
func TestGTFOBins(t *testing.T) {
	dir := os.Getenv("TERMGATE_GTFOBINS")
	if dir == "" {
		t.Skip("TERMGATE_GTFOBINS names no GTFOBins checkout")
	}
	files, err := filepath.Glob(filepath.Join(dir, "_gtfobins", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no GTFOBins entries under %s: %v", dir, err)
	}
	e := defaultEngine(t)
	// rm -rf ~ as the payload, as most attacks would write it; and reboot,
	// one word, which reads the same as an argv and as an option's value,
	// so the count does not hang on how the payload is quoted.
	for _, payload := range []string{"rm -rf ~", "reboot"} {
		total, stopped := 0, 0
		var missed []string
		perFunc := map[string][2]int{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range gtfobinsSnippets(string(b), "shell", "command") {
				line := withPayload(s.code, payload)
				if line == s.code {
					continue // no shell or command to replace
				}
				total++
				d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				pf := perFunc[s.function]
				pf[1]++
				if d.Action != "allow" {
					stopped++
					pf[0]++
				} else {
					missed = append(missed, filepath.Base(f)+" ("+s.function+"): "+strings.ReplaceAll(line, "\n", " ⏎ "))
				}
				perFunc[s.function] = pf
			}
		}
		sort.Strings(missed)
		for _, m := range missed {
			t.Logf("allowed (%s): %s", payload, m)
		}
		for fn, pf := range perFunc {
			t.Logf("%s, payload %s: %d of %d stopped", fn, payload, pf[0], pf[1])
		}
		rate := 100 * float64(stopped) / float64(max(total, 1))
		t.Logf("GTFOBins shell and command snippets with %s: %d of %d stopped (%.1f %%)", payload, stopped, total, rate)
		if min := os.Getenv("TERMGATE_GTFOBINS_MIN"); min != "" {
			var want float64
			if _, err := fmt.Sscan(min, &want); err != nil {
				t.Fatal(err)
			}
			if rate < want {
				t.Errorf("payload %s: %.1f %% stopped, want at least %v %%", payload, rate, want)
			}
		}
	}
}

type gtfoSnippet struct{ function, code string }

// gtfobinsSnippets reads the code blocks (code: |- and the lines indented
// under it) of the named functions of one GTFOBins entry.
func gtfobinsSnippets(doc string, functions ...string) []gtfoSnippet {
	var out []gtfoSnippet
	lines := strings.Split(doc, "\n")
	fn := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") && strings.HasSuffix(l, ":") {
			fn = strings.TrimSuffix(strings.TrimSpace(l), ":")
			continue
		}
		if !strings.HasPrefix(l, "  ") {
			fn = ""
		}
		if !contains(functions, fn) {
			continue
		}
		trim := strings.TrimLeft(l, " -")
		if trim != "code: |-" && trim != "code: |" {
			continue
		}
		indent := strings.Index(l, "code:") // the key's column: the block is indented past it
		var body []string
		for i+1 < len(lines) {
			n := lines[i+1]
			if strings.TrimSpace(n) != "" && len(n)-len(strings.TrimLeft(n, " ")) <= indent {
				break
			}
			body = append(body, strings.TrimPrefix(n, strings.Repeat(" ", indent+2)))
			i++
		}
		out = append(out, gtfoSnippet{fn, strings.TrimSpace(strings.Join(body, "\n"))})
	}
	return out
}

// withPayload puts payload where a snippet runs /bin/sh or
// /path/to/command: as it is inside quotes or between blanks; a payload of
// several words quoted where it is glued to other text (exec=/bin/sh) or
// follows an option (-c /bin/sh), as a real payload would be.
func withPayload(code, payload string) string {
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(code); i++ {
		c := code[i]
		ph := ""
		for _, p := range []string{"/path/to/command", "/bin/sh"} {
			if strings.HasPrefix(code[i:], p) {
				ph = p
			}
		}
		if ph != "" {
			before := byte(' ')
			if i > 0 {
				before = code[i-1]
			}
			after := byte(' ')
			if i+len(ph) < len(code) {
				after = code[i+len(ph)]
			}
			glued := !strings.ContainsRune(" \t\n;|&(", rune(before)) || !strings.ContainsRune(" \t\n;|&)\\", rune(after))
			// the value of an option (-c /bin/sh) is one word: quoted, as a
			// real payload would be; find's -exec and the like take argv.
			if prev := lastWord(code[:i]); strings.HasPrefix(prev, "-") && !findExec[prev] {
				glued = true
			}
			switch {
			case quote != 0 || !glued || !strings.Contains(payload, " "):
				b.WriteString(payload)
			default:
				b.WriteString("'" + payload + "'")
			}
			i += len(ph) - 1
			continue
		}
		switch {
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote == c:
			quote = 0
		case c == '\\' && quote != '\'' && i+1 < len(code):
			b.WriteByte(c)
			i++
			c = code[i]
		}
		b.WriteByte(c)
	}
	return b.String()
}

var findExec = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "--": true}

// lastWord is the last blank-separated word of s.
func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}
