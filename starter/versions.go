package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/versions"
)

// VersionsOptions are the arguments of versions.
type VersionsOptions struct {
	Language lang.Language
	Packages []string
	// Index is the registry the user named for the language
	// (registries.index); "" asks the ecosystem's own.
	Index string
	// TTL is how long answers are kept in the store (versions.ttl); 0
	// asks the registry every time.
	TTL  time.Duration
	JSON bool
	// Verbose also prints the registry each answer came from.
	Verbose bool
}

// NewCmdVersions prints the newest versions of packages from the
// language's registry.
func NewCmdVersions(f *Factory, runF func(*VersionsOptions) error) *cobra.Command {
	var o VersionsOptions
	cmd := &cobra.Command{
		Use:   "versions LANG PKG...",
		Short: "Print the newest version of each package, from the language's registry",
		Long: `Print the newest version of each package, as the language's registry says it
today: "PKG VERSION" lines (--verbose adds the registry asked). Releases win
over pre-releases; yanked versions are never printed. A package the registry
does not answer for is a warning; the command fails only when none is found.

Packages are named as their ecosystem names them: a Go module path, a PyPI
project, an npm package (@scope/name), a crate, a Maven GROUP:ARTIFACT.`,
		Example: "  autocoder versions go golang.org/x/text\n  autocoder versions java com.google.guava:guava",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := languages.Lookup(args[0])
			if err != nil {
				return usageError("%v", err)
			}
			if l.Deps.Versions.API == "" {
				return usageError("%s has no package registry autocoder asks", l.Title)
			}
			o.Language, o.Packages = l, args[1:]
			o.Index = f.cfg.settings.RegistryIndexes()[l.Name]
			o.TTL = f.cfg.settings.Duration("versions.ttl")
			o.Verbose = f.verbose
			if runF != nil {
				return runF(&o)
			}
			return runVersions(cmd.Context(), f, &o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON: each package's version, the registry asked, whether it was cached, and the warning")
	return cmd
}

// shownVersion is one package of versions --json.
type shownVersion struct {
	Package  string `json:"package"`
	Version  string `json:"version,omitempty"`
	Registry string `json:"registry"`
	Cached   bool   `json:"cached"`
	Warning  string `json:"warning,omitempty"`
}

func runVersions(ctx context.Context, f *Factory, o *VersionsOptions) error {
	r := &versions.Resolver{TTL: o.TTL}
	if o.TTL > 0 {
		// Without the store every answer is asked for again; nothing else
		// is lost.
		if st, err := f.Store(ctx); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "warning: the answers are not cached: %s\n", termsafe.Line(err.Error()))
		} else {
			r.Cache = st
		}
	}
	results := r.Resolve(ctx, versions.SourceOf(ctx, o.Language.Deps.Versions, o.Index), o.Packages)
	found := 0
	shown := make([]shownVersion, len(results))
	for i, res := range results {
		shown[i] = shownVersion{Package: res.Package, Version: res.Version, Registry: res.Registry, Cached: res.Cached}
		if res.Err != nil {
			shown[i].Warning = versionWarning(res)
			fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", termsafe.Line(shown[i].Warning))
			continue
		}
		found++
		if o.JSON {
			continue
		}
		line := termsafe.Line(res.Package + " " + res.Version)
		if o.Verbose {
			line += " " + termsafe.Line(res.Registry)
			if res.Cached {
				line += " (cached)"
			}
		}
		fmt.Fprintln(f.IO.Out, line)
	}
	if o.JSON {
		if err := writeJSON(f.IO.Out, shown); err != nil {
			return err
		}
	}
	if found == 0 {
		return errors.New("no package's version was found (see the warnings above)")
	}
	return nil
}

// versionWarning says why a package has no version, for a person.
func versionWarning(res versions.Result) string {
	if errors.Is(res.Err, versions.ErrNotFound) {
		return fmt.Sprintf("%s: %s has no such package; check its name", res.Package, res.Registry)
	}
	return fmt.Sprintf("%s: no version from %s: %v", res.Package, res.Registry, res.Err)
}
