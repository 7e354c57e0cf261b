package versions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// crates asks a sparse index (Cargo's index layout over HTTP) for the
// crate's file: one JSON line per published version; of those not
// yanked, the newest stable one.
func crates(ctx context.Context, r *Resolver, base, name string) (string, string, error) {
	base = trimBase(strings.TrimPrefix(base, "sparse+"))
	path, err := crateIndexPath(name)
	if err != nil {
		return base, "", err
	}
	body, _, err := r.get(ctx, base+"/"+path, "")
	if err != nil {
		return base, "", err
	}
	var live []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), maxBody)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var entry struct {
			Vers   string `json:"vers"`
			Yanked bool   `json:"yanked"`
		}
		if err := json.Unmarshal(line, &entry); err != nil {
			return base, "", fmt.Errorf("the index's file for %s is not the JSON lines Cargo reads: %w", name, err)
		}
		if !entry.Yanked && entry.Vers != "" {
			live = append(live, entry.Vers)
		}
	}
	if err := sc.Err(); err != nil {
		return base, "", fmt.Errorf("read the index's file for %s: %w", name, err)
	}
	return pick(base, name, live, semverPre)
}

// crateIndexPath is where the index keeps a crate's file: by the length
// and first letters of its lower-case name.
func crateIndexPath(name string) (string, error) {
	n := strings.ToLower(name)
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", fmt.Errorf("%q is not a crate name", name)
		}
	}
	switch len(n) {
	case 0:
		return "", fmt.Errorf("%q is not a crate name", name)
	case 1:
		return "1/" + n, nil
	case 2:
		return "2/" + n, nil
	case 3:
		return "3/" + n[:1] + "/" + n, nil
	}
	return n[:2] + "/" + n[2:4] + "/" + n, nil
}
