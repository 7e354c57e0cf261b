package versions

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"
)

// maven reads a Maven repository's maven-metadata.xml of GROUP:ARTIFACT:
// the newest stable version it lists, else its release, else its latest.
func maven(ctx context.Context, r *Resolver, base, coordinates string) (string, string, error) {
	base = trimBase(base)
	group, artifact, ok := strings.Cut(coordinates, ":")
	if !ok || group == "" || artifact == "" || strings.ContainsAny(coordinates, "/\\ ") {
		return base, "", fmt.Errorf("%q is not GROUP:ARTIFACT, such as com.google.guava:guava", coordinates)
	}
	artifact, _, _ = strings.Cut(artifact, ":") // a version given is not the question
	u := base + "/" + strings.ReplaceAll(group, ".", "/") + "/" + artifact + "/maven-metadata.xml"
	body, _, err := r.get(ctx, u, "")
	if err != nil {
		return base, "", err
	}
	var doc struct {
		Versioning struct {
			Latest   string   `xml:"latest"`
			Release  string   `xml:"release"`
			Versions []string `xml:"versions>version"`
		} `xml:"versioning"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return base, "", fmt.Errorf("%s is not Maven's metadata: %w", u, err)
	}
	vs := doc.Versioning.Versions
	for _, v := range []string{doc.Versioning.Release, doc.Versioning.Latest} {
		if v != "" {
			vs = append(vs, v)
		}
	}
	return pick(base, coordinates, vs, mavenPre)
}
