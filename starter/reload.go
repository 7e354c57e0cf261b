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
	"github.com/autocoder/autocoder/worker"
)

// configPoll is how often a worker reads its configuration again.
const configPoll = 2 * time.Second

// liveSetting reports a setting (a key of the configuration's
// fingerprint) that a running worker applies when it changes: the
// models' and their prices (activities.LiveSettings). The others need a restart.
func liveSetting(name string) bool {
	return name == "model" || strings.HasPrefix(name, "providers.") || strings.HasPrefix(name, "model_call.") ||
		strings.HasPrefix(name, "prices.")
}

// watchConfig resolves the configuration again every configPoll until ctx
// ends, as the command did at start (the same file, environment and
// flags), so that an edit of the file needs no restart: a change to the
// models or prices is applied to acts at once (activities.Live); any other is logged with
// what to restart. A file that no longer reads changes nothing, and is
// logged once. applied, when set, is told the settings the worker runs
// with after each change.
func (f *Factory) watchConfig(ctx context.Context, acts *activities.Activities, applied func(map[string]string)) {
	if f.confOptions == nil {
		return
	}
	running := f.cfg.settings.Fingerprint() // what the worker runs with
	seen := maps.Clone(running)             // what the configuration said last
	lastErr := ""
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, err := conf.Load(*f.confOptions)
		if err != nil {
			if err.Error() != lastErr {
				slog.Warn("the configuration does not read; the worker keeps its settings", "error", err)
			}
			lastErr = err.Error()
			continue
		}
		lastErr = ""
		now := s.Fingerprint()
		changed := changedSettings(seen, now)
		if len(changed) == 0 {
			continue
		}
		live := slices.DeleteFunc(slices.Clone(changed), func(k string) bool { return !liveSetting(k) })
		if len(live) > 0 {
			env, err := s.ModelEnv(ctx)
			if err != nil {
				slog.Warn("the configuration's models do not load; the worker keeps its own", "error", err)
				continue // tried again at the next poll
			}
			acts.Live.Set(activities.LiveSettings{Models: worker.Models(env), Prices: s.Prices()})
			for _, k := range live {
				setOrDelete(running, k, now)
			}
			slog.Info("the configuration changed: the models and prices are reloaded", "settings", live)
		}
		if restart := slices.DeleteFunc(changed, liveSetting); len(restart) > 0 {
			slog.Warn("the configuration changed: restart the worker to apply these settings", "settings", restart)
		}
		seen = now
		if applied != nil {
			applied(maps.Clone(running))
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
