package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/modelout"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/versions"
)

const (
	// maxNotedPackages caps the packages of a plan whose versions are
	// looked up and shown to the model.
	maxNotedPackages = 10
	// versionsTimeout bounds the whole lookup: the plan waits for it.
	versionsTimeout = 10 * time.Second
)

// versionsNote is what a task's plan named and what the registries said
// of it, kept in the store under the task's workflow id.
type versionsNote struct {
	Packages []string `json:"packages"`
	Text     string   `json:"text"`
}

func versionsKey(ctx context.Context) string {
	return memoKey("versions", activity.GetInfo(ctx).WorkflowExecution.ID)
}

// noteVersions looks up the newest versions of the packages the plan's
// "Packages:" line names, in the language's registry, and keeps them for
// the task's steps (stepVersions). A retried or repeated plan naming the
// same packages reuses the note. It never fails the plan: a registry that
// cannot answer is a line of the note, a store that cannot keep it a
// warning in the log.
func (a *Activities) noteVersions(ctx context.Context, language, plan string) {
	var pkgs []string
	for _, p := range modelout.ParsePackages(plan) {
		if packageName.MatchString(p) && len(pkgs) < maxNotedPackages {
			pkgs = append(pkgs, p)
		}
	}
	l := knownOrNamed(language)
	if l.Deps.Versions.API == "" {
		pkgs = nil
	}
	key := versionsKey(ctx)
	old, err := a.readVersions(ctx, key)
	if (err == nil && slices.Equal(old.Packages, pkgs)) || (len(pkgs) == 0 && errors.Is(err, store.ErrNotFound)) {
		return
	}
	if len(pkgs) == 0 {
		// A new plan without packages: an earlier plan's note (a
		// rejected one's) must not reach its steps.
		a.keepVersions(ctx, key, versionsNote{})
		return
	}
	lookup, cancel := context.WithTimeout(ctx, versionsTimeout)
	defer cancel()
	stop := heartbeatWhile(ctx)
	r := &versions.Resolver{Cache: a.Store, TTL: a.VersionsTTL}
	results := r.Resolve(lookup, versions.SourceOf(lookup, l.Deps.Versions, a.DepsIndexes[l.Name]), pkgs)
	stop()
	a.keepVersions(ctx, key, versionsNote{Packages: pkgs, Text: versionsText(ctx, results)})
}

func (a *Activities) keepVersions(ctx context.Context, key string, note versionsNote) {
	raw, err := json.Marshal(note)
	if err != nil {
		activity.GetLogger(ctx).Warn("versions not noted", "error", err)
		return
	}
	if err := a.putMemo(ctx, key, raw); err != nil {
		activity.GetLogger(ctx).Warn("versions not noted; the steps go on without them", "error", err)
	}
}

// packageName and versionString are what a note may quote of the model's
// plan and of a registry's answer: the characters registries allow in
// names and versions, bounded, never text that could read as an
// instruction.
var (
	packageName   = regexp.MustCompile(`^[@A-Za-z0-9][@/A-Za-z0-9._:-]{0,213}$`)
	versionString = regexp.MustCompile(`^v?[0-9A-Za-z][0-9A-Za-z.+_~-]{0,63}$`)
)

// versionsText tells the model the versions found and names the packages
// without one.
func versionsText(ctx context.Context, results []versions.Result) string {
	var found, missing []string
	for _, res := range results {
		switch {
		case res.Err == nil && versionString.MatchString(res.Version):
			found = append(found, res.Package+" "+res.Version)
		case res.Err == nil:
			missing = append(missing, res.Package+" (the registry's answer was not a version)")
		case errors.Is(res.Err, versions.ErrNotFound):
			missing = append(missing, res.Package+" (the registry has no such package)")
		default:
			activity.GetLogger(ctx).Warn("no version from the registry", "package", res.Package, "registry", res.Registry, "error", res.Err)
			missing = append(missing, res.Package+" (the registry could not be asked)")
		}
	}
	var b strings.Builder
	if len(found) > 0 {
		fmt.Fprintf(&b, "Current versions, from the registries today: %s; use these in the manifest.\n", strings.Join(found, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "No current version was found for %s: check the names, and pin only versions you are sure exist.\n", strings.Join(missing, ", "))
	}
	return b.String()
}

// stepVersions is the task's versions note for a step's prompt; "" when
// there is none. A store that cannot answer costs the note, not the step.
func (a *Activities) stepVersions(ctx context.Context) string {
	note, err := a.readVersions(ctx, versionsKey(ctx))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			activity.GetLogger(ctx).Warn("versions note unreadable; going on without it", "error", err)
		}
		return ""
	}
	return note.Text
}

func (a *Activities) readVersions(ctx context.Context, key string) (versionsNote, error) {
	var note versionsNote
	raw, err := a.Store.GetMemo(ctx, key)
	if err != nil {
		return note, err
	}
	if err := json.Unmarshal(raw, &note); err != nil {
		return note, fmt.Errorf("decode versions note: %w", err)
	}
	return note, nil
}
