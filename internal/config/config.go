// Package config is the one place autocoder's settings are resolved:
// a TOML file, then the environment, then flags, each overriding the one
// before. Everything else is handed the resolved Config; nothing else
// reads the environment (see TestOnlyConfigReadsTheEnvironment).
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/internal/bytesize"
)

// File names searched, in order, after --config.
const (
	ProjectFile = ".autocoder.toml"
	userFile    = "autocoder/config.toml" // under the user config dir
)

// SourceKind says where a value came from.
type SourceKind int

const (
	FromDefault SourceKind = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where a value came from: the flag or variable named Name, or
// the file Path at Line.
type Source struct {
	Kind SourceKind
	Name string
	Path string
	Line int
}

func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		return fmt.Sprintf("file %s:%d", s.Path, s.Line)
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag --" + s.Name
	}
	if s.Name != "" {
		return "default (" + s.Name + ")"
	}
	return "default"
}

// Value is a setting's text and where it came from.
type Value struct {
	Text   string
	Source Source
}

// Options say where Load looks.
type Options struct {
	// File is --config; empty searches ProjectDir, then the user's config dir.
	File string
	// ProjectDir is --dir, else the current directory.
	ProjectDir string
	// Getenv reads the environment (os.Getenv in the program).
	Getenv func(string) string
	// Flags are the values of the flags the user set, by key name.
	Flags map[string]Value
}

// Config is the resolved configuration.
type Config struct {
	// File is the configuration file read, "" when none was found.
	File          string
	values        map[string]Value
	notifications []Notification // the file's [[notifications]]
	mcpServers    []MCPServer    // the file's [[mcp_servers]]
	prices        []ModelPrice   // the file's [prices."provider:model"]
	getenv        func(string) string
}

// ErrNotFound is a --config file that does not exist.
var ErrNotFound = errors.New("configuration file not found")

// Environ is the process environment, the one Load is given in the
// program: this package is its only reader.
func Environ(name string) string { return os.Getenv(name) }

// Defaults is the configuration with nothing set, for tests that build
// their settings by hand.
func Defaults() *Config {
	c := defaults(func(string) string { return "" })
	c.resolveDataDir()
	return c
}

func defaults(getenv func(string) string) *Config {
	c := &Config{values: map[string]Value{}, getenv: getenv}
	for _, k := range Keys {
		if k.Default != "" {
			c.values[k.Name] = Value{Text: k.Default}
		}
	}
	return c
}

// Load resolves the configuration: defaults < file < environment < flags.
func Load(o Options) (*Config, error) {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	c := defaults(o.Getenv)
	path, err := findFile(o)
	if err != nil {
		return nil, err
	}
	if path != "" {
		fr, err := readFile(path)
		if err != nil {
			return nil, err
		}
		c.File = path
		for name, v := range fr.values {
			c.values[name] = v
		}
		c.notifications = fr.notifications
		c.mcpServers = fr.mcpServers
		c.prices = fr.prices
	}
	for _, k := range Keys {
		name, text := k.fromEnv(o.Getenv)
		if text == "" {
			continue
		}
		if err := k.validate(text); err != nil {
			return nil, fmt.Errorf("%s (%s): %v; fix or unset it", name, k.Name, err)
		}
		c.values[k.Name] = Value{Text: text, Source: Source{Kind: FromEnv, Name: name}}
	}
	for name, v := range o.Flags {
		k, ok := lookupKey(name)
		if !ok {
			return nil, fmt.Errorf("flag for unknown key %q", name)
		}
		if err := k.validate(v.Text); err != nil {
			return nil, fmt.Errorf("--%s: %v", k.Flag, err)
		}
		v.Source = Source{Kind: FromFlag, Name: k.Flag}
		c.values[name] = v
	}
	c.resolveDataDir()
	return c, nil
}

// findFile picks the file: --config, else the project's, else the user's.
// Only --config must exist.
func findFile(o Options) (string, error) {
	if o.File != "" {
		if _, err := os.Stat(o.File); err != nil {
			return "", fmt.Errorf("--config %s: %w", o.File, ErrNotFound)
		}
		return filepath.Abs(o.File)
	}
	dir := o.ProjectDir
	if dir == "" {
		dir = "."
	}
	candidates := []string{filepath.Join(dir, ProjectFile)}
	if d := userConfigDir(o.Getenv); d != "" {
		candidates = append(candidates, filepath.Join(d, userFile))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Abs(p)
		}
	}
	return "", nil
}

// userConfigDir is $XDG_CONFIG_HOME, else ~/.config. A relative
// XDG_CONFIG_HOME is ignored, as the XDG Base Directory spec says.
func userConfigDir(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
}

func xdgDir(getenv func(string) string, variable, underHome string) string {
	if d := getenv(variable); filepath.IsAbs(d) {
		return d
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, underHome)
	}
	return ""
}

// resolveDataDir settles the data dir: data_dir when set (made absolute),
// else $XDG_DATA_HOME/autocoder (ignored when relative), else
// ~/.local/share/autocoder, else one under the temporary directory.
func (c *Config) resolveDataDir() {
	if v, ok := c.values["data_dir"]; ok && v.Text != "" {
		if abs, err := filepath.Abs(v.Text); err == nil {
			v.Text = abs
		}
		c.values["data_dir"] = v
		return
	}
	base := xdgDir(c.getenv, "XDG_DATA_HOME", filepath.Join(".local", "share"))
	src := Source{Kind: FromEnv, Name: "XDG_DATA_HOME"}
	switch {
	case base == "":
		base, src = os.TempDir(), Source{Name: "no home directory"}
	case !filepath.IsAbs(c.getenv(src.Name)):
		src = Source{Name: "~/.local/share"}
	}
	c.values["data_dir"] = Value{Text: filepath.Join(base, "autocoder"), Source: src}
}

// Get is a setting's value and source; an unset one is empty, from the default.
func (c *Config) Get(name string) Value {
	if _, ok := lookupKey(name); !ok {
		panic("config: unknown key " + name) // a programming error
	}
	return c.values[name]
}

// String is a setting's text.
func (c *Config) String(name string) string { return c.Get(name).Text }

// Int is a whole-number setting (validated by Load).
func (c *Config) Int(name string) int {
	n, _ := strconv.Atoi(c.String(name))
	return n
}

// Float is a number setting (validated by Load).
func (c *Config) Float(name string) float64 {
	f, _ := strconv.ParseFloat(c.String(name), 64)
	return f
}

// Duration is a duration setting (validated by Load); unset is zero.
func (c *Config) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(c.String(name))
	return d
}

// Bytes is a size setting such as "64MiB" (validated by Load).
func (c *Config) Bytes(name string) int64 {
	n, _ := bytesize.Parse(c.String(name))
	return n
}

// List is a list setting's items (validated by Load); unset is none.
func (c *Config) List(name string) []string { return splitList(c.String(name)) }

// DataDir is the absolute data dir.
func (c *Config) DataDir() string { return c.String("data_dir") }
