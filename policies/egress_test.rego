package termgate_test

import data.termgate

# connect builds the document the gateway sends for a new destination.
connect(host, port, program) := {
	"action": "connect", "text": "", "program": "", "program_listed": [], "text_listed": [],
	"session": {"id": "s-1", "name": "", "argv": ["bash"], "cwd": "/work", "profile": "default"},
	"connect": {"host": host, "port": port, "program": program, "via": "connect"},
}

# resolved is connect judged again with the address its name resolved to.
# (An address literal is judged once, with its address: resolved is for
# names only.)
resolved(host, port, address, class) := object.union(connect(host, port, "curl"), {"connect": {"host": host, "port": port, "program": "curl", "via": "connect", "address": address, "address_class": class, "resolved": not_literal(host)}})

not_literal(host) := false if regex.match(`^[0-9.]+$|^0x|:`, host)

else := true

via(doc, how) := object.union(doc, {"connect": object.union(doc.connect, {"via": how})})

# The bundle ships the code hosts; an operator adds the package
# registries the team uses (their own mirror, say) to the same list.
test_connect_code_hosts_and_added_registries_allowed if {
	registries := array.concat(data.termgate.egress.allow, ["packages.example.com", "*.cdn.example.net"])
	allowed(connect("packages.example.com", 443, "python3.11")) with data.termgate.egress.allow as registries
	allowed(connect("files.cdn.example.net", 443, "pip")) with data.termgate.egress.allow as registries
	confirm_by(connect("packages.example.com", 443, "pip"), "net.connect_unlisted")
	allowed(connect("github.com", 443, "git-remote-https"))
	allowed(connect("github.com", 22, "ssh"))
	allowed(connect("objects.githubusercontent.com", 443, "git-remote-https"))
	allowed(connect("api.github.com", 443, "curl"))
	allowed(resolved("github.com", 443, "140.82.121.4", "public"))
}

test_connect_the_rest_asks if {
	confirm_by(connect("example.com", 443, "curl"), "net.connect_unlisted")
	confirm_by(connect("github.com", 8443, "curl"), "net.connect_unlisted")
	confirm_by(connect("gitlab.com", 2222, "ssh"), "net.connect_unlisted")
	confirm_by(connect("evil.github.com.example.net", 443, "curl"), "net.connect_unlisted")
	confirm_by(connect("a.b.githubusercontent.com", 443, "curl"), "net.connect_unlisted")
	confirm_by(connect("8.8.8.8", 443, "curl"), "net.connect_unlisted")
	d := decide(connect("example.com", 443, "curl"))
	contains(d.reason, "example.com:443 is not on the egress allow list")
}

test_connect_metadata_denied_in_every_spelling if {
	denied_by(connect("metadata.google.internal", 80, "curl"), "net.connect_metadata")
	denied_by(connect("instance-data", 80, "curl"), "net.connect_metadata")
	denied_by(resolved("0xa9fea9fe", 80, "169.254.169.254", "link_local"), "net.connect_metadata")
	denied_by(resolved("2852039166", 80, "169.254.169.254", "link_local"), "net.connect_metadata")
	denied_by(resolved("64:ff9b::a9fe:a9fe", 80, "64:ff9b::a9fe:a9fe", "link_local"), "net.connect_metadata")
	denied_by(resolved("fd00:ec2::254", 80, "fd00:ec2::254", "private"), "net.connect_metadata")
	denied_by(resolved("100.100.100.200", 80, "100.100.100.200", "shared"), "net.connect_metadata")
	denied_by(resolved("169.254.170.2", 80, "169.254.170.2", "link_local"), "net.connect_metadata")

	# An allowed name that resolves there is judged by its address.
	denied_by(resolved("github.com", 443, "169.254.169.254", "link_local"), "net.connect_metadata")
	d := decide(resolved("rebind.example", 80, "169.254.169.254", "link_local"))
	d.severity == "critical"
	contains(d.reason, "169.254.169.254 link_local")
}

test_connect_internal_addresses_ask if {
	confirm_by(resolved("localhost", 5432, "127.0.0.1", "loopback"), "net.connect_internal")
	confirm_by(resolved("github.com", 443, "10.0.0.5", "private"), "net.connect_internal")
	confirm_by(resolved("127.1", 6379, "127.0.0.1", "loopback"), "net.connect_internal")
	confirm_by(resolved("cgnat.example", 80, "100.64.1.1", "shared"), "net.connect_internal")
	d := decide(resolved("github.com", 443, "10.0.0.5", "private"))
	contains(d.reason, "reaches 10.0.0.5, a private address")
}

test_connect_internal_hosts_and_direct if {
	# An internal name's address, once the name was allowed: allowed.
	doc := resolved("git.corp.example", 443, "10.1.2.3", "private")
	d := termgate.decision with input as doc with data.termgate.egress.internal_hosts as ["*.corp.example"]
	d.action == "allow"

	# Its name is still judged by the allow list, first.
	confirm_by(connect("git.corp.example", 443, "git"), "net.connect_unlisted")

	# A direct destination of the profile is the operator's own: not
	# asked for being loopback or unlisted, but still not the metadata.
	allowed(via(resolved("localhost", 5432, "127.0.0.1", "loopback"), "direct"))
	allowed(via(connect("db.internal", 5432, "psql"), "direct"))
	denied_by(via(resolved("db.internal", 5432, "169.254.169.254", "link_local"), "direct"), "net.connect_metadata")
}

test_connect_unroutable_denied if {
	denied_by(resolved("0", 80, "0.0.0.0", "unspecified"), "net.connect_unroutable")
	denied_by(resolved("224.0.0.1", 80, "224.0.0.1", "multicast"), "net.connect_unroutable")
	denied_by(resolved("192.0.2.1", 80, "192.0.2.1", "reserved"), "net.connect_unroutable")
}

# A connect is judged by the egress rules alone: the text and program
# rules of typed input never see it (the gateway sends neither).
test_connect_is_not_judged_as_input if {
	d := decide(connect("github.com", 443, "rm"))
	d.action == "allow"
	d.rule == "allow.default"
}

# Input that is not a connect is never judged by the egress rules.
test_egress_rules_only_for_connect if {
	doc := object.union(bash([c("curl", ["https://example.com"])]), {"connect": {"host": "example.com", "port": 443, "program": "curl", "via": "connect"}})
	allowed(doc)
}
