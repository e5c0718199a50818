package termgate

# ---- egress: a session's new outbound destination (action "connect") ----
#
# A session whose profile says network "proxy" reaches the network only
# through the gateway's egress proxy, which asks here about each new
# destination: input.connect = {host, port, program, via, address,
# address_class}, and input.session (its profile). host is what the
# program asked for (a lower-case name, or an address literal as spelled);
# address and address_class are set for an address literal, and when a
# name resolved to an address that is not public (the proxy asks again
# with it, and resolved true: the name itself was judged and allowed
# first, so only what the address is is judged then). via is connect,
# http, socks5, or direct (one of the profile's direct destinations, which
# the program reaches without a proxy).
#
# Lists in data.termgate.egress: allow (host globs, "*" one label; a bare
# entry covers web_ports, "host:port" that port only), internal_hosts (names
# that may resolve to the machine's own or private networks), and the
# metadata endpoints' names and addresses. Whatever no list allows is
# asked of the human.

egress_cfg := data.termgate.egress

connect_target := sprintf("%s:%d", [input.connect.host, input.connect.port])

finding contains {
	"rule": "net.connect_metadata",
	"action": "deny",
	"severity": "critical",
	"reason": sprintf("%s is a cloud metadata endpoint (%s)", [connect_target, connect_seen]),
} if {
	input.action == "connect"
	connect_metadata
}

# What the destination was found to be, for the reasons.
connect_seen := concat(" ", [input.connect.address, input.connect.address_class]) if input.connect.address

else := "by name"

connect_metadata if input.connect.host in egress_cfg.metadata_hosts

connect_metadata if input.connect.address in egress_cfg.metadata_addresses

connect_metadata if input.connect.address_class == "link_local"

finding contains {
	"rule": "net.connect_unroutable",
	"action": "deny",
	"severity": "high",
	"reason": sprintf("%s is %s (%s): not a destination", [connect_target, input.connect.address_class, input.connect.address]),
} if {
	input.action == "connect"
	input.connect.address_class in {"unspecified", "multicast", "reserved"}
}

finding contains {
	"rule": "net.connect_internal",
	"action": "confirm",
	"severity": "high",
	"reason": sprintf("%s reaches %s, a %s address: this machine or its private networks", [connect_target, input.connect.address, input.connect.address_class]),
} if {
	input.action == "connect"
	input.connect.address_class in {"loopback", "private", "shared"}
	not connect_internal_allowed
}

connect_internal_allowed if input.connect.via == "direct"

connect_internal_allowed if {
	some g in egress_cfg.internal_hosts
	glob.match(g, ["."], input.connect.host)
}

finding contains {
	"rule": "net.connect_unlisted",
	"action": "confirm",
	"severity": "medium",
	"reason": sprintf("%s is not on the egress allow list (data.termgate.egress.allow)", [connect_target]),
} if {
	input.action == "connect"
	input.connect.via != "direct"
	not input.connect.resolved
	not connect_listed
}

connect_listed if {
	some e in egress_cfg.allow
	not contains(e, ":")
	input.connect.port in egress_cfg.web_ports
	glob.match(e, ["."], input.connect.host)
}

connect_listed if {
	some e in egress_cfg.allow
	[h, p] := split(e, ":")
	p == format_int(input.connect.port, 10)
	glob.match(h, ["."], input.connect.host)
}
