package main

import (
	"regexp"
	"slices"
	"strings"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/session"
)

// Remote password prompts. Over ssh (and mosh, docker exec -t, kubectl
// exec -t), the local terminal is raw whatever the remote program does:
// a remote sudo's "[sudo] password for alice:" reads with its own echo
// off, on the remote side, where the gateway cannot see it. Judged by the
// local echo state alone, a secret_ref there is refused (the terminal
// "echoes"), and the agent's next line lands in the remote prompt as a
// password attempt.
//
// So a remote prompt is known by its text: the foreground program is one
// of data.termgate.remote_terminals, the local terminal is raw (ICANON
// and ECHO off), and the cursor stands at the end of a line that ends a
// password prompt ("password:", "Password for 'https://…':", "Enter
// passphrase for key …:", "Verification code:"), with nothing after it.
// Then secret_ref and secret are typed there, and plain text is refused
// (nothing is sent): it would be taken as a password.
//
// What this trusts, said plainly: the screen's text, which the remote
// side (or a program named like a remote terminal) writes. A program that
// shows such a prompt to harvest a secret_ref could do as much with a
// local getpass prompt; which program may receive which secret is the
// policy's to judge (input.secret with input.program), and the value is
// masked in all output either way.

// passwordPromptRE matches a password prompt's last line, as the cursor
// ends it.
var passwordPromptRE = regexp.MustCompile(`(?i)(?:^|[\s\[(])(?:password|passphrase|passcode|pin|verification code|one-time code|otp)\b[^\n:]{0,120}(?:'[^']{0,200}')?[^\n:]{0,40}:$`)

// defaultRemoteTerminals are data.termgate.remote_terminals when the
// bundle names none.
func defaultRemoteTerminals() []string {
	return []string{"ssh", "mosh-client", "mosh", "telnet", "autossh", "et", "docker", "podman", "kubectl", "oc", "lxc", "incus"}
}

// remoteTerminals are the programs that relay another terminal.
func remoteTerminals(b *policy.Bundle) []string {
	if b != nil {
		if raw, ok := b.Data("termgate", "remote_terminals"); ok {
			if l, ok := stringList(raw); ok {
				return l
			}
		}
	}
	return defaultRemoteTerminals()
}

// remotePrompt returns the remote password prompt a session's terminal
// shows (see above), or false.
func (g *gateway) remotePrompt(s *session.Session, st session.Status) (string, bool) {
	if st.EchoOff || !slices.Contains(remoteTerminals(g.policy.Bundle()), st.Program) || !s.RawTerminal() {
		return "", false
	}
	text, row, col := s.Screen()
	return promptAtCursor(text, row, col)
}

// promptAtCursor reads the rendered screen: the cursor's line up to the
// cursor is a password prompt, and nothing follows it.
func promptAtCursor(screen string, row, col int) (string, bool) {
	lines := strings.Split(screen, "\n")
	line := []rune{}
	if row >= 0 && row < len(lines) {
		line = []rune(lines[row])
	}
	if col < 0 {
		return "", false
	}
	cut := min(col, len(line)) // a prompt's trailing space is not rendered
	if strings.TrimSpace(string(line[cut:])) != "" {
		return "", false
	}
	p := strings.TrimSpace(string(line[:cut]))
	if len(p) > 400 || !passwordPromptRE.MatchString(p) {
		return "", false
	}
	return p, true
}
