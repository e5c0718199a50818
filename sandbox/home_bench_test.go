package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkResolveHome: resolving a profile that reads a developer's
// home by deny-list (a hundred and sixty entries, keys and credentials
// among them), side by side with one that reads a fixed list of home
// entries.
//
//	go test ./sandbox -run '^$' -bench ResolveHome
func BenchmarkResolveHome(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(root, "home")
	var files []string
	for i := range 60 {
		files = append(files, fmt.Sprintf(".tool%02drc", i), fmt.Sprintf("dir%02d/file", i))
	}
	for i := range 40 {
		files = append(files, fmt.Sprintf(".config/app%02d/settings.json", i))
	}
	files = append(files, ".ssh/id_ed25519", ".ssh/id_ed25519.pub", ".ssh/known_hosts", ".aws/credentials", ".bashrc", ".gitconfig", "src/project/main.go")
	for _, f := range files {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	v := Vars{Cwd: filepath.Join(home, "src", "project"), Home: home}
	for _, p := range []Profile{
		{Name: "fixed-list", Network: "none", Read: []string{"/usr", "/etc", "{home}/.bashrc", "{home}/.gitconfig", "{home}/.config/app00"}, Write: []string{"{cwd}"}},
		{Name: "deny-list", Network: "none", Read: []string{"/usr", "/etc", "{home}/*"}, Write: []string{"{cwd}"}},
	} {
		b.Run(p.Name, func(b *testing.B) {
			for range b.N {
				s, err := p.Resolve(v, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.seal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
