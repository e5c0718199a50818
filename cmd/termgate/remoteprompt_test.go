package main

import (
	"strings"
	"testing"
)

// TestPromptAtCursor: the cursor's line up to the cursor must end a
// password prompt, with nothing after it; a prompt further up, a shell
// prompt, or text after the cursor is not one.
func TestPromptAtCursor(t *testing.T) {
	cases := []struct {
		screen   string
		row, col int
		want     bool
	}{
		{"$ ssh host\n[sudo] password for alice: ", 1, 27, true},
		{"Password:", 0, 9, true},
		{"alice@host's password:", 0, 22, true},
		{"Enter passphrase for key '/home/a/.ssh/id_ed25519':", 0, 52, true},
		{"Password for 'https://alice@github.com':", 0, 40, true},
		{"Verification code:", 0, 18, true},
		{"[sudo] password for alice: \nremote$ ", 1, 8, false},
		{"remote$ ", 0, 8, false},
		{"Password: typed", 0, 10, false},
		{"echo password:", 0, 0, false},
		{"my passwordless login:", 0, 22, false},
		{"Password:", 3, 9, false},
		{"Password:", 0, -1, false},
		{"the password is: " + strings.Repeat("x", 500) + ":", 0, 518, false},
	}
	for _, c := range cases {
		if _, got := promptAtCursor(c.screen, c.row, c.col); got != c.want {
			t.Errorf("promptAtCursor(%q, %d, %d) = %v, want %v", c.screen, c.row, c.col, got, c.want)
		}
	}
}

// FuzzPromptAtCursor: whatever a remote side paints, reading the screen
// never panics, and a prompt found is text of the screen.
func FuzzPromptAtCursor(f *testing.F) {
	f.Add("[sudo] password for a: ", 0, 23)
	f.Add("x\ny\nPassword:", 2, 9)
	f.Add("é€password:", 0, 100)
	f.Fuzz(func(t *testing.T, screen string, row, col int) {
		screen = strings.ToValidUTF8(screen, "?") // as the screen renders it
		p, ok := promptAtCursor(screen, row, col)
		if ok && !strings.Contains(screen, p) {
			t.Fatalf("prompt %q is not on the screen", p)
		}
	})
}
