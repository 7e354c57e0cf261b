package versions

import (
	"context"
	"fmt"
	"strings"
)

// npm asks an npm registry for the package's document; its dist-tags'
// latest is what `npm install` takes, else the newest stable version.
func npm(ctx context.Context, r *Resolver, base, name string) (string, string, error) {
	base = trimBase(base)
	if name == "" || strings.ContainsAny(name, " \\") {
		return base, "", fmt.Errorf("%q is not an npm package name", name)
	}
	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]any    `json:"versions"`
	}
	// A scoped name's slash is escaped (@scope%2fname), as npm does.
	path := strings.Replace(name, "/", "%2f", 1)
	// The abbreviated document (install-v1) is what npm itself asks for.
	err := r.getJSON(ctx, base+"/"+path,
		"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*", &doc)
	if err != nil {
		return base, "", err
	}
	if v := doc.DistTags["latest"]; v != "" {
		return base, v, nil
	}
	vs := make([]string, 0, len(doc.Versions))
	for v := range doc.Versions {
		vs = append(vs, v)
	}
	return pick(base, name, vs, semverPre)
}
