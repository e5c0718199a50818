// Command termgate is an MCP server that gives AI agents persistent,
// interactive terminal sessions through one gate. See the README.
package main

import (
	"os"

	"github.com/termgate/termgate/sandbox"
)

func main() {
	if sandbox.IsLauncher() {
		sandbox.Main() // a session's launcher: confine, then exec; never returns
	}
	if sandbox.IsConnectHelper() {
		sandbox.ConnectMain() // ssh's ProxyCommand in a proxy session; never returns
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
