package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termgate/termgate/sandbox"
)

// TestEgressClientReadUnderLock: a call on a session sets the session's
// client while the proxy's goroutines report connections and judge
// destinations with it; neither reads it outside the lock (a report of
// the last command's connection racing the next call's start stopped
// the race-built server).
func TestEgressClientReadUnderLock(t *testing.T) {
	g, _ := judgeGateway(t, "enforce")
	eg, err := newEgressGate(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eg.close()
	es := eg.newSession()
	eg.started("s-1", es)
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
