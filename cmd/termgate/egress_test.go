package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termgate/termgate/sandbox"
)

// egressGateOfOne is an egress gate in process (the default bundle, an
// audit log in a temporary directory) with one proxy session, s-1.
func egressGateOfOne(t *testing.T) (*egressGate, *sandbox.EgressSession) {
	t.Helper()
	g, _ := judgeGateway(t, "enforce")
	eg, err := newEgressGate(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eg.close)
	es := eg.newSession()
	eg.started("s-1", es)
	return eg, es
}

// TestEgressClientReadUnderLock: a call on a session sets the session's
// client while the proxy's goroutines report connections and judge
// destinations with it; neither reads it outside the lock (a report of
// the last command's connection racing the next call's start stopped
// the race-built server). It shows the race under -race, as CI runs it.
func TestEgressClientReadUnderLock(t *testing.T) {
	eg, es := egressGateOfOne(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "session_send",
				Meta: mcp.Meta{mcp.MetaKeyClientInfo: &mcp.Implementation{Name: fmt.Sprint("client-", i), Version: "1"}}}}
			_, done := eg.call(context.Background(), req, "s-1", nil)
			done()
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			eg.report(es, sandbox.Connection{Destination: sandbox.Destination{Session: "s-1", Profile: "default", Host: "allowed.test", Port: 80}})
		}
	}()
	wg.Wait()
	_, _, client := eg.current(es)
	if client.Name != "client-199" {
		t.Fatalf("the session's client is %+v, want the last call's", client)
	}
}

// TestEgressRefusalAfterItsCallReturned: a refusal the proxy reports for
// a call that returned meanwhile goes to the call in flight now, or is
// kept for the next one; it is never added to the call that is gone.
func TestEgressRefusalAfterItsCallReturned(t *testing.T) {
	eg, es := egressGateOfOne(t)
	refused := sandbox.Connection{Destination: sandbox.Destination{Session: "s-1", Profile: "default", Host: "denied.test", Port: 80},
		Refused: true, Verdict: sandbox.Verdict{Rule: "net.connect_unlisted", Reason: "not listed"}}

	_, done1 := eg.call(context.Background(), nil, "s-1", nil)
	st, first, _ := eg.current(es) // what the proxy read
	done1()
	ctx2, done2 := eg.call(context.Background(), nil, "s-1", nil)
	eg.mu.Lock()
	if got := st.liveLocked(first); got == first || got == nil {
		eg.mu.Unlock()
		t.Fatalf("a returned call was taken as live (%v)", got)
	}
	eg.mu.Unlock()
	eg.report(es, refused)
	if rs, _ := eg.refused(ctx2); len(rs) != 1 || rs[0].Rule != "net.connect_unlisted" {
		t.Fatalf("the call in flight was told %v, want the refusal", rs)
	}
	done2()

	// No call in flight: kept for the next one.
	eg.mu.Lock()
	if got := st.liveLocked(first); got != nil {
		eg.mu.Unlock()
		t.Fatalf("no call is in flight, yet %v", got)
	}
	eg.mu.Unlock()
	eg.report(es, refused)
	ctx3, done3 := eg.call(context.Background(), nil, "s-1", nil)
	defer done3()
	if rs, _ := eg.refused(ctx3); len(rs) != 1 {
		t.Fatalf("the next call was told %v, want the refusal kept for it", rs)
	}
}
