//go:build termgate_testhooks

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With the termgate_testhooks build tag, which only the tests' build of
// the binary carries, the server offers termgate://debug/runtime: its
// goroutines (with their stacks), open files and heap, so that a test of
// the real binary can check that nothing leaks. No release build has it.
func (g *gateway) addTestHooks(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{
		Name:     "debug-runtime",
		URI:      "termgate://debug/runtime",
		MIMEType: "application/json",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		var stacks bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&stacks, 1); err != nil {
			return nil, err
		}
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return nil, err
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b, err := json.Marshal(map[string]any{
			"goroutines": runtime.NumGoroutine(),
			"fds":        len(fds) - 1, // ReadDir's own
			"heap_alloc": ms.HeapAlloc,
			"stacks":     stacks.String(),
		})
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
	})
}
