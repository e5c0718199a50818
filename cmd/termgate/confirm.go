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

	mu       sync.Mutex
	used     map[string]time.Time // nonces redeemed, until they expire
	approved map[string]time.Time // agent approvals (session|hash|rule), until they expire
	lastBy   map[string]string    // who confirmed an input, by its hash, for the decision's reason
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
	return &humanConfirmer{aead: aead, ttl: ttl, used: map[string]time.Time{}, approved: map[string]time.Time{}, lastBy: map[string]string{}}, nil
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
	for _, part := range []string{in.Action, ref, in.Program, in.Text} {
		fmt.Fprintf(h, "%d:%s\x00", len(part), part)
	}
	if in.Start != nil {
		b, _ := json.Marshal(in.Start)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sessionRef(in GateInput) string {
	if in.Session != nil {
		return in.Session.ID
	}
	return in.Action
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

func (c *humanConfirmer) question(in GateInput, d Decision) *mcp.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "termgate: the agent wants to run this, and the policy asks you first.\n\n")
	fmt.Fprintf(&b, "  %s\n\n", in.Text)
	fmt.Fprintf(&b, "program: %s\n", in.Program)
	switch {
	case in.Session != nil:
		fmt.Fprintf(&b, "session: %s %s\ncwd: %s\n", in.Session.ID, in.Session.Name, in.Session.Cwd)
	case in.Start != nil:
		fmt.Fprintf(&b, "cwd: %s\n", in.Start.Cwd)
	}
	fmt.Fprintf(&b, "rule: %s (%s)\nreason: %s\n", d.Rule, d.Severity, d.Reason)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Run it", "description": "Approve running exactly the input shown, once."},
			},
			"required": []string{"approve"},
		},
	}
}

// errNeedInput carries the input-required result the handler must return.
type errNeedInput struct{ res *mcp.CallToolResult }

func (e *errNeedInput) Error() string { return "waiting for the human's confirmation" }

// Confirm implements [Confirmer].
func (c *humanConfirmer) Confirm(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) (bool, error) {
	if req == nil || req.Session == nil {
		return false, errors.New("no client to ask")
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		if !c.agentMode {
			return false, errors.New("the client cannot ask a human (no elicitation support)")
		}
		return c.agentConfirm(in, d)
	}
	c.setBy(in, "the human")
	hash := inputHash(in)
	// A retry carrying the human's answer.
	if req.Params != nil && req.Params.RequestState != "" {
		st, err := c.open(req.Params.RequestState)
		if err != nil {
			return false, err
		}
		exp := time.Unix(st.Expires, 0)
		switch {
		case time.Now().After(exp):
			return false, errors.New("the confirmation expired")
		case st.Hash != hash || st.Session != sessionRef(in) || st.Rule != d.Rule:
			return false, errors.New("the input changed after it was confirmed")
		case !c.redeem(st.Nonce, exp):
			return false, errors.New("the confirmation was already used")
		}
		resp, _ := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		return approved(resp)
	}
	if req.ProtocolVersion() >= "2026-07-28" {
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return false, err
		}
		state, err := c.seal(confirmState{Session: sessionRef(in), Hash: hash, Rule: d.Rule, Nonce: hex.EncodeToString(nonce), Expires: time.Now().Add(c.ttl).Unix()})
		if err != nil {
			return false, err
		}
		return false, &errNeedInput{res: &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": c.question(in, d)},
			RequestState:  state,
		}}
	}
	ctx, cancel := context.WithTimeout(ctx, c.ttl)
	defer cancel()
	resp, err := req.Session.Elicit(ctx, c.question(in, d))
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("no answer within %s", c.ttl)
		}
		return false, err
	}
	return approved(resp)
}

func approved(resp *mcp.ElicitResult) (bool, error) {
	if resp == nil {
		return false, errors.New("no answer")
	}
	if resp.Action != "accept" {
		return false, fmt.Errorf("the human chose %q", resp.Action)
	}
	if ok, _ := resp.Content["approve"].(bool); !ok {
		return false, errors.New("the human did not approve")
	}
	return true, nil
}

func approvalKey(session, hash, rule string) string { return session + "|" + hash + "|" + rule }

func (c *humanConfirmer) setBy(in GateInput, who string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lastBy) > 1024 {
		clear(c.lastBy)
	}
	c.lastBy[inputHash(in)] = who
}

// confirmedBy says who confirmed in (for the decision's reason).
func (c *humanConfirmer) confirmedBy(in GateInput) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if who, ok := c.lastBy[inputHash(in)]; ok {
		return who
	}
	return "the human"
}

// errAgentToken asks the agent to redeem a token with the confirm tool.
type errAgentToken struct{ token string }

func (e *errAgentToken) Error() string {
	return fmt.Sprintf("needs confirmation (--confirm-mode=agent): call the confirm tool with token %q and a written justification, then send the same input again", e.token)
}

// agentConfirm spends an approval the agent redeemed for exactly this
// input, or issues a token for one.
func (c *humanConfirmer) agentConfirm(in GateInput, d Decision) (bool, error) {
	key := approvalKey(sessionRef(in), inputHash(in), d.Rule)
	c.mu.Lock()
	exp, ok := c.approved[key]
	if ok {
		delete(c.approved, key)
	}
	c.mu.Unlock()
	if ok && time.Now().Before(exp) {
		c.setBy(in, "the agent, with a written justification (--confirm-mode=agent)")
		return true, nil
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return false, err
	}
	token, err := c.seal(confirmState{Session: sessionRef(in), Hash: inputHash(in), Rule: d.Rule, Nonce: hex.EncodeToString(nonce), Expires: time.Now().Add(c.ttl).Unix()})
	if err != nil {
		return false, err
	}
	return false, &errAgentToken{token: token}
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
