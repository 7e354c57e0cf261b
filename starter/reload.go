package starter

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/autocoder/autocoder/activities"
	conf "github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/worker"
)

// configPoll is how often a worker reads its configuration again.
const configPoll = 2 * time.Second

// liveSetting reports a setting (a key of the configuration's
// fingerprint) that a running worker applies when it changes: the
// models' and their prices (activities.LiveSettings), and the MCP
// servers (mcptools.Pool.Reconfigure). The others need a restart.
func liveSetting(name string) bool {
	return modelSetting(name) || name == "mcp_servers"
}

// modelSetting reports a setting of the models or their prices.
func modelSetting(name string) bool {
	return name == "model" || strings.HasPrefix(name, "providers.") || strings.HasPrefix(name, "model_call.") ||
		strings.HasPrefix(name, "prices.")
}

// reconfigurer takes the MCP servers of an edited configuration
// (mcptools.Pool).
type reconfigurer interface {
	Reconfigure(servers []mcptools.Server)
}

// workerSettings are the settings a worker runs with besides its
// fingerprint's, whose change it logs too.
var workerSettings = []string{"temporal.address", "temporal.namespace", "data_dir", "worker.metrics_address",
	"deps.max_size", "versions.ttl"}

// settingsOf is what change watchConfig compares: the fingerprint, and
// workerSettings.
func settingsOf(s *conf.Config) map[string]string {
	m := s.Fingerprint()
	for _, k := range workerSettings {
		if v := s.String(k); v != "" {
			m[k] = v
		}
	}
	return m
}

// watchConfig resolves the configuration again every configPoll until ctx
// ends, as the command did at start (the same file, environment and
// flags), so that an edit of the file needs no restart: a change to the
// models or prices is applied to acts (activities.Live), one to the MCP
// servers to its pool; any other is logged with what to restart. A change is taken once two readings in a
// row agree, so a file caught half-written is not. The file found at
// start stays the one read: one that no longer reads (deleted, moved, a
// mistake) changes nothing, and is logged once. applied, when set, is
// told the settings the worker runs with after each change.
func (f *Factory) watchConfig(ctx context.Context, acts *activities.Activities, applied func(map[string]string)) {
	if f.confOptions == nil {
		return
	}
	opts := *f.confOptions
	if opts.File == "" {
		opts.File = f.cfg.settings.File
	}
	running := f.cfg.settings.Fingerprint() // what the worker runs with
	seen := settingsOf(f.cfg.settings)      // what the configuration said when last taken
	var last map[string]string              // the last reading, taken or not
	lastErr := ""
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, err := conf.Load(opts)
		if err != nil {
			if err.Error() != lastErr {
				slog.Warn("the configuration does not read; the worker keeps its settings", "error", err)
			}
			lastErr, last = err.Error(), nil
			continue
		}
		lastErr = ""
		now := settingsOf(s)
		stable := maps.Equal(now, last)
		last = now
		changed := changedSettings(seen, now)
		if len(changed) == 0 || !stable {
			continue
		}
		seen = now
		fp := s.Fingerprint()
		took := false
		if models := slices.DeleteFunc(slices.Clone(changed), func(k string) bool { return !modelSetting(k) }); len(models) > 0 {
			if env, err := s.ModelEnv(ctx); err != nil {
				// Tried again at the file's next change, not every poll:
				// an api_key_cmd may prompt.
				slog.Warn("the configuration's models do not load; the worker keeps its own until the file changes again", "error", err)
			} else {
				acts.Live.Set(activities.LiveSettings{Models: worker.Models(env), Prices: s.Prices()})
				for _, k := range models {
					setOrDelete(running, k, fp)
				}
				slog.Info("the configuration changed: the models and prices are reloaded", "settings", models)
				took = true
			}
		}
		if pool, ok := acts.MCP.(reconfigurer); ok && slices.Contains(changed, "mcp_servers") {
			if servers, err := s.MCPServers(); err != nil {
				slog.Warn("the configuration's MCP servers do not load; the worker keeps its own until the file changes again", "error", err)
			} else {
				pool.Reconfigure(servers)
				setOrDelete(running, "mcp_servers", fp)
				slog.Info("the configuration changed: the MCP servers are reloaded", "servers", len(servers))
				took = true
			}
		}
		if took && applied != nil {
			applied(maps.Clone(running))
		}
		if restart := slices.DeleteFunc(changed, liveSetting); len(restart) > 0 {
			slog.Warn("the configuration changed: restart the worker to apply these settings", "settings", restart)
		}
	}
}

// changedSettings are the names whose values differ between two
// fingerprints, in order.
func changedSettings(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func setOrDelete(m map[string]string, k string, from map[string]string) {
	if v, ok := from[k]; ok {
		m[k] = v
	} else {
		delete(m, k)
	}
}
