package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// humanConfirmer asks the human, through the MCP client, whether an input
// the policy wants confirmed may run. The agent cannot answer for the human:
// the question goes to the client's elicitation UI, never to the model.
//
// Clients on the 2026-07-28 protocol get an input request: the call returns
// an "input required" result with a sealed state, and the client retries
// with the human's answer. The state is AES-GCM sealed with a key that
// lives only in this process, and binds the session, a SHA-256 of the exact
// input (action, program, text), the rule, a nonce and an expiry; it is
// single use. Older clients get a classic elicitation, bounded by the same
// expiry. Declined, cancelled, expired, changed or replayed ⇒ refused.
//
// With --confirm-mode=agent (weaker, and documented so), a client that
// cannot ask a human gets a one-time token instead of a refusal: the agent
// redeems it with the confirm tool and a written justification, which the
// audit log keeps, and then sends the same input again. The approval is
// bound like a human's (session, input hash, rule), single use, and expires.
type humanConfirmer struct {
	aead      cipher.AEAD
	ttl       time.Duration
	agentMode bool
	redact    func(string) string // masks secrets in what the human is shown; nil: none

	mu       sync.Mutex
	used     map[string]time.Time // nonces redeemed, until they expire
	approved map[string]time.Time // agent approvals (session|hash|rule), until they expire
}

func newHumanConfirmer(ttl time.Duration) (*humanConfirmer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("confirmation key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &humanConfirmer{aead: aead, ttl: ttl, used: map[string]time.Time{}, approved: map[string]time.Time{}}, nil
}

// confirmState is what the sealed request state carries.
type confirmState struct {
	Session string `json:"s"`
	Hash    string `json:"h"`
	Rule    string `json:"r"`
	Nonce   string `json:"n"`
	Expires int64  `json:"e"`
}

// inputHash binds an approval to exactly one input.
func inputHash(in GateInput) string {
	h := sha256.New()
	ref := ""
	if in.Session != nil {
		ref = in.Session.ID
	}
	for _, part := range []string{string(in.Action), ref, in.Program, in.Text} {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	if in.Start != nil {
		b, _ := json.Marshal(in.Start)
		h.Write(b)
		// The values too: an approval of rm -rf "$T" with T=scratch is not
		// one of the same line with T=~.
		for _, kv := range in.Start.EnvValues {
			fmt.Fprintf(h, "%d:%s\x00", len(kv), kv)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sessionRef(in GateInput) string {
	if in.Session != nil {
		return in.Session.ID
	}
	return string(in.Action)
}

func (c *humanConfirmer) seal(st confirmState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, c.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(c.aead.Seal(nonce, nonce, b, []byte("termgate-confirm"))), nil
}

func (c *humanConfirmer) open(s string) (confirmState, error) {
	var st confirmState
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < c.aead.NonceSize() {
		return st, errors.New("the confirmation state is malformed")
	}
	b, err := c.aead.Open(nil, raw[:c.aead.NonceSize()], raw[c.aead.NonceSize():], []byte("termgate-confirm"))
	if err != nil {
		return st, errors.New("the confirmation state was not issued by this server")
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, errors.New("the confirmation state is malformed")
	}
	return st, nil
}

// redeem marks a nonce used; false if it was used before.
func (c *humanConfirmer) redeem(nonce string, exp time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for n, e := range c.used {
		if now.After(e) {
			delete(c.used, n)
		}
	}
	if _, seen := c.used[nonce]; seen {
		return false
	}
	c.used[nonce] = exp
	return true
}

// question is what the human is asked: the program, its argv, the
// working directory and the environment the agent set, the input, and the
// rule; every text escaped (escapeText) and redacted.
func (c *humanConfirmer) question(in GateInput, d Decision) *mcp.ElicitParams {
	red := c.redact
	if red == nil {
		red = func(s string) string { return s }
	}
	show := func(s string) string { return escapeText(red(s)) }
	var b strings.Builder
	if in.Connect != nil {
		return connectQuestion(in, d, show)
	}
	fmt.Fprintf(&b, "termgate: the agent wants to run this, and the policy asks you first.\n\n")
	fmt.Fprintf(&b, "  %s\n\n", show(in.Text))
	fmt.Fprintf(&b, "program: %s\n", show(in.Program))
	switch {
	case in.Session != nil:
		fmt.Fprintf(&b, "session: %s %s\ncwd: %s\n", show(in.Session.ID), show(in.Session.Name), show(in.Session.Cwd))
	case in.Start != nil:
		argv := make([]string, len(in.Start.Argv))
		for i, a := range in.Start.Argv {
			argv[i] = quoteText(red(a))
		}
		fmt.Fprintf(&b, "argv: [%s]\ncwd: %s\n", strings.Join(argv, ", "), show(in.Start.Cwd))
		if len(in.Start.EnvValues) == 0 {
			b.WriteString("environment set by the agent: none\n")
		} else {
			b.WriteString("environment set by the agent:\n")
			for _, kv := range in.Start.EnvValues {
				name, value, _ := strings.Cut(kv, "=")
				fmt.Fprintf(&b, "  %s=%s\n", show(name), quoteText(red(value)))
			}
		}
	}
	fmt.Fprintf(&b, "rule: %s (%s)\nreason: %s\n", show(d.Rule), show(d.Severity), show(d.Reason))
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Run it", "description": "Approve running exactly the input shown, once, with exactly the environment shown."},
			},
			"required": []string{"approve"},
		},
	}
}

// connectQuestion asks the human about a session's new destination.
func connectQuestion(in GateInput, d Decision, show func(string) string) *mcp.ElicitParams {
	c := in.Connect
	var b strings.Builder
	fmt.Fprintf(&b, "termgate: a program in a session wants to connect out, and the policy asks you first.\n\n")
	fmt.Fprintf(&b, "  %s port %d\n\n", show(c.Host), c.Port)
	if c.Address != "" && c.Address != c.Host {
		fmt.Fprintf(&b, "address: %s (%s)\n", show(c.Address), show(c.AddressClass))
	}
	prog := c.Program
	if prog == "" {
		prog = "(not known)"
	}
	fmt.Fprintf(&b, "program: %s\nvia: %s\n", show(prog), show(c.Via))
	if in.Session != nil {
		fmt.Fprintf(&b, "session: %s (profile %s)\n", show(in.Session.ID), show(c.Profile))
	}
	fmt.Fprintf(&b, "rule: %s (%s)\nreason: %s\n", show(d.Rule), show(d.Severity), show(d.Reason))
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Allow it", "description": "Allow this program to reach this host and port for the rest of this session."},
			},
			"required": []string{"approve"},
		},
	}
}

// escapeText makes text safe to show a human: what is shown is what is
// there. Control characters (C0, DEL, C1), bidirectional controls (which
// reorder what follows: "rm -rf ~ \u202e…"), zero-width and invisible
// characters, line and paragraph separators, and bytes that are not
// UTF-8 are written as Go escapes (\n, \x1b, \u202e, \U000e0041, \xff); a
// backslash as \\. Every text of a confirmation question goes through
// it.
func escapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff && hiddenRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		case r >= 0x80 && r < 0xa0, hiddenRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hiddenRune reports a character that changes how text around it reads
// without showing itself: bidirectional controls and marks, zero-width
// and invisible characters, line and paragraph separators, and Unicode's
// other format characters.
func hiddenRune(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x00ad, r == 0x180e:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// quoteText is escapeText between double quotes (a " inside as \").
func quoteText(s string) string {
	return `"` + strings.ReplaceAll(escapeText(s), `"`, `\"`) + `"`
}

// Confirm implements [Confirmer]. Its answer is a value: approved,
// declined (with why), pending (the input-required result the handler
// returns), or, with --confirm-mode=agent, a token issued to the agent.
func (c *humanConfirmer) Confirm(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) Confirmation {
	no := func(why string) Confirmation {
		return Confirmation{Answer: Declined, Detail: why, Via: "mcp-elicitation"}
	}
	if req == nil || req.Session == nil {
		return no("no client to ask")
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		if !c.agentMode {
			return no("the client cannot ask a human (no elicitation support)")
		}
		return c.agentConfirm(in, d)
	}
	hash := inputHash(in)
	// A retry carrying the human's answer.
	if req.Params != nil && req.Params.RequestState != "" {
		st, err := c.open(req.Params.RequestState)
		if err != nil {
			return no(err.Error())
		}
		exp := time.Unix(st.Expires, 0)
		switch {
		case time.Now().After(exp):
			return no("the confirmation expired")
		case st.Hash != hash || st.Session != sessionRef(in) || st.Rule != d.Rule:
			return no("the input changed after it was confirmed")
		case !c.redeem(st.Nonce, exp):
			return no("the confirmation was already used")
		}
		resp, _ := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		a := approved(resp)
		a.Via = "input-request"
		return a
	}
	if req.ProtocolVersion() >= "2026-07-28" {
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return no(err.Error())
		}
		state, err := c.seal(confirmState{Session: sessionRef(in), Hash: hash, Rule: d.Rule, Nonce: hex.EncodeToString(nonce), Expires: time.Now().Add(c.ttl).Unix()})
		if err != nil {
			return no(err.Error())
		}
		return Confirmation{Answer: Pending, Via: "input-request", Result: &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": c.question(in, d)},
			RequestState:  state,
		}}
	}
	ctx, cancel := context.WithTimeout(ctx, c.ttl)
	defer cancel()
	resp, err := req.Session.Elicit(ctx, c.question(in, d))
	if err != nil {
		if ctx.Err() != nil {
			return no(fmt.Sprintf("no answer within %s", c.ttl))
		}
		return no(err.Error())
	}
	return approved(resp)
}

// approved reads the human's answer.
func approved(resp *mcp.ElicitResult) Confirmation {
	no := func(why string) Confirmation {
		return Confirmation{Answer: Declined, Detail: why, Via: "mcp-elicitation"}
	}
	if resp == nil {
		return no("no answer")
	}
	if resp.Action != "accept" {
		return no(fmt.Sprintf("the human chose %q", resp.Action))
	}
	if ok, _ := resp.Content["approve"].(bool); !ok {
		return no("the human did not approve")
	}
	return Confirmation{Answer: Approved, By: "the human", Via: "mcp-elicitation"}
}

func approvalKey(session, hash, rule string) string { return session + "|" + hash + "|" + rule }

// agentConfirm spends an approval the agent redeemed for exactly this
// input, or issues a token for one. The token travels in the
// Confirmation's Token only: the pipeline shows it to the agent and to
// nothing else.
func (c *humanConfirmer) agentConfirm(in GateInput, d Decision) Confirmation {
	key := approvalKey(sessionRef(in), inputHash(in), d.Rule)
	c.mu.Lock()
	exp, ok := c.approved[key]
	if ok {
		delete(c.approved, key)
	}
	c.mu.Unlock()
	if ok && time.Now().Before(exp) {
		return Confirmation{Answer: Approved, By: "the agent, with a written justification (--confirm-mode=agent)", Via: "agent-token"}
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return Confirmation{Answer: Declined, Detail: err.Error(), Via: "agent-token"}
	}
	token, err := c.seal(confirmState{Session: sessionRef(in), Hash: inputHash(in), Rule: d.Rule, Nonce: hex.EncodeToString(nonce), Expires: time.Now().Add(c.ttl).Unix()})
	if err != nil {
		return Confirmation{Answer: Declined, Detail: err.Error(), Via: "agent-token"}
	}
	return Confirmation{Answer: TokenIssued, Token: token, Via: "agent-token"}
}

// redeemToken records the agent's approval for the input a token names.
func (c *humanConfirmer) redeemToken(token string) (confirmState, error) {
	st, err := c.open(token)
	if err != nil {
		return st, err
	}
	exp := time.Unix(st.Expires, 0)
	if time.Now().After(exp) {
		return st, errors.New("the token expired; send the input again for a new one")
	}
	if !c.redeem(st.Nonce, exp) {
		return st, errors.New("the token was already used")
	}
	c.mu.Lock()
	c.approved[approvalKey(st.Session, st.Hash, st.Rule)] = exp
	c.mu.Unlock()
	return st, nil
}

// revoke drops an approval that could not be recorded.
func (c *humanConfirmer) revoke(st confirmState) {
	c.mu.Lock()
	delete(c.approved, approvalKey(st.Session, st.Hash, st.Rule))
	c.mu.Unlock()
}
