package config

import (
	"strings"

	"github.com/autocoder/autocoder/internal/egress"
)

// Egress is the egress proxy's configuration: the user's allow and deny
// rules, named registries and limits. Each language's default registries
// are added per task, by the grant of its install run.
func (c *Config) Egress() egress.Config {
	return egress.Config{
		Allow:           c.List("egress.allow"),
		Deny:            c.List("egress.deny"),
		Registries:      c.List("registries.private"),
		ConnectTimeout:  c.Duration("egress.connect_timeout"),
		IdleTimeout:     c.Duration("egress.idle_timeout"),
		MaxConnsPerTask: c.Int("egress.max_connections"),
	}
}

// RegistryIndexes are the package indexes the user named per language
// (registries.index), by language name: installs use them instead of the
// ecosystem's default.
func (c *Config) RegistryIndexes() map[string]string {
	m := map[string]string{}
	for _, e := range c.List("registries.index") {
		if name, u, ok := strings.Cut(e, "="); ok {
			m[strings.ToLower(name)] = u
		}
	}
	return m
}
