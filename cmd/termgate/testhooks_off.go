//go:build !termgate_testhooks

package main

import "github.com/modelcontextprotocol/go-sdk/mcp"

// addTestHooks adds nothing to a release build; see testhooks_on.go.
func (g *gateway) addTestHooks(*mcp.Server) {}
