package policy

import (
	"context"
	"testing"

	"github.com/termgate/termgate/policies"
)

func TestDefaultBundleLoads(t *testing.T) {
	e, err := New(context.Background(), Source{FS: policies.FS})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: "rm -rf /"})
	t.Logf("%+v %v", d, err)
}
