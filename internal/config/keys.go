package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/bytesize"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/llm"
)

// kind is the TOML type a key takes, which decides how its text is read.
type kind int

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindDuration // a string such as "90s"
	// kindList is an array of strings in the file and a comma-separated
	// list in a variable; its check applies to each item.
	kindList
)

// Key is one setting: its dotted name in the file, the environment
// variable and flag that override it, its default and its check.
type Key struct {
	Name string
	Env  string // "" when only the file (or a flag) sets it
	// AltEnv is a second variable, read when Env is unset.
	AltEnv  string
	Flag    string // the command-line flag that sets it, for `config show`
	Default string
	// Secret values are masked by `config show` and hashed in fingerprints.
	Secret bool
	// Fingerprint keys are the settings a local server runs tasks with.
	Fingerprint bool
	Help        string
	kind        kind
	check       func(string) error
}

// Reserved sections, tables for what comes later; a key inside one is
// not understood yet and is an error like any unknown key.
var reserved = []string{}

// Keys is every setting, in the order `config show` prints them.
var Keys = []Key{
	{Name: "model", Env: llm.EnvModel, Flag: "model", Fingerprint: true, check: checkSpec,
		Help: "provider:model; empty: the first provider with credentials"},
	{Name: "fallback", Env: "AUTOCODER_FALLBACK", Flag: "fallback", kind: kindList, check: checkSpec,
		Help: "provider:model list: the models that answer, in order, when the one before fails with an outage"},
	{Name: "providers.openai.base_url", Env: llm.EnvOpenAIBaseURL, Fingerprint: true, check: checkURL},
	{Name: "providers.openai.api_key", Env: llm.EnvOpenAIKey, Secret: true, Fingerprint: true},
	{Name: "providers.openai.api_key_env", Fingerprint: true, check: checkEnvName},
	{Name: "providers.openai.api_key_cmd", Fingerprint: true},
	{Name: "providers.anthropic.base_url", Env: llm.EnvAnthropicBaseURL, Fingerprint: true, check: checkURL},
	{Name: "providers.anthropic.api_key", Env: llm.EnvAnthropicKey, Secret: true, Fingerprint: true},
	{Name: "providers.anthropic.api_key_env", Fingerprint: true, check: checkEnvName},
	{Name: "providers.anthropic.api_key_cmd", Fingerprint: true},
	{Name: "providers.gemini.base_url", Env: llm.EnvGeminiBaseURL, Fingerprint: true, check: checkURL,
		Help: "the Gemini API up to its version (default https://generativelanguage.googleapis.com/v1beta)"},
	{Name: "providers.gemini.api_key", Env: llm.EnvGeminiKey, AltEnv: llm.EnvGoogleKey, Secret: true, Fingerprint: true},
	{Name: "providers.gemini.api_key_env", Fingerprint: true, check: checkEnvName},
	{Name: "providers.gemini.api_key_cmd", Fingerprint: true},
	{Name: "providers.ollama.host", Env: llm.EnvOllamaHost, Fingerprint: true},
	{Name: "model_call.first_byte_timeout", Env: llm.EnvFirstByteTimeout, Fingerprint: true, kind: kindDuration},
	{Name: "model_call.idle_timeout", Env: llm.EnvIdleTimeout, Fingerprint: true, kind: kindDuration},
	{Name: "model_call.max_answer", Env: llm.EnvMaxAnswer, Fingerprint: true, check: checkBytes},
	{Name: "model_call.breaker_cooldown", Env: "AUTOCODER_BREAKER_COOLDOWN", Default: "2m", Fingerprint: true, kind: kindDuration,
		Help: "how long a model of a fallback chain that failed is passed over"},
	{Name: "sandbox.backend", Env: "AUTOCODER_SANDBOX", Default: "auto", Fingerprint: true, check: oneOf("auto", "docker", "bwrap")},
	{Name: "sandbox.image_base", Env: "AUTOCODER_IMAGE_BASE", Fingerprint: true,
		Help: "the Debian base image a missing sandbox image is built on offline"},
	{Name: "sandbox.image_workdir", Env: "AUTOCODER_IMAGE_WORKDIR", Fingerprint: true,
		Help: "where the offline image build caches its Debian root file system"},
	{Name: "sandbox.forwarder", Env: "AUTOCODER_SANDBOX_FORWARDER", Fingerprint: true,
		Help: "the egress forwarder that egress-network sandbox runs reach the proxy through (default: this executable; or CGO_ENABLED=0 go build ./sandbox/cmd/egress-forward; none: no dependency installs)"},
	{Name: "sandbox.shared_dir", Env: "AUTOCODER_SANDBOX_SHARED_DIR", Fingerprint: true, check: checkAbsPath,
		Help: "a directory the worker and the docker daemon see at the same path (a worker in a container using the host's docker socket): what sandboxes mount from the worker is put there"},
	{Name: "sandbox.debian_mirror", Env: "DEBIAN_MIRROR", Fingerprint: true, check: checkURL,
		Help: "the Debian mirror the offline image build installs from (default: the host's)"},
	{Name: "limits.iterations", Flag: "max-iterations", Default: "6", kind: kindInt, check: atLeast(1)},
	{Name: "limits.turns", Flag: "max-turns", Default: "0", kind: kindInt, check: atLeast(0)},
	{Name: "limits.tokens", Flag: "budget-tokens", Default: "0", kind: kindInt, check: atLeast(0)},
	{Name: "limits.budget_usd", Flag: "budget-usd", Default: "0", kind: kindFloat},
	{Name: "policy.mode", Flag: "policy", Default: "warn", check: oneOf("warn", "deny", "ask", "allow")},
	{Name: "data_dir", Env: "AUTOCODER_DATA_DIR"},
	{Name: "store.url", Env: "AUTOCODER_DATABASE_URL", Secret: true, Fingerprint: true, check: checkURL},
	{Name: "temporal.address", Env: "TEMPORAL_ADDRESS"},
	{Name: "temporal.namespace", Env: "TEMPORAL_NAMESPACE", Default: "default"},
	{Name: "temporal.ui_url", Env: "TEMPORAL_UI_URL", check: checkURL},
	{Name: "server.idle_timeout", Env: "AUTOCODER_IDLE_TIMEOUT", Flag: "idle-timeout", Default: "5m", kind: kindDuration,
		Help: "how long the background local server waits idle before it stops"},
	{Name: "client.contact_timeout", Env: "AUTOCODER_CONTACT_TIMEOUT", Default: "2m", kind: kindDuration,
		Help: "how long a following client keeps trying a server it lost contact with"},
	{Name: "server.port", Env: "AUTOCODER_DEV_PORT", Default: "7233", kind: kindInt, check: port},
	{Name: "server.ui_port", Env: "AUTOCODER_UI_PORT", Default: "8233", kind: kindInt, check: port},
	{Name: "worker.setup_timeout", Env: "AUTOCODER_SETUP_TIMEOUT", Default: "10m", Fingerprint: true, kind: kindDuration, check: checkSetupTimeout,
		Help: "how long a project's setup command (run --setup, or .autocoder/setup.sh) may run, at most 50m"},
	{Name: "worker.min_free_space", Env: "AUTOCODER_MIN_FREE_SPACE", Default: "64MiB", Fingerprint: true, check: checkBytes},
	{Name: "worker.metrics_address", Env: "AUTOCODER_METRICS_ADDRESS", Flag: "metrics", check: checkHostPort,
		Help: "host:port where the worker (and the local server's) serves /metrics, /healthz and /readyz; empty: none"},
	{Name: "egress.allow", Env: "AUTOCODER_EGRESS_ALLOW", Fingerprint: true, kind: kindList, check: egress.ParseRule,
		Help: "hosts dependency installs may reach besides their language's default registries: host, *.domain, IP, each with an optional :port"},
	{Name: "egress.deny", Env: "AUTOCODER_EGRESS_DENY", Fingerprint: true, kind: kindList, check: egress.ParseDenyRule,
		Help: "hosts and address ranges (10.0.0.0/8) installs never reach, whatever allows them"},
	{Name: "egress.connect_timeout", Default: "10s", Fingerprint: true, kind: kindDuration,
		Help: "how long the egress proxy waits for a name's lookup and a connection"},
	{Name: "egress.idle_timeout", Default: "2m", Fingerprint: true, kind: kindDuration,
		Help: "how long an install's connection may go without a byte either way"},
	{Name: "egress.max_connections", Default: "32", Fingerprint: true, kind: kindInt, check: atLeast(1),
		Help: "connections a task's install may have open at once"},
	{Name: "egress.ca_bundle", Env: "AUTOCODER_EGRESS_CA_BUNDLE", Fingerprint: true,
		Help: "a PEM bundle of the CAs installs trust instead of their image's (a TLS-inspecting gateway's, a private registry's)"},
	{Name: "registries.private", Env: "AUTOCODER_PRIVATE_REGISTRIES", Fingerprint: true, kind: kindList, check: egress.ParseRegistry,
		Help: "registries (host:port or URL) installs may reach even at a loopback or private address"},
	{Name: "registries.index", Env: "AUTOCODER_REGISTRY_INDEXES", Fingerprint: true, kind: kindList, check: checkIndex,
		Help: "a language's package index its installs use instead of the default: LANGUAGE=URL (python=https://pypi.example/simple)"},
	{Name: "deps.max_size", Env: "AUTOCODER_DEPS_MAX_SIZE", Default: "10GiB", check: checkBytes,
		Help: "the most disk the installed dependencies kept for later checks take: past it, those used least recently are removed (0: no limit)"},
	{Name: "versions.ttl", Env: "AUTOCODER_VERSIONS_TTL", Default: "24h", kind: kindDuration,
		Help: "how long a registry's answer for a package's newest version is kept in the store (0: ask every time)"},
}

// fromEnv reads k's variable, else its AltEnv; it returns the name of the
// variable that was set and its text, or "" and "".
func (k Key) fromEnv(getenv func(string) string) (string, string) {
	for _, name := range []string{k.Env, k.AltEnv} {
		if name == "" {
			continue
		}
		if text := getenv(name); text != "" {
			return name, text
		}
	}
	return "", ""
}

// lookupKey finds a key by its dotted name.
func lookupKey(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// KeyOfFlag is the name of the key the flag sets; it panics for a flag
// that sets none, a programming error.
func KeyOfFlag(flag string) string {
	for _, k := range Keys {
		if k.Flag == flag {
			return k.Name
		}
	}
	panic("config: no key for flag --" + flag)
}

// validate checks text as a value of k; the error says what is wanted.
func (k Key) validate(text string) error {
	switch k.kind {
	case kindInt:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
	case kindFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return fmt.Errorf("%q is not an amount of 0 or more", text)
		}
	case kindDuration:
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration such as \"90s\" or \"5m\"", text)
		}
	}
	if k.check == nil {
		return nil
	}
	if k.kind == kindList {
		for _, item := range splitList(text) {
			if err := k.check(item); err != nil {
				return err
			}
		}
		return nil
	}
	return k.check(text)
}

// splitList reads a list's text: items separated by commas, blanks
// around them ignored.
func splitList(text string) []string {
	var items []string
	for _, item := range strings.Split(text, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

func checkSpec(s string) error {
	_, err := llm.ParseSpec(s)
	return err
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%q is not a URL such as http://host:port/path", s)
	}
	return nil
}

// checkIndex checks a registries.index entry, LANGUAGE=URL.
func checkIndex(s string) error {
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not LANGUAGE=URL, such as python=https://pypi.example/simple", s)
	}
	return checkURL(u)
}

func checkHostPort(s string) error {
	_, p, err := net.SplitHostPort(s)
	if n, perr := strconv.Atoi(p); err != nil || perr != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q is not an address such as 127.0.0.1:9090 or :9090", s)
	}
	return nil
}

// MaxSetupTimeout is the longest setup_timeout: the setup's activity has
// an hour for the install before it and the run.
const MaxSetupTimeout = 50 * time.Minute

func checkSetupTimeout(s string) error {
	if d, _ := time.ParseDuration(s); d > MaxSetupTimeout {
		return fmt.Errorf("%q is longer than a setup may run (%s); make the setup faster, or split it and run part of it before the task", s, MaxSetupTimeout)
	}
	return nil
}

func checkAbsPath(s string) error {
	if !filepath.IsAbs(s) {
		return fmt.Errorf("%q is not an absolute path", s)
	}
	return nil
}

func checkBytes(s string) error {
	_, err := bytesize.Parse(s)
	return err
}

func checkEnvName(s string) error {
	if s == "" || strings.ContainsAny(s, "= \t") {
		return fmt.Errorf("%q is not the name of an environment variable", s)
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(s string) error {
		for _, v := range values {
			if s == v {
				return nil
			}
		}
		return fmt.Errorf("%q: want %s", s, strings.Join(values, ", "))
	}
}

func atLeast(min int64) func(string) error {
	return func(s string) error {
		if n, _ := strconv.ParseInt(s, 10, 64); n < min {
			return fmt.Errorf("%s: want %d or more", s, min)
		}
		return nil
	}
}

func port(s string) error {
	if n, _ := strconv.Atoi(s); n < 0 || n > 65535 {
		return fmt.Errorf("%s is not a port (0 to 65535)", s)
	}
	return nil
}
