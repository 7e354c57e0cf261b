package starter

import (
	"context"
	"fmt"
	"strings"

	conf "github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/notify"
)

// notifyTargets are the webhooks a task tells: the configuration file's
// [[notifications]], then run's --notify.
func notifyTargets(s *conf.Config, flags []string) ([]notify.Target, error) {
	targets, err := s.Notifications()
	if err != nil {
		return nil, usageError("%v", err)
	}
	for _, fl := range flags {
		t, err := notify.ParseFlag(fl)
		if err != nil {
			return nil, usageError("--notify: %v", err) // the URL is a secret: not repeated
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// saveTargets keeps the task's webhooks in the store, where the worker
// reads them, and returns the key the task carries in their place: the
// URLs are credentials, and a workflow's input stays in its history. ""
// when there are none.
func saveTargets(ctx context.Context, f *Factory, id string, targets []notify.Target) (string, error) {
	if len(targets) == 0 {
		return "", nil
	}
	st, err := f.Store(ctx)
	if err != nil {
		return "", err
	}
	ref, err := notify.Save(ctx, st, notify.Record{Targets: targets, Link: f.cfg.workflowURL(id)})
	if err != nil {
		return "", err
	}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Redacted()
	}
	fmt.Fprintf(f.IO.ErrOut, "notifications: %s\n", strings.Join(names, "; "))
	return ref, nil
}
