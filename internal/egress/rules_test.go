package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestClassify: every range the proxy keeps sandboxes from, IPv4 inside
// IPv6 judged as itself, and public addresses left alone.
func TestClassify(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.0.0.1": "private", "172.16.5.4": "private", "172.31.255.255": "private", "192.168.0.1": "private",
		"fd12:3456::1": "private", "fc00::1": "private", "::ffff:192.168.1.1": "private",
		"169.254.1.1": "link-local", "fe80::1": "link-local",
		"100.64.0.1": "carrier-grade NAT", "100.127.255.254": "carrier-grade NAT",
		"224.0.0.1": "multicast", "ff02::1": "multicast",
		"0.0.0.0": "unspecified", "::": "unspecified", "0.1.2.3": "unspecified",
		"255.255.255.255": "reserved", "240.0.0.1": "reserved", "::7f00:1": "reserved",
		"64:ff9b::a00:1": "private", "64:ff9b::7f00:1": "loopback", "2002:c0a8:101::1": "private",
		"2001:0:4136:e378::1": "reserved",
		"169.254.169.254":     "cloud metadata", "fd00:ec2::254": "cloud metadata", "100.100.100.200": "cloud metadata",
		"168.63.129.16": "cloud metadata", "::ffff:169.254.169.254": "cloud metadata", "64:ff9b::a9fe:a9fe": "cloud metadata",
		"93.184.215.14": "", "2606:2800:21f:cb07:6820:80da:af6b:8b2c": "", "172.32.0.1": "", "100.128.0.1": "",
		"64:ff9b::5db8:d70e": "",
	} {
		got, metadata := classify(netip.MustParseAddr(addr))
		if got != want || metadata != (want == "cloud metadata") {
			t.Errorf("classify(%s) = %q, %v; want %q", addr, got, metadata, want)
		}
	}
}

// TestParseTarget: request targets as clients write them, and the ones
// refused.
func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		method, uri string
		host        string
		port        int
		err         string
	}{
		{"CONNECT", "Example.ORG.:443", "example.org", 443, ""},
		{"CONNECT", "[::1]:8443", "::1", 8443, ""},
		{"CONNECT", "[::ffff:10.0.0.1]:443", "10.0.0.1", 443, ""},
		{"CONNECT", "10.0.0.1:443", "10.0.0.1", 443, ""},
		{"CONNECT", "example.org", "", 0, "not host:port"},
		{"CONNECT", "example.org:", "", 0, "port"},
		{"CONNECT", "example.org:0", "", 0, "port"},
		{"CONNECT", "example.org:65536", "", 0, "port"},
		{"CONNECT", "example.org:+443", "", 0, "port"},
		{"CONNECT", "example.org:0443", "", 0, "port"},
		{"CONNECT", "[fe80::1%eth0]:443", "", 0, "zone"},
		{"CONNECT", "2130706433:443", "", 0, "numeric address"},
		{"CONNECT", "0x7f.1:443", "", 0, "numeric address"},
		{"CONNECT", "127.1:443", "", 0, "numeric address"},
		{"CONNECT", "ex ample.org:443", "", 0, "not a host name"},
		{"CONNECT", "exämple.org:443", "", 0, "xn--"},
		{"CONNECT", "a..b:443", "", 0, "not a host name"},
		{"CONNECT", "-a.org:443", "", 0, "not a host name"},
		{"CONNECT", "/path", "", 0, "not host:port"},
		{"GET", "http://Example.org/simple/", "example.org", 80, ""},
		{"GET", "http://example.org:8080/x?y", "example.org", 8080, ""},
		{"GET", "http://[::1]/", "::1", 80, ""},
		{"POST", "http://10.0.0.1:3141/", "10.0.0.1", 3141, ""},
		{"GET", "https://example.org/", "", 0, "https goes through CONNECT"},
		{"GET", "/simple/", "", 0, "absolute http:// URL"},
		{"GET", "http://user:pw@example.org/", "", 0, "credentials"},
		{"GET", "http:///x", "", 0, "absolute http:// URL"},
		{"GET", "ftp://example.org/", "", 0, "absolute http:// URL"},
		{"GET", "http://example.org:99999/", "", 0, "port"},
	} {
		got, err := parseTarget(tc.method, tc.uri)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: %+v, %v; want an error naming %q", tc.method, tc.uri, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.host != tc.host || got.port != tc.port {
			t.Errorf("%s %s: %+v, %v; want %s port %d", tc.method, tc.uri, got, err, tc.host, tc.port)
		}
	}
}

// TestRules: allow rules with and without ports and wildcards, deny rules
// over every port, ranges in deny rules only.
func TestRules(t *testing.T) {
	tgt := func(s string) target {
		tt, err := parseTarget("CONNECT", s)
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	for _, tc := range []struct {
		rule    string
		deny    bool
		matches []string
		misses  []string
	}{
		{"example.org", false, []string{"example.org:443", "EXAMPLE.org:80"}, []string{"example.org:8443", "a.example.org:443", "example.org.evil.test:443"}},
		{"*.example.org", false, []string{"a.example.org:443", "a.b.example.org:80"}, []string{"example.org:443", "aexample.org:443", "a.example.org:22"}},
		{"example.org:8443", false, []string{"example.org:8443"}, []string{"example.org:443"}},
		{"10.1.2.3", false, []string{"10.1.2.3:443"}, []string{"10.1.2.4:443", "10.1.2.3:22"}},
		{"[2001:db8::1]:8443", false, []string{"[2001:db8::1]:8443"}, []string{"[2001:db8::1]:443"}},
		{"2001:db8::1", false, []string{"[2001:db8::1]:443"}, nil},
		{"example.org", true, []string{"example.org:443", "example.org:22"}, []string{"a.example.org:443"}},
		{"*.example.org:80", true, []string{"a.example.org:80"}, []string{"a.example.org:443"}},
		{"10.0.0.0/8", true, []string{"10.9.9.9:443"}, []string{"11.0.0.1:443", "example.org:443"}},
	} {
		r, err := parseRule(tc.rule, tc.deny)
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		check := r.allows
		if tc.deny {
			check = r.denies
		}
		for _, s := range tc.matches {
			if !check(tgt(s)) {
				t.Errorf("rule %q (deny %v) misses %s", tc.rule, tc.deny, s)
			}
		}
		for _, s := range tc.misses {
			if check(tgt(s)) {
				t.Errorf("rule %q (deny %v) matches %s", tc.rule, tc.deny, s)
			}
		}
	}
	for _, bad := range []string{"", "*", "*.", "*.10.0.0.1", "10.0.0.0/8", "exa mple.org", "example.org:0", "example.org:http", "fe80::1%eth0", "2130706433"} {
		if _, err := parseRule(bad, false); err == nil {
			t.Errorf("allow rule %q accepted", bad)
		}
	}
	if _, err := parseRule("10.0.0.0/33", true); err == nil {
		t.Error("a bad range accepted")
	}
}

// TestParseRegistry: host:port and URLs, with their scheme's port.
func TestParseRegistry(t *testing.T) {
	for in, want := range map[string]string{
		"Registry.example.test:4873":          "registry.example.test:4873",
		"http://127.0.0.1:3141/simple":        "127.0.0.1:3141",
		"https://registry.example.test/npm/":  "registry.example.test:443",
		"http://registry.example.test/simple": "registry.example.test:80",
		"[::1]:8080":                          "[::1]:8080",
	} {
		if got, err := parseRegistry(in); err != nil || got != want {
			t.Errorf("parseRegistry(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"registry.example.test", "ftp://registry.example.test/", "http://", "x:0"} {
		if _, err := parseRegistry(bad); err == nil {
			t.Errorf("registry %q accepted", bad)
		}
	}
}

// FuzzParseTarget: no request target crashes the parser, and what it
// accepts is a normalized host and a port that read back the same.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"example.org:443", "[::1]:443", "[::ffff:127.0.0.1]:80", "http://example.org/x", "http://[fe80::1%25eth0]/",
		"http://a:b@c/", "EXAMPLE.ORG.:443", "0x7f.1:80", "::1", "http://example.org:/", "[::1]", "a..b:1"} {
		f.Add("CONNECT", s)
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, uri string) {
		tt, err := parseTarget(method, uri)
		if err != nil {
			return
		}
		if tt.host == "" || tt.port < 1 || tt.port > 65535 || tt.host != strings.ToLower(tt.host) || strings.HasSuffix(tt.host, ".") {
			t.Fatalf("%s %q parsed to %+v", method, uri, tt)
		}
		if tt.ip.IsValid() && (tt.ip.Is4In6() || tt.ip.Zone() != "" || tt.ip.String() != tt.host) {
			t.Fatalf("%s %q: address %v for host %q", method, uri, tt.ip, tt.host)
		}
		again, err := parseTarget("CONNECT", tt.authority())
		if err != nil || again != tt {
			t.Fatalf("%s %q: %+v reads back as %+v, %v", method, uri, tt, again, err)
		}
		if !tt.ip.IsValid() {
			if _, err := netip.ParseAddr(tt.host); err == nil {
				t.Fatalf("%s %q: name %q is an address", method, uri, tt.host)
			}
		}
	})
}

// FuzzParseRule: no rule text crashes the parser, and an accepted rule
// matches the target it names itself.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.org", "*.example.org:8443", "10.0.0.0/8", "[::1]:80", "::1", "*.", "a:b:c", "[::1]"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, deny bool) {
		r, err := parseRule(s, deny)
		if err != nil || r.prefix.IsValid() || r.wildcard {
			return
		}
		port := r.port
		if port == 0 {
			port = 443
		}
		tt, err := parseTarget("CONNECT", r.authorityFor(port))
		if err != nil {
			t.Fatalf("rule %q: its own target does not parse: %v", s, err)
		}
		if deny && !r.denies(tt) || !deny && !r.allows(tt) {
			t.Fatalf("rule %q does not match its own target %+v", s, tt)
		}
	})
}

func (r rule) authorityFor(port int) string {
	return target{host: r.host, ip: r.ip, port: port}.authority()
}
