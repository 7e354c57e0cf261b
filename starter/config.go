package starter

import (
	"fmt"
	"github.com/autocoder/autocoder/sandbox"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	conf "github.com/autocoder/autocoder/internal/config"
)

// Environment variables the CLI names in its messages; internal/config
// reads them.
const (
	envTemporalAddress = "TEMPORAL_ADDRESS"
	envDataDir         = "AUTOCODER_DATA_DIR"
	envIdleTimeout     = "AUTOCODER_IDLE_TIMEOUT"
	envMetricsAddress  = "AUTOCODER_METRICS_ADDRESS"
	envDatabaseURL     = "AUTOCODER_DATABASE_URL"
)

// config is what the commands use of the resolved configuration.
type config struct {
	TemporalAddress string
	Namespace       string
	UIURL           string
	DatabaseURL     string
	DataDir         string
	Sandbox         string
	// Images say how a missing sandbox image is built offline.
	Images sandbox.ImageOptions
	// MetricsAddress is where a worker serves its metrics and health;
	// empty: nowhere.
	MetricsAddress string
	// Ports of the embedded Temporal frontend and Web UI (local mode).
	devPort int
	uiPort  int
	// addressSet is true when the user named a Temporal server; otherwise
	// local commands may start an embedded one.
	addressSet bool
	// settings is the whole resolved configuration, which the worker's
	// activities and the local server's fingerprint come from.
	settings *conf.Config
}

// configFrom derives the commands' view of the settings s.
func configFrom(s *conf.Config) config {
	c := config{
		TemporalAddress: s.String("temporal.address"),
		Namespace:       s.String("temporal.namespace"),
		UIURL:           s.String("temporal.ui_url"),
		DatabaseURL:     s.String("store.url"),
		MetricsAddress:  s.String("worker.metrics_address"),
		DataDir:         s.DataDir(),
		Sandbox:         s.String("sandbox.backend"),
		Images: sandbox.ImageOptions{Base: s.String("sandbox.image_base"), Workdir: s.String("sandbox.image_workdir"),
			Mirror: s.String("sandbox.debian_mirror")},
		devPort:  s.Int("server.port"),
		uiPort:   s.Int("server.ui_port"),
		settings: s,
	}
	c.addressSet = c.TemporalAddress != ""
	if !c.addressSet {
		c.TemporalAddress = "127.0.0.1:" + strconv.Itoa(c.devPort)
	}
	// A cluster's Web UI is wherever its operator put it: only one
	// configured is shown.
	if c.UIURL == "" && !c.addressSet {
		c.UIURL = "http://127.0.0.1:" + strconv.Itoa(c.uiPort)
	}
	return c
}

func (c config) sqlitePath() string { return filepath.Join(c.DataDir, "autocoder.db") }

// inFlightDir keeps the records of the activities the worker runs.
func (c config) inFlightDir() string { return filepath.Join(c.DataDir, "in-flight") }

// workflowURL is the task's page in the Web UI; "" when no Web UI is
// known (a cluster's, with temporal.ui_url unset).
func (c config) workflowURL(id string) string {
	if c.UIURL == "" {
		return ""
	}
	return c.UIURL + "/namespaces/" + c.Namespace + "/workflows/" + id
}

// loadConfig resolves the configuration for cmd once its flags are
// parsed: --config, else the project's file (--dir's, else the current
// directory's), else the user's; then the environment; then the flags
// that set a key. A mistake is a usage error naming file:line.
func (f *Factory) loadConfig(cmd *cobra.Command) error {
	if f.Getenv == nil {
		return nil
	}
	o := conf.Options{File: f.configFile, Getenv: f.Getenv, Flags: map[string]conf.Value{}}
	if fl := cmd.Flags().Lookup("dir"); fl != nil {
		o.ProjectDir = fl.Value.String()
	}
	for _, k := range conf.Keys {
		if fl := cmd.Flags().Lookup(k.Flag); k.Flag != "" && fl != nil && fl.Changed {
			text := fl.Value.String()
			if list, ok := fl.Value.(pflag.SliceValue); ok {
				text = strings.Join(list.GetSlice(), ",") // String() would bracket it
			}
			o.Flags[k.Name] = conf.Value{Text: text}
		}
	}
	s, err := conf.Load(o)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	f.cfg = configFrom(s)
	f.confOptions = &o
	return nil
}
