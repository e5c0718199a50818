// Package policies is termgate's default policy bundle: the Rego rules,
// their tests and the data lists they read. Operators copy this directory,
// change it, test it with `opa test` and point --policy-dir at it.
package policies

import "embed"

// FS holds the bundle: *.rego, *_test.rego and data.json.
//
//go:embed *.rego data.json
var FS embed.FS
