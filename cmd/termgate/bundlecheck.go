package main

import (
	"errors"
	"fmt"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// validateBundle checks the parts of a bundle that the gateway, not the
// policy engine, reads: the sandbox profiles (each must parse, and
// "default" must be there: a start that names no profile gets it), the
// extra redaction rules (each must compile), the secrets it names (each
// must resolve), and the session_env_deny list. The policy engine runs it
// before a bundle is put in force (policy.Source.Validate), at start and
// at every reload: a reload swaps the whole bundle in one step, or keeps
// the last good one and says why.
//
// The profiles and the environment list are read from the bundle in
// force at each start, so a reload's take effect at once. The redaction
// rules and the secrets are the redactor's, built at start: a reload
// checks them, and they take effect when the gateway restarts.
func validateBundle(getenv func(string) string) func(*policy.Bundle) error {
	return func(b *policy.Bundle) error {
		raw, ok := b.Data("termgate", "profiles")
		if !ok {
			return errors.New("the bundle defines no sandbox profiles (data.termgate.profiles)")
		}
		profiles, err := sandbox.ParseProfiles(raw)
		if err != nil {
			return fmt.Errorf("data.termgate.profiles: %w", err)
		}
		if _, ok := profiles["default"]; !ok {
			return errors.New("data.termgate.profiles has no \"default\" profile")
		}
		if raw, ok := b.Data("termgate", "session_env_deny"); ok {
			if _, ok := stringList(raw); !ok {
				return errors.New("data.termgate.session_env_deny must be a list of strings")
			}
		}
		if _, err := bundleRules(b); err != nil {
			return err
		}
		specs, err := bundleSecrets(b)
		if err != nil {
			return err
		}
		if _, err := loadSecrets(specs, getenv); err != nil {
			return err
		}
		return nil
	}
}
