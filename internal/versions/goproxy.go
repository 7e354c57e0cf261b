package versions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// goProxy asks the module proxies of a GOPROXY list as the go command does
// (go help goproxy): in order, past one that says 404 or 410 after a
// comma, past any error after a pipe. Of a proxy's @v/list the newest
// release wins, else the newest pre-release; a module without tags
// answers @latest (a pseudo-version). "direct" and "off" ask no proxy.
func goProxy(ctx context.Context, r *Resolver, list, module string) (string, string, error) {
	escaped, err := escapeModule(module)
	if err != nil {
		return list, "", err
	}
	var last error
	for _, e := range goProxyList(list) {
		switch e.url {
		case "off":
			return list, "", errors.New("GOPROXY is off: no module proxy may be asked")
		case "direct":
			return list, "", fmt.Errorf("GOPROXY leaves %s to its version control host, which this does not ask; name a module proxy in GOPROXY", module)
		}
		v, err := goProxyAsk(ctx, r, trimBase(e.url), escaped)
		if err == nil {
			return e.url, v, nil
		}
		last = fmt.Errorf("%s: %w", e.url, err)
		if !e.pastAnyError && !errors.Is(err, ErrNotFound) {
			return e.url, "", err
		}
	}
	if last == nil {
		return list, "", errors.New("GOPROXY names no module proxy")
	}
	return list, "", last
}

func goProxyAsk(ctx context.Context, r *Resolver, base, escaped string) (string, error) {
	body, _, err := r.get(ctx, base+"/"+escaped+"/@v/list", "")
	if err != nil {
		return "", err
	}
	var tags []string
	for _, l := range strings.Split(string(body), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "v") {
			tags = append(tags, l)
		}
	}
	if v := newest(tags, semverPre); v != "" {
		return v, nil
	}
	var info struct{ Version string }
	if err := r.getJSON(ctx, base+"/"+escaped+"/@latest", "", &info); err != nil {
		return "", err
	}
	if info.Version == "" {
		return "", ErrNotFound
	}
	return info.Version, nil
}

type goProxyEntry struct {
	url string
	// pastAnyError: a pipe follows, so any error moves to the next entry.
	pastAnyError bool
}

func goProxyList(list string) []goProxyEntry {
	var out []goProxyEntry
	for list != "" {
		i := strings.IndexAny(list, ",|")
		e := goProxyEntry{url: list}
		if i >= 0 {
			e = goProxyEntry{url: list[:i], pastAnyError: list[i] == '|'}
			list = list[i+1:]
		} else {
			list = ""
		}
		if e.url = strings.TrimSpace(e.url); e.url != "" {
			out = append(out, e)
		}
	}
	return out
}

// escapeModule is a module path as proxies spell it: each capital letter
// as "!" and its lower case (golang.org/x/mod/module.EscapePath).
func escapeModule(path string) (string, error) {
	if path == "" || strings.ContainsAny(path, " !\\") || strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
		return "", fmt.Errorf("%q is not a module path such as golang.org/x/text", path)
	}
	var b strings.Builder
	for _, c := range path {
		if unicode.IsUpper(c) {
			b.WriteByte('!')
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String(), nil
}
