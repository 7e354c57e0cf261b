package config

import "github.com/autocoder/autocoder/internal/egress"

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
