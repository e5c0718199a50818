package sandbox

import (
	"slices"
	"testing"
)

// TestSetEnvPlaceholders: set_env's values get their placeholders; {tmp}
// stays for Attach; a variable whose placeholder has no value, or is
// unknown, is left out rather than set to a half path.
func TestSetEnvPlaceholders(t *testing.T) {
	v := Vars{Home: "/h", Cwd: "/h/p", Cache: "/h/.cache/tg", More: map[string]string{"gomodcache": "/h/go/pkg/mod", "empty": ""}}
	got := setEnvOf([]string{
		"GOCACHE={cache}/go-build",
		"GOPROXY=file://{gomodcache}/cache/download,https://proxy.example",
		"IPYTHONDIR={tmp}/ipython",
		"A={empty}/x",
		"B={unknown}/x",
		"PLAIN=value",
		"bad name=x",
		"C={home}{cwd}",
	}, v)
	want := []string{
		"GOCACHE=/h/.cache/tg/go-build",
		"GOPROXY=file:///h/go/pkg/mod/cache/download,https://proxy.example",
		"IPYTHONDIR={tmp}/ipython",
		"PLAIN=value",
		"C=/h/h/p",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("setEnvOf = %q, want %q", got, want)
	}
	if _, err := ParseProfiles(map[string]any{"p": map[string]any{"network": "none", "set_env": []any{"NOEQUALS"}}}); err == nil {
		t.Fatal("a set_env entry without = was accepted")
	}
}
