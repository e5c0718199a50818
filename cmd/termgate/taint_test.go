package main

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestLiteralPieces(t *testing.T) {
	for _, c := range []struct {
		value, text string
		want        []string
	}{
		{"ghp_0123456789abcdef", "cat gh'p_'0123456789abcdef", []string{"0123456789abcdef"}},
		{"ghp_0123456789abcdef", `cat $'\x67hp_0123456789abcdef'`, []string{"hp_0123456789abcdef"}},
		{"ghp_0123456789abcdef", `cat "ghp_0123"'456789abcdef'`, []string{"ghp_0123", "456789abcdef"}},
		{"ghp_0123456789abcdef", "cat gh'p_'0123'456789a'bcdef", nil}, // no piece of 8 bytes
		{"ghp_0123456789abcdef", "ls", nil},
		{"short", "short", nil},
	} {
		if got := literalPieces(c.value, c.text, 8); !slices.Equal(got, c.want) {
			t.Errorf("literalPieces(%q, %q) = %q, want %q", c.value, c.text, got, c.want)
		}
	}
}

// TestHiddenSecrets: a token the text spells in pieces is hidden; one
// the text holds whole is not (the redactor masks its echo), and a line
// without one has none.
func TestHiddenSecrets(t *testing.T) {
	g, _ := judgeGateway(t, "enforce")
	token := fakeToken()
	for i, c := range []struct {
		text   string
		hidden bool
	}{
		{"cat gh'p_'" + token[4:], true},
		{`cat $'\x67` + token[1:] + `'`, true},
		{"cat " + token, false},
		{"cat notes.txt", false},
	} {
		in := GateInput{Action: "input", Program: "bash", Text: c.text, Cwd: "/home/u"}
		d, err := g.stages.Decider.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Policy == nil || d.Policy.Input == nil {
			t.Fatal("the decision carries no document")
		}
		got := hiddenSecrets(d.Policy.Input, c.text, g.redactor)
		if c.hidden && (len(got) != 1 || got[0].value != token) {
			t.Errorf("%d hidden secrets in line %d, which hides the token (want it alone)", len(got), i)
		}
		if !c.hidden && len(got) != 0 {
			t.Errorf("%d hidden secrets in line %d, which hides none", len(got), i)
		}
	}
}

// FuzzLiteralPieces: every piece is in the value and in the text, of 8
// bytes or more.
func FuzzLiteralPieces(f *testing.F) {
	f.Add("ghp_0123456789abcdef", "cat gh'p_'0123456789abcdef")
	f.Add("aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaa b aaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, value, text string) {
		for _, p := range literalPieces(value, text, 8) {
			i := strings.Index(value, p)
			if len(p) < 8 || i < 0 || !strings.Contains(text, p) {
				t.Fatalf("piece %q of %q in %q", p, value, text)
			}
		}
	})
}
