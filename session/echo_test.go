package session

import "testing"

// TestStripEchoWhenTheEchoIsPartial: the echo is removed when it is whole,
// when its first line was already behind the cursor, and while its end is
// still arriving.
func TestStripEchoWhenTheEchoIsPartial(t *testing.T) {
	in := []string{"def twice(x):", "    return 2*x", ""}
	for _, c := range [][2]string{
		{"def twice(x):\n...     return 2*x\n...\n", ""},
		{"\n...     return 2*x\n...\n", ""},
		{">>> def twice(x):\n...     return 2*x\n...", ""},
		{"def twice(x):\n...     retu", ""},
	} {
		if got := stripEcho(c[0], in); got != c[1] {
			t.Errorf("%q -> %q", c[0], got)
		}
	}
	if got := stripEcho("echo hi\nhi\n", []string{"echo hi"}); got != "hi\n" {
		t.Errorf("%q", got)
	}
	if got := stripEcho("for i in 1 2\n> do echo n$i; done\nn1\nn2", []string{"for i in 1 2", "do echo n$i; done"}); got != "n1\nn2" {
		t.Errorf("%q", got)
	}
}

// TestEarlierOutputGluedToATypedAheadEcho: a command that printed between
// the echo of a line typed ahead of it and that line's Enter shares the
// echo's row; the command's output is what follows the echo. Anything
// else is left as it is.
func TestEarlierOutputGluedToATypedAheadEcho(t *testing.T) {
	in := []string{"echo new"}
	for _, c := range [][2]string{
		{"echo newold-end", "old-end"},
		{"echo newold-end\nmore", "old-end\nmore"},
		{"echo new\nold-end", "old-end"},       // the whole row is the echo (dropLines)
		{"old-endecho new", "old-endecho new"}, // printed before the echo came
		{"echo ne", "echo ne"},
		{"", ""},
	} {
		if got := dropLines(cutEchoHead(c[0], in), in); got != c[1] {
			t.Errorf("%q -> %q, want %q", c[0], got, c[1])
		}
	}
	if got := cutEchoHead("  x", []string{""}); got != "  x" {
		t.Errorf("an empty line cut %q", got)
	}
}
