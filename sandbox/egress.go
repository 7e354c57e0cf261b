package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/autocoder/autocoder/sandbox/forward"
)

// Network is what a run may reach.
type Network string

const (
	// NetworkNone, the default, is nothing at all: the sandbox's network
	// namespace holds its own loopback alone.
	NetworkNone Network = ""
	// NetworkEgress is the egress proxy and nothing else. The namespace
	// stays as empty as with NetworkNone; the proxy's unix socket is
	// mounted into it, and the forwarder (Config.Forwarder) listens on the
	// sandbox's own loopback at EgressListen and carries each connection
	// to that socket. The run's HTTP_PROXY and HTTPS_PROXY name that
	// address. No route, gateway or host service is there to reach: a
	// docker --internal network would still reach every service of the
	// host on its gateway.
	NetworkEgress Network = "egress"
)

// EgressListen is where a NetworkEgress run finds the proxy: an address
// of its own loopback.
const EgressListen = "127.0.0.1:3128"

// Paths inside the sandbox of the egress route's mounts.
const (
	egressSocket    = "/run/autocoder/egress.sock"
	egressForwarder = "/run/autocoder/" + forward.Name
	egressCABundle  = "/run/autocoder/ca-bundle.pem"
)

// caBundleVars are the variables through which the ecosystems' clients
// take a CA bundle in place of the system's: Go, OpenSSL and Python's
// ssl (SSL_CERT_FILE), pip, requests, curl, git, cargo, and Node (which
// adds it to its own).
var caBundleVars = []string{"SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO", "NODE_EXTRA_CA_CERTS"}

// ProxyEnv gives the environment that sends a run's traffic to the proxy
// at addr, credentials included; *egress.Grant is one.
type ProxyEnv interface {
	Env(addr string) map[string]string
}

// Egress is the route of a NetworkEgress run.
type Egress struct {
	// Socket is the host path of a unix socket the egress proxy serves
	// for this run. The socket alone is mounted into the sandbox; the
	// sandbox's users must be able to connect to it (mode 0666, its
	// directories searchable).
	Socket string
	// Proxy gives the run's proxy variables (with the grant's token).
	Proxy ProxyEnv
	// CABundle, when set, is the host path of a PEM bundle of the CAs the
	// run trusts instead of its image's: a site whose TLS goes through an
	// inspecting gateway, or whose private registry has its own CA. It is
	// mounted read-only and named in caBundleVars.
	CABundle string
}

// route is a validated egress route, ready for a backend.
type route struct {
	socket    string     // host path of the proxy's socket
	forwarder *forwarder // how the run starts the forwarder
	caBundle  string     // host path of the CA bundle, or ""
	env       []string   // the proxy (and CA bundle) variables, KEY=VALUE
}

// egressRoute checks a spec's network against the runner's forwarder;
// nil for a run without network.
func egressRoute(spec Spec, fw *forwarder) (*route, error) {
	switch spec.Network {
	case NetworkNone:
		return nil, nil
	case NetworkEgress:
	default:
		return nil, fmt.Errorf("%w: network %q (want %q or %q)", ErrInvalidSpec, spec.Network, NetworkNone, NetworkEgress)
	}
	if fw == nil {
		return nil, fmt.Errorf("%w: an egress run needs the forwarder (sandbox Config.Forwarder: an autocoder executable, or sandbox/cmd/egress-forward)", ErrInvalidSpec)
	}
	if spec.Egress.Proxy == nil {
		return nil, fmt.Errorf("%w: an egress run needs the proxy's grant", ErrInvalidSpec)
	}
	if !filepath.IsAbs(spec.Egress.Socket) {
		return nil, fmt.Errorf("%w: egress socket %q is not an absolute path", ErrInvalidSpec, spec.Egress.Socket)
	}
	fi, err := os.Stat(spec.Egress.Socket)
	if err != nil {
		return nil, fmt.Errorf("%w: egress socket: %w", ErrInvalidSpec, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%w: egress socket %s is not a socket", ErrInvalidSpec, spec.Egress.Socket)
	}
	vars := spec.Egress.Proxy.Env(EgressListen)
	if ca := spec.Egress.CABundle; ca != "" {
		if fi, err := os.Stat(ca); err != nil || !fi.Mode().IsRegular() || !filepath.IsAbs(ca) {
			return nil, fmt.Errorf("%w: egress CA bundle %q is not an absolute path to a PEM file", ErrInvalidSpec, ca)
		}
		for _, k := range caBundleVars {
			vars[k] = egressCABundle
		}
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return &route{socket: spec.Egress.Socket, forwarder: fw, caBundle: spec.Egress.CABundle, env: env}, nil
}

// mounts are the route's host paths and where the sandbox sees them.
func (r *route) mounts() [][2]string {
	m := append([][2]string{{r.socket, egressSocket}}, r.forwarder.mounts()...)
	if r.caBundle != "" {
		m = append(m, [2]string{r.caBundle, egressCABundle})
	}
	return m
}

// wrap runs argv under the forwarder.
func (r *route) wrap(argv []string) []string {
	return slices.Concat(r.forwarder.command(), []string{EgressListen, egressSocket, "--"}, argv)
}
