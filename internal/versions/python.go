package versions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// pypiJSON asks PyPI's JSON API (/pypi/<name>/json): of the releases that
// have a file that is not yanked, the newest stable one.
func pypiJSON(ctx context.Context, r *Resolver, base, name string) (string, string, error) {
	base = trimBase(base)
	var doc struct {
		Info struct {
			Version string `json:"version"`
			Yanked  bool   `json:"yanked"`
		} `json:"info"`
		Releases map[string][]struct {
			Yanked bool `json:"yanked"`
		} `json:"releases"`
	}
	if err := r.getJSON(ctx, base+"/pypi/"+url.PathEscape(pythonName(name))+"/json", "application/json", &doc); err != nil {
		return base, "", err
	}
	if len(doc.Releases) == 0 {
		// Releases are the API's older half; without them, its summary.
		if doc.Info.Version == "" || doc.Info.Yanked {
			return base, "", fmt.Errorf("%s has no release that is not yanked", name)
		}
		return base, doc.Info.Version, nil
	}
	var live []string
	for v, files := range doc.Releases {
		for _, f := range files {
			if !f.Yanked {
				live = append(live, v)
				break
			}
		}
	}
	return pick(base, name, live, pythonPre)
}

// pypiSimple asks a simple repository (PEP 691 JSON, or PEP 503 HTML)
// for the project's files and takes the newest stable version that has a
// file that is not yanked.
func pypiSimple(ctx context.Context, r *Resolver, base, name string) (string, string, error) {
	project := pythonName(name)
	u := trimBase(base) + "/" + url.PathEscape(project) + "/"
	body, mediaType, err := r.get(ctx, u,
		"application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01")
	if err != nil {
		return base, "", err
	}
	var files []indexFile
	// PEP 691's JSON (v1, or "latest"), else PEP 503's HTML.
	if strings.HasPrefix(mediaType, "application/vnd.pypi.simple.") && strings.HasSuffix(mediaType, "+json") || mediaType == "application/json" {
		files, err = simpleJSON(body)
	} else {
		files, err = simpleHTML(body)
	}
	if err != nil {
		return base, "", fmt.Errorf("the index's page %s: %w", u, err)
	}
	var live []string
	for _, f := range files {
		if v := fileVersion(project, f.name); v != "" && !f.yanked {
			live = append(live, v)
		}
	}
	return pick(base, name, live, pythonPre)
}

// indexFile is one file a simple index lists.
type indexFile struct {
	name   string
	yanked bool
}

func simpleJSON(body []byte) ([]indexFile, error) {
	var doc struct {
		Files []struct {
			Filename string          `json:"filename"`
			Yanked   json.RawMessage `json:"yanked"` // false, true or the reason
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not PEP 691 JSON: %w", err)
	}
	files := make([]indexFile, len(doc.Files))
	for i, f := range doc.Files {
		y := strings.TrimSpace(string(f.Yanked))
		files[i] = indexFile{name: f.Filename, yanked: y != "" && y != "false" && y != "null"}
	}
	return files, nil
}

// simpleHTML reads PEP 503's anchors; PEP 592's data-yanked marks a
// yanked file.
func simpleHTML(body []byte) ([]indexFile, error) {
	var files []indexFile
	z := html.NewTokenizer(bytes.NewReader(body))
	var open *indexFile
	for {
		switch z.Next() {
		case html.ErrorToken:
			return files, nil
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "a" {
				continue
			}
			open = &indexFile{}
			for hasAttr {
				var k []byte
				k, _, hasAttr = z.TagAttr()
				if string(k) == "data-yanked" {
					open.yanked = true
				}
			}
		case html.TextToken:
			if open != nil {
				open.name += string(z.Text())
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "a" && open != nil {
				open.name = strings.TrimSpace(open.name)
				files = append(files, *open)
				open = nil
			}
		}
	}
}

var pythonSeparators = regexp.MustCompile(`[-_.]+`)

// pythonName is a project name normalized as PEP 503 says.
func pythonName(name string) string {
	return pythonSeparators.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "-")
}

// fileVersion reads the version from the name of a wheel or an sdist of
// project; "" for another project's file or a name it cannot read.
func fileVersion(project, file string) string {
	if stem, ok := strings.CutSuffix(file, ".whl"); ok {
		parts := strings.Split(stem, "-")
		if len(parts) >= 5 && pythonName(parts[0]) == project {
			return parts[1]
		}
		return ""
	}
	var stem string
	for _, ext := range []string{".tar.gz", ".zip", ".tar.bz2", ".tgz"} {
		if s, ok := strings.CutSuffix(file, ext); ok {
			stem = s
			break
		}
	}
	// The project's name may hold hyphens too: the version follows the
	// hyphen whose prefix is the name.
	for i := range len(stem) {
		if stem[i] == '-' && pythonName(stem[:i]) == project {
			return stem[i+1:]
		}
	}
	return ""
}
