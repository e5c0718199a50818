package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/termgate/termgate/policy"
)

// Policy for a fleet: where the bundle comes from (--policy-dir, the
// embedded bundle, or a bundle server by --policy-url or an OPA
// configuration file), and the key it must be signed with.
//
// Decisions, written down:
//   - --policy-url is the short form of the OPA configuration: one
//     service, one bundle, OPA's default polling (60–120 s) and long
//     polling where the server offers it; --policy-config takes OPA's own
//     services/bundles/keys shape for everything else (several services,
//     other credentials, polling, signing scope per bundle).
//   - with a verification key, every bundle must be signed and verify:
//     unsigned and tampered bundles are refused (OPA would take unsigned
//     ones when keys are configured without a signing block). The
//     embedded bundle is part of the binary and is not checked.
//   - a server's bundle is cached in --policy-cache; a gateway that starts
//     while the server is unreachable starts from it, and one with neither
//     does not start.

// fleetErrors checks the fleet flags together.
func (c Config) fleetErrors() []error {
	var errs []error
	n := 0
	for _, s := range []string{c.PolicyDir, c.PolicyURL, c.PolicyConfig} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, fmt.Errorf("--policy-dir, --policy-url and --policy-config name the bundle three ways: give one"))
	}
	if c.PolicyURL == "" && (c.PolicyTokenFile != "" || c.PolicyClientCert != "" || c.PolicyClientKey != "" || c.PolicyCACert != "") {
		errs = append(errs, fmt.Errorf("--policy-token-file, --policy-client-cert, --policy-client-key and --policy-ca-cert go with --policy-url (in --policy-config, use the service's credentials and tls)"))
	}
	if c.PolicyConfig != "" && c.VerificationKey != "" {
		errs = append(errs, fmt.Errorf("--verification-key with --policy-config: put the key in the configuration's keys section"))
	}
	if c.AuditSyslogBuffer < 64<<10 {
		errs = append(errs, fmt.Errorf("--audit-syslog-buffer must be at least 65536 bytes, not %d", c.AuditSyslogBuffer))
	}
	if c.AuditMaxRecord < 2048 {
		errs = append(errs, fmt.Errorf("--audit-max-record must be at least 2048 bytes, not %d", c.AuditMaxRecord))
	}
	return errs
}

// verification is the key configuration --verification-key gives, or nil.
func (c Config) verification() (*bundle.VerificationConfig, error) {
	if c.VerificationKey == "" {
		return nil, nil
	}
	return policy.Verification(c.VerificationKey, c.VerificationKeyID, c.VerificationAlg, c.VerificationScope)
}

// policySourceFor is where the gateway's bundle comes from.
func (c Config) policySourceFor(getenv func(string) string) (policy.Source, error) {
	verify, err := c.verification()
	if err != nil {
		return policy.Source{}, err
	}
	cache := c.PolicyCache
	if cache == "" {
		cache = filepath.Join(stateDir(getenv), "bundles")
	}
	switch {
	case c.PolicyURL != "":
		r, err := policy.RemoteURL(c.PolicyURL, policy.URLOptions{
			TokenFile: c.PolicyTokenFile, ClientCert: c.PolicyClientCert, ClientKey: c.PolicyClientKey,
			CACert: c.PolicyCACert, Verify: verify,
		}, cache)
		if err != nil {
			return policy.Source{}, err
		}
		return policy.Source{Remote: r}, nil
	case c.PolicyConfig != "":
		raw, err := os.ReadFile(c.PolicyConfig)
		if err != nil {
			return policy.Source{}, fmt.Errorf("--policy-config: %w", err)
		}
		r, err := policy.ParseRemote(raw, cache)
		if err != nil {
			return policy.Source{}, fmt.Errorf("--policy-config %s: %w", c.PolicyConfig, err)
		}
		return policy.Source{Remote: r}, nil
	}
	src := policySource(c.PolicyDir)
	src.Verify = verify
	return src, nil
}

// bundleFields describe the bundle in force for the audit record.
func bundleFields(b *policy.Bundle) map[string]any {
	return map[string]any{
		"termgate.policy.source": b.Source, "termgate.policy.revision": b.Revision, "termgate.policy.hash": b.Hash,
		"termgate.policy.signed": b.Signed, "termgate.policy.cached": b.Cached,
	}
}
