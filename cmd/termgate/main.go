// Command termgate is an MCP server that gives AI agents persistent,
// interactive terminal sessions through one gate. See the README.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
