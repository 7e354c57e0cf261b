// Package tools is the set of workspace tools a model works through: list,
// read and search look at a file set; write, edit and delete return a new
// one. Every tool is a pure function of the files and its JSON arguments,
// so a call can run anywhere (inside a model turn, in a local activity) and
// be replayed with the same result. Mistakes the model can fix come back as
// a Result with IsError set and a text saying what to do; the error return
// is kept for faults of the caller.
package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Def describes a tool to a model as a function definition: its name, what
// it does, and a JSON Schema object for its arguments.
type Def struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Result is what a call produced.
type Result struct {
	// Text is what the model sees, bounded by Limits.ResultBytes.
	Text string
	// IsError marks a call the model got wrong; Text says how to fix it.
	IsError bool
	// Files is the new file set, or nil when the call changed nothing.
	Files []workspace.File
	// Changed names the paths written or deleted, for status lines.
	Changed []string
}

// Limits bound what one call returns and what the workspace may become.
// A zero field takes its value from DefaultLimits.
type Limits struct {
	ResultBytes   int // the whole text of a result
	ListEntries   int // paths one list call shows
	ReadLines     int // lines one read call shows
	SearchResults int // matching lines one search call shows
	LineBytes     int // one line of a search result
	Workspace     workspace.Limits
}

// DefaultLimits keep one result around four thousand tokens.
var DefaultLimits = Limits{
	ResultBytes:   16 << 10,
	ListEntries:   400,
	ReadLines:     1000,
	SearchResults: 100,
	LineBytes:     240,
	Workspace:     workspace.DefaultLimits,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	l.ResultBytes = pick(l.ResultBytes, d.ResultBytes)
	l.ListEntries = pick(l.ListEntries, d.ListEntries)
	l.ReadLines = pick(l.ReadLines, d.ReadLines)
	l.SearchResults = pick(l.SearchResults, d.SearchResults)
	l.LineBytes = pick(l.LineBytes, d.LineBytes)
	if l.Workspace == (workspace.Limits{}) {
		l.Workspace = d.Workspace
	}
	return l
}

// Kind says where a tool's calls run.
type Kind string

// The kinds of tools.
const (
	Unknown   Kind = ""          // no such tool
	Workspace Kind = "workspace" // Call runs it on the files
	Sandbox   Kind = "sandbox"   // run and run_tests: the sandbox runs them
	Finish    Kind = "finish"    // ends the step; nothing runs
)

// KindOf returns the kind of the named tool, Unknown for no tool.
func KindOf(name string) Kind {
	t, ok := lookup(name)
	if !ok {
		return Unknown
	}
	return t.kind
}

// tool is one entry of the registry: its definition, its kind, whether it
// only looks, and, for a workspace tool, its body, which receives arguments
// already decoded into a fresh args.
type tool struct {
	def      Def
	kind     Kind
	readOnly bool
	args     func() any
	run      func(c *call, args any) Result
}

// call carries one invocation's inputs to a tool body.
type call struct {
	files []workspace.File
	lim   Limits
}

var registry = []tool{listTool, readTool, searchTool, writeTool, editTool, deleteTool, runTool, runTestsTool, installTool, finishTool}

// Defs returns the definitions of the workspace tools, in a stable order.
func Defs() []Def {
	var defs []Def
	for _, t := range registry {
		if t.kind == Workspace {
			defs = append(defs, t.def)
		}
	}
	return defs
}

// AgentDefs returns the definitions of every tool: the workspace tools,
// then run, run_tests, install and finish. install is for a worker that
// can reach a registry to offer.
func AgentDefs() []Def {
	defs := make([]Def, len(registry))
	for i, t := range registry {
		defs[i] = t.def
	}
	return defs
}

// ReadOnly reports whether the named tool never changes the files.
func ReadOnly(name string) bool {
	t, ok := lookup(name)
	return ok && t.readOnly
}

func lookup(name string) (tool, bool) {
	for _, t := range registry {
		if t.def.Name == name {
			return t, true
		}
	}
	return tool{}, false
}

// Call runs the named tool on files, which must be in workspace order
// (workspace.Sort) with unique paths. It never modifies files: a change
// comes back as Result.Files.
func Call(files []workspace.File, name string, args json.RawMessage, lim Limits) (Result, error) {
	for i := 1; i < len(files); i++ {
		if files[i-1].Path >= files[i].Path {
			return Result{}, fmt.Errorf("tool %s: files are not sorted and unique at %q", name, files[i].Path)
		}
	}
	t, ok := lookup(name)
	if !ok {
		names := make([]string, len(registry))
		for i, t := range registry {
			names[i] = t.def.Name
		}
		return failf("there is no tool %q; the tools are %s", name, strings.Join(names, ", ")), nil
	}
	if t.kind != Workspace {
		return failf("%s is not a workspace tool and does not run here", name), nil
	}
	c := &call{files: files, lim: lim.withDefaults()}
	a := t.args()
	if err := decodeArgs(args, a); err != nil {
		return failf("bad arguments for %s: %v; the parameters are %s", name, err, paramSummary(t.def)), nil
	}
	r := t.run(c, a)
	r.Text = Elide(r.Text, c.lim.ResultBytes)
	return r, nil
}

// DecodeArgs decodes a call's JSON arguments into the tool's argument
// struct (RunArgs, RunTestsArgs, FinishArgs), strictly: unknown fields,
// trailing data and a missing required argument are errors, and no
// arguments at all mean none given.
func DecodeArgs(raw json.RawMessage, into any) error {
	return decodeArgs(raw, into)
}

func decodeArgs(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}") // some models send no arguments for a call without any
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return missingRequired(raw, into)
}

// missingRequired reports the first required argument (a field of the
// struct into points at without ",omitempty", as schemaOf declares it)
// that raw does not give, or gives as null: decoding alone would leave it
// empty, and a write without content would create an empty file instead of
// asking for the content.
func missingRequired(raw json.RawMessage, into any) error {
	t := reflect.TypeOf(into)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return err // Decode took it, so this cannot happen; never drop it
	}
	t = t.Elem()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if opts == "omitempty" || name == "" || name == "-" {
			continue
		}
		if v, ok := given[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return fmt.Errorf("the required argument %q is missing", name)
		}
	}
	return nil
}

// failf is a result that tells the model what it got wrong.
func failf(format string, a ...any) Result {
	return Result{Text: fmt.Sprintf(format, a...), IsError: true}
}

// paramSummary lists a tool's parameters as `name (type, required)`.
func paramSummary(d Def) string {
	props, _ := d.Parameters["properties"].(map[string]any)
	required, _ := d.Parameters["required"].([]string)
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(props)) {
		typ := props[name].(map[string]any)["type"]
		req := "optional"
		if slices.Contains(required, name) {
			req = "required"
		}
		parts = append(parts, fmt.Sprintf("%s (%v, %s)", name, typ, req))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// schemaOf builds the JSON Schema of an argument struct from its fields:
// the json tag names the property (",omitempty" makes it optional) and the
// desc tag describes it. Deriving the schema from the struct the arguments
// decode into keeps the two from drifting apart.
func schemaOf(v any) map[string]any {
	t := reflect.TypeOf(v)
	props := map[string]any{}
	required := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop := map[string]any{"description": f.Tag.Get("desc")}
		switch {
		case f.Type.Kind() == reflect.String:
			prop["type"] = "string"
		case f.Type.Kind() == reflect.Int:
			prop["type"] = "integer"
		case f.Type.Kind() == reflect.Bool:
			prop["type"] = "boolean"
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
			prop["type"] = "array"
			prop["items"] = map[string]any{"type": "string"}
		default:
			panic(fmt.Sprintf("tools: no schema type for field %s %s", f.Name, f.Type))
		}
		props[name] = prop
		if opts != "omitempty" {
			required = append(required, name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// newTool registers a workspace tool whose arguments decode into A.
func newTool[A any](name, desc string, readOnly bool, run func(c *call, a *A) Result) tool {
	t := newDef[A](name, desc, Workspace)
	t.readOnly = readOnly
	t.run = func(c *call, a any) Result { return run(c, a.(*A)) }
	return t
}

// newDef registers a tool of another kind, which Call does not run, whose
// arguments decode into A.
func newDef[A any](name, desc string, kind Kind) tool {
	var zero A
	return tool{
		def:  Def{Name: name, Description: desc, Parameters: schemaOf(zero)},
		kind: kind,
		args: func() any { return new(A) },
	}
}

// find returns the index of path p in the sorted files.
func (c *call) find(p string) (int, bool) {
	return slices.BinarySearchFunc(c.files, p, func(f workspace.File, p string) int { return strings.Compare(f.Path, p) })
}
