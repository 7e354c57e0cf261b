package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// readFile reads a configuration file into values by key name, each with
// its line. Every mistake is an error naming path:line: a syntax error, an
// unknown key, a value of the wrong type or out of range, a secret in a
// file others can read.
func readFile(path string) (*fileReader, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("%s:%d: %v (TOML syntax)", path, row, de)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := keyLines(data)
	r := fileReader{path: path, lines: lines, values: map[string]Value{}}
	r.walk("", doc)
	if err := r.firstError(); err != nil {
		return nil, err
	}
	if err := checkSecrets(path, r.values, r.notifications, r.mcpServers); err != nil {
		return nil, err
	}
	if v, ok := r.values["data_dir"]; ok && !filepath.IsAbs(v.Text) {
		// Relative to the file, which is where its writer was looking.
		v.Text = filepath.Join(filepath.Dir(path), v.Text)
		r.values["data_dir"] = v
	}
	return &r, nil
}

// fileReader collects a file's values and its mistakes.
type fileReader struct {
	path          string
	lines         map[string]int
	values        map[string]Value
	notifications []Notification
	mcpServers    []MCPServer
	prices        []ModelPrice
	errs          []lineError
}

type lineError struct {
	line int
	msg  string
}

func (r *fileReader) fail(name, format string, args ...any) {
	line := r.line(name)
	r.errs = append(r.errs, lineError{line, fmt.Sprintf("%s:%d: %s", r.path, line, fmt.Sprintf(format, args...))})
}

// line is the line name is written on, else the nearest enclosing
// table's (a key of an inline table in an array has no line of its own).
func (r *fileReader) line(name string) int {
	for {
		if l, ok := r.lines[name]; ok {
			return l
		}
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			return 0
		}
		name = name[:i]
	}
}

// firstError is the mistake nearest the top of the file: one line to fix.
func (r *fileReader) firstError() error {
	if len(r.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(r.errs, func(a, b lineError) int { return a.line - b.line })
	return errors.New(r.errs[0].msg)
}

func (r *fileReader) walk(prefix string, table map[string]any) {
	for name, v := range table {
		full := prefix + name
		sub, isTable := v.(map[string]any)
		switch {
		case full == "notifications":
			r.readNotifications(v)
		case full == "mcp_servers":
			r.readMCPServers(v)
		case full == "prices":
			r.readPrices(v)
		case slices.Contains(reserved, full):
			if !isTable {
				r.fail(full, "%s must be a table ([%s]), kept for a later version", full, full)
			} else if len(sub) > 0 {
				r.fail(full, "[%s] is kept for a later version and takes no keys yet; leave it empty", full)
			}
		case isSection(full):
			if !isTable {
				r.fail(full, "%s must be a table ([%s])", full, full)
				continue
			}
			r.walk(full+".", sub)
		default:
			k, ok := lookupKey(full)
			if !ok {
				r.fail(full, "unknown key %q; `autocoder config show` lists the keys", full)
				continue
			}
			text, err := k.text(v)
			if err == nil {
				err = k.validate(text)
			}
			if err != nil {
				r.fail(full, "%s: %v", full, err)
				continue
			}
			r.values[full] = Value{Text: text, Source: Source{Kind: FromFile, Path: r.path, Line: r.lines[full]}}
		}
	}
}

// isSection says whether name is a table holding keys (providers.openai).
func isSection(name string) bool {
	for _, k := range Keys {
		if strings.HasPrefix(k.Name, name+".") {
			return true
		}
	}
	return false
}

// text is a TOML value as the text a variable would hold, if its type
// fits the key.
func (k Key) text(v any) (string, error) {
	switch k.kind {
	case kindInt:
		if n, ok := v.(int64); ok {
			return strconv.FormatInt(n, 10), nil
		}
		return "", fmt.Errorf("want a whole number, not %s", tomlType(v))
	case kindFloat:
		switch n := v.(type) {
		case int64:
			return strconv.FormatInt(n, 10), nil
		case float64:
			return strconv.FormatFloat(n, 'f', -1, 64), nil
		}
		return "", fmt.Errorf("want a number, not %s", tomlType(v))
	case kindList:
		return listText(v)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string in quotes, not %s", tomlType(v))
	}
	return s, nil
}

// listText is an array of strings as a list's text.
func listText(v any) (string, error) {
	arr, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("want an array of strings such as [\"a\", \"b\"], not %s", tomlType(v))
	}
	items := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return "", fmt.Errorf("item %d: want a string in quotes, not %s", i+1, tomlType(e))
		}
		if strings.Contains(s, ",") || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("item %d: %q is not one item", i+1, s)
		}
		items[i] = strings.TrimSpace(s)
	}
	return strings.Join(items, ","), nil
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "a number"
	case float64:
		return "a number with a fraction"
	case bool:
		return "true or false"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// checkSecrets refuses a key written in a file others may read, and more
// than one way to the same provider's key.
func checkSecrets(path string, values map[string]Value, notifications []Notification, servers []MCPServer) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("stat configuration: %w", err)
	}
	for _, s := range servers {
		if s.hasSecrets() && st.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("%s:%d: the MCP server %s's env and headers may hold secrets, and the file is readable by others (mode %04o): run chmod 600 %s, or pass them with env_from or headers_env (variables)",
				path, s.Source.Line, s.Name, st.Mode().Perm(), path)
		}
	}
	for _, n := range notifications {
		if n.URL != "" && st.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("%s:%d: a webhook's url is a secret, and the file is readable by others (mode %04o): run chmod 600 %s, or name it with url_env (a variable)",
				path, n.Source.Line, st.Mode().Perm(), path)
		}
	}
	for _, k := range Keys {
		v, ok := values[k.Name]
		if !ok || !k.Secret || st.Mode().Perm()&0o077 == 0 {
			continue
		}
		return fmt.Errorf("%s:%d: %s is a secret, and the file is readable by others (mode %04o): run chmod 600 %s, or name it with %s",
			path, v.Source.Line, k.Name, st.Mode().Perm(), path, secretAlternative(k.Name))
	}
	for _, p := range providers {
		var set []string
		for _, form := range keyForms {
			if v, ok := values[p.key(form)]; ok {
				set = append(set, fmt.Sprintf("%s (line %d)", form, v.Source.Line))
			}
		}
		if len(set) > 1 {
			return fmt.Errorf("%s: [providers.%s] sets its key %d ways, %s; keep one", path, p, len(set), strings.Join(set, " and "))
		}
	}
	return nil
}

func secretAlternative(name string) string {
	if strings.HasPrefix(name, "providers.") {
		return "api_key_env (a variable) or api_key_cmd (a command that prints it)"
	}
	return "the " + "AUTOCODER_DATABASE_URL variable"
}

// keyLines maps each dotted key of a TOML document to the line it is
// written on (a table to its header's line), from the parser's positions.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	prefix := ""
	arrays := map[string]int{} // entries of each array of tables so far
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			prefix = joinKey(e.Key())
			lines[prefix] = lineOf(&p, e.Key())
			prefix += "."
		case unstable.ArrayTable:
			// Entries are named by index: notifications.0, notifications.1.
			name := joinKey(e.Key())
			line := lineOf(&p, e.Key())
			if lines[name] == 0 {
				lines[name] = line
			}
			prefix = fmt.Sprintf("%s.%d", name, arrays[name])
			arrays[name]++
			lines[prefix] = line
			prefix += "."
		case unstable.KeyValue:
			addKeyValue(&p, lines, prefix, e)
		}
	}
	return lines
}

// addKeyValue records a key and, for an inline table, the keys inside it.
func addKeyValue(p *unstable.Parser, lines map[string]int, prefix string, kv *unstable.Node) {
	name := prefix + joinKey(kv.Key())
	line := lineOf(p, kv.Key())
	// Each part of a dotted key is a table on the same line.
	parts := strings.Split(name, ".")
	for i := range parts {
		if n := strings.Join(parts[:i+1], "."); lines[n] == 0 {
			lines[n] = line
		}
	}
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			addKeyValue(p, lines, name+".", it.Node())
		}
	}
}

func joinKey(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

func lineOf(p *unstable.Parser, it unstable.Iterator) int {
	if !it.Next() {
		return 0
	}
	return p.Shape(it.Node().Raw).Start.Line
}
