package policy

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// TestDecideRecovers: should a bug still panic inside Decide (here, the
// zero Engine, which has no bundle and no parsers), the input is denied
// and the caller gets an error saying so; the process goes on.
func TestDecideRecovers(t *testing.T) {
	var e Engine
	d, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: "ls"})
	if !errors.Is(err, errPanic) || d.Action != "deny" || d.Rule != "policy.error" {
		t.Fatalf("%+v, %v", d, err)
	}
}

// TestCallerDocumentsWithNulls: a document a caller sends with null lists
// is decided, not failed: the engine reads a null list as an empty one.
func TestCallerDocumentsWithNulls(t *testing.T) {
	e := defaultEngine(t)
	for doc, want := range map[string]string{
		`{"action":"input","program":"bash","shell":{"commands":[{"name":"mount","args":null}]}}`:                                "allow",
		`{"action":"input","program":"bash","shell":{"background":true,"recursive_functions":null,"commands":null}}`:             "allow",
		`{"action":"input","program":"bash","shell":{"commands":[{"name":"","redirects":[{"op":">","target":"/etc/passwd"}]}]}}`: "deny",
	} {
		var in Input
		if err := json.Unmarshal([]byte(doc), &in); err != nil {
			t.Fatal(err)
		}
		d, err := e.Decide(context.Background(), in)
		if err != nil || d.Action != want {
			t.Errorf("%s: %+v %v", doc, d, err)
		}
	}
}
