package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPorts are the ports an allow rule without one opens: HTTPS and
// HTTP.
var DefaultPorts = []int{443, 80}

// target is where a request asks to go: a normalized host name or a
// literal address, and a port.
type target struct {
	host string     // lower case, no trailing dot; an IP address as text
	ip   netip.Addr // valid when the request named an address
	port int
}

// authority is host:port as a URL or a dial takes it.
func (t target) authority() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// parseTarget reads a request's target from its method and raw request
// URI: CONNECT takes host:port, any other method an absolute http URL
// (a proxy request). What it returns is all the rules and the dial see.
func parseTarget(method, requestURI string) (target, error) {
	if method == "CONNECT" {
		host, port, err := splitPort(requestURI, 0)
		if err != nil {
			return target{}, err
		}
		return newTarget(host, port)
	}
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return target{}, fmt.Errorf("request target %.100q is not a URL", requestURI)
	}
	if u.Scheme != "http" || u.Host == "" {
		return target{}, fmt.Errorf("request target %.100q: a proxy request needs an absolute http:// URL (https goes through CONNECT)", requestURI)
	}
	if u.User != nil {
		return target{}, errors.New("request target carries a user name: credentials stay out of URLs")
	}
	host, port, err := splitPort(u.Host, 80)
	if err != nil {
		return target{}, err
	}
	return newTarget(host, port)
}

// splitPort splits host[:port]; defPort 0 means the port is required.
// An IPv6 address with a port is written in brackets.
func splitPort(s string, defPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(s)
	if err != nil {
		if defPort == 0 || strings.HasSuffix(s, ":") {
			return "", 0, fmt.Errorf("%.100q is not host:port", s)
		}
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			return "", 0, fmt.Errorf("%.100q: write an IPv6 address in brackets", s)
		}
		return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), defPort, nil
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || portText[0] == '+' || portText[0] == '0' {
		return "", 0, fmt.Errorf("%.100q: the port is not a number from 1 to 65535", s)
	}
	return host, port, nil
}

// newTarget normalizes a host: an IP address (IPv4-mapped IPv6 becomes
// IPv4), or a name in lower case without its trailing dot.
func newTarget(host string, port int) (target, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return target{}, fmt.Errorf("%.100q: an address with a zone is not reachable through the proxy", host)
		}
		ip = ip.Unmap()
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	name, err := normalizeName(host)
	if err != nil {
		return target{}, err
	}
	return target{host: name, port: port}, nil
}

// normalizeName checks a DNS name and puts it in lower case without its
// trailing dot. A name whose last label is a number is refused: resolvers
// read "2130706433" and "0x7f.1" as addresses.
func normalizeName(host string) (string, error) {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("%.100q is not a host name", host)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", fmt.Errorf("%.100q is not a host name", host)
		}
		for _, c := range l {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return "", fmt.Errorf("%.100q is not a host name (write a non-ASCII name in its xn-- form)", host)
			}
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return "", fmt.Errorf("%.100q reads as a numeric address, not a host name", host)
	}
	return name, nil
}

// rule is one allow or deny entry: a host name, a wildcard for the names
// under a domain, an IP address or (deny only) an address range; a port,
// or none.
type rule struct {
	text     string
	host     string // the name, or the domain under "*."
	wildcard bool
	ip       netip.Addr
	prefix   netip.Prefix
	port     int // 0: DefaultPorts for an allow rule, every port for a deny rule
}

// ParseRule checks one allow rule: "host", "*.domain" (the names under
// domain, not domain itself) or an IP address, each with an optional
// ":port" (without one: DefaultPorts).
func ParseRule(s string) error {
	_, err := parseRule(s, false)
	return err
}

// ParseDenyRule checks one deny rule: what an allow rule takes, or an
// address range such as "10.0.0.0/8". Without a port it denies every port.
func ParseDenyRule(s string) error {
	_, err := parseRule(s, true)
	return err
}

func parseRule(s string, deny bool) (rule, error) {
	r := rule{text: s}
	if deny && strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return rule{}, fmt.Errorf("%q is not an address range such as 10.0.0.0/8", s)
		}
		r.prefix = p.Masked()
		return r, nil
	}
	host, port := s, 0
	if strings.HasSuffix(s, "]") || strings.Count(s, ":") == 1 || strings.Contains(s, "]:") {
		h, p, err := splitPort(s, -1)
		if err != nil {
			return rule{}, err
		}
		host = h
		if p != -1 {
			port = p
		}
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.wildcard, host = true, rest
		if _, err := netip.ParseAddr(host); err == nil {
			return rule{}, fmt.Errorf("%q: a wildcard takes a domain, not an address", s)
		}
	}
	t, err := newTarget(host, port)
	if err != nil {
		return rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	r.host, r.ip, r.port = t.host, t.ip, port
	return r, nil
}

// matchesHost says whether the rule names the target's host (or, for a
// range, its literal address), leaving the port aside.
func (r rule) matchesHost(t target) bool {
	switch {
	case r.prefix.IsValid():
		return t.ip.IsValid() && r.prefix.Contains(t.ip)
	case r.wildcard:
		return !t.ip.IsValid() && strings.HasSuffix(t.host, "."+r.host)
	}
	return t.host == r.host
}

// allows says whether an allow rule lets the target through.
func (r rule) allows(t target) bool {
	if !r.matchesHost(t) {
		return false
	}
	if r.port != 0 {
		return t.port == r.port
	}
	for _, p := range DefaultPorts {
		if t.port == p {
			return true
		}
	}
	return false
}

// denies says whether a deny rule refuses the target.
func (r rule) denies(t target) bool {
	return r.matchesHost(t) && (r.port == 0 || r.port == t.port)
}

// deniesAddr says whether a deny rule's range holds an address the
// target resolved to.
func (r rule) deniesAddr(ip netip.Addr, port int) bool {
	return r.prefix.IsValid() && r.prefix.Contains(ip) && (r.port == 0 || r.port == port)
}

// parseRegistry reads a named registry, host:port or a URL whose port is
// its scheme's if not written, into the authority the rules compare.
func parseRegistry(s string) (string, error) {
	hostport := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("%q is not a URL such as https://host:port/path", s)
		}
		hostport = u.Host
		if u.Port() == "" {
			switch u.Scheme {
			case "https":
				hostport = net.JoinHostPort(u.Hostname(), "443")
			case "http":
				hostport = net.JoinHostPort(u.Hostname(), "80")
			default:
				return "", fmt.Errorf("%q: write the port, or an http or https URL", s)
			}
		}
	}
	host, port, err := splitPort(hostport, 0)
	if err != nil {
		return "", fmt.Errorf("registry %q: want host:port or a URL: %w", s, err)
	}
	t, err := newTarget(host, port)
	if err != nil {
		return "", fmt.Errorf("registry %q: %w", s, err)
	}
	return t.authority(), nil
}

// ParseRegistry checks a named registry: host:port or an http(s) URL.
func ParseRegistry(s string) error {
	_, err := parseRegistry(s)
	return err
}
