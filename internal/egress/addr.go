package egress

import "net/netip"

// metadataAddrs are the cloud providers' instance metadata and host
// agent endpoints: they hand out credentials, so no configuration opens
// them. Most sit in ranges refused anyway; Azure's WireServer is a public
// address.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "cloud metadata", // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
	netip.MustParseAddr("169.254.170.2"):   "cloud metadata", // AWS ECS task credentials
	netip.MustParseAddr("fd00:ec2::254"):   "cloud metadata", // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"): "cloud metadata", // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"):     "cloud metadata", // Oracle Cloud, legacy
	netip.MustParseAddr("168.63.129.16"):   "cloud metadata", // Azure WireServer
}

// special are the ranges no public registry lives in: an install that
// reaches one reaches the worker's host or its private network.
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},  // IETF protocol assignments
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"}, // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and the broadcast address
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "reserved"}, // IPv4-compatible, deprecated
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private"}, // site-local, deprecated
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("2001::/32"), "reserved"},     // Teredo: an IPv4 address hidden inside
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private"}, // local-use NAT64
}

// IPv6 forms that carry an IPv4 address the packet ends up at.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// classify says what kind of address ip is when it is not a public one
// ("loopback", "private", ...), and whether it is a metadata endpoint;
// "" is a public address. An IPv4 address inside an IPv6 one (mapped,
// NAT64, 6to4) is judged as itself.
func classify(ip netip.Addr) (what string, metadata bool) {
	ip = ip.WithZone("").Unmap()
	if what, ok := metadataAddrs[ip]; ok {
		return what, true
	}
	if v4, ok := embeddedIPv4(ip); ok {
		return classify(v4)
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.what, false
		}
	}
	return "", false
}

// embeddedIPv4 is the IPv4 address a NAT64 or 6to4 address reaches.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
