package deploytest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of `docker-compose config` the tests read. It
// accepts the output of both docker-compose v1 and the v2 plugin.
type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image         string            `yaml:"image"`
	ContainerName string            `yaml:"container_name"`
	Command       []string          `yaml:"command"`
	Ports         []any             `yaml:"ports"`
	Environment   map[string]string `yaml:"environment"`
	Volumes       []mount           `yaml:"volumes"`
	GroupAdd      []string          `yaml:"group_add"`
	Restart       string            `yaml:"restart"`
	Build         *struct {
		Context string `yaml:"context"`
	} `yaml:"build"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// mount is a service volume: "source:target[:mode]" (v1) or a mapping (v2).
type mount struct {
	Type   string `yaml:"type"`
	Source string `yaml:"source"`
	Target string `yaml:"target"`
}

func (m *mount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		type plain mount
		return n.Decode((*plain)(m))
	}
	parts := strings.Split(n.Value, ":")
	if len(parts) < 2 {
		return fmt.Errorf("volume %q: want source:target", n.Value)
	}
	m.Source, m.Target = parts[0], parts[1]
	m.Type = "volume"
	if filepath.IsAbs(m.Source) {
		m.Type = "bind"
	}
	return nil
}

// requiredEnv are the variables the compose file refuses to run without.
var requiredEnv = map[string]string{
	"POSTGRES_PASSWORD":     "pg-secret",
	"AUTOCODER_DB_PASSWORD": "p@ss/w:rd?#", // characters a URL would need escaped
	"DOCKER_GID":            "4242",
}

// compose runs `docker-compose config` on the repository's compose file
// with only the given variables: the caller's environment and any .env file
// must not leak into what is checked.
func compose(t *testing.T, vars map[string]string) result {
	t.Helper()
	bin := needTool(t, "docker-compose")
	root := repoRoot(t)
	envFile := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	ctx := testContext(t, 2*time.Minute)
	return run(ctx, t, env, root, bin, "--env-file", envFile, "-f", filepath.Join(root, "docker-compose.yml"), "config")
}

func withRequired(extra map[string]string) map[string]string {
	vars := map[string]string{}
	for k, v := range requiredEnv {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

func TestComposeConfig(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		// want maps "service.field" to its expected value.
		want map[string]string
	}{
		{
			name: "defaults",
			vars: withRequired(nil),
			want: map[string]string{
				"postgres.image":                "postgres:" + postgresMajor,
				"temporal.image":                "temporalio/server:" + moduleVersion(t, "go.temporal.io/server"),
				"temporal-schema.image":         "temporalio/admin-tools:" + moduleVersion(t, "go.temporal.io/server"),
				"temporal-namespace.image":      "autocoder/autocoder:dev",
				"temporal-ui.image":             "temporalio/ui:" + moduleVersion(t, "github.com/temporalio/ui-server/v2"),
				"worker.image":                  "autocoder/autocoder:dev",
				"worker.OPENAI_API_KEY":         "",
				"worker.AUTOCODER_IMAGE_PYTHON": "autocoder/sandbox-python:2",
				"worker.AUTOCODER_IMAGE_GO":     "autocoder/sandbox-go:1",
				"worker.DOCKER_HOST":            "unix:///var/run/docker.sock",
				"worker.TEMPORAL_NAMESPACE":     "default",
			},
		},
		{
			name: "overrides",
			vars: withRequired(map[string]string{
				"AUTOCODER_IMAGE":            "registry.internal/autocoder:1.2.3",
				"POSTGRES_IMAGE":             "registry.internal/postgres:15.8",
				"TEMPORAL_IMAGE":             "registry.internal/temporal:1.32.1",
				"TEMPORAL_ADMIN_TOOLS_IMAGE": "registry.internal/admin-tools:1.32.1",
				"TEMPORAL_UI_IMAGE":          "registry.internal/temporal-ui:2.53.1",
				"OPENAI_API_KEY":             "sk-test",
				"ANTHROPIC_API_KEY":          "ak-test",
				"AUTOCODER_MODEL":            "openai:gpt-4.1",
				"AUTOCODER_IMAGE_PYTHON":     "registry.internal/sandbox-python:2",
				"AUTOCODER_IMAGE_GO":         "registry.internal/sandbox-go:2",
				"SANDBOX_DOCKER_HOST":        "tcp://sandbox-host:2376",
				"TEMPORAL_NAMESPACE":         "coding",
			}),
			want: map[string]string{
				"postgres.image":                        "registry.internal/postgres:15.8",
				"temporal.image":                        "registry.internal/temporal:1.32.1",
				"temporal-schema.image":                 "registry.internal/admin-tools:1.32.1",
				"temporal-namespace.image":              "registry.internal/autocoder:1.2.3",
				"temporal-ui.image":                     "registry.internal/temporal-ui:2.53.1",
				"worker.image":                          "registry.internal/autocoder:1.2.3",
				"worker.OPENAI_API_KEY":                 "sk-test",
				"worker.ANTHROPIC_API_KEY":              "ak-test",
				"worker.AUTOCODER_MODEL":                "openai:gpt-4.1",
				"worker.AUTOCODER_IMAGE_PYTHON":         "registry.internal/sandbox-python:2",
				"worker.AUTOCODER_IMAGE_GO":             "registry.internal/sandbox-go:2",
				"worker.DOCKER_HOST":                    "tcp://sandbox-host:2376",
				"worker.TEMPORAL_NAMESPACE":             "coding",
				"temporal-namespace.TEMPORAL_NAMESPACE": "coding",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := compose(t, tc.vars)
			if r.code != 0 {
				t.Fatalf("docker-compose config: exit %d: %s", r.code, tail(r.stderr))
			}
			var cf composeFile
			if err := yaml.Unmarshal([]byte(r.stdout), &cf); err != nil {
				t.Fatalf("parse config: %v\n%s", err, tail(r.stdout))
			}
			checkStructure(t, cf, repoRoot(t))
			for key, want := range tc.want {
				name, field, _ := strings.Cut(key, ".")
				s := cf.Services[name]
				got, ok := s.Environment[field]
				if field == "image" {
					got, ok = s.Image, true
				}
				if !ok || got != want {
					t.Errorf("%s = %q (set: %v), want %q", key, got, ok, want)
				}
			}
		})
	}
}

// checkStructure holds what must be true whatever the variables.
func checkStructure(t *testing.T, cf composeFile, root string) {
	t.Helper()
	var names []string
	for n := range cf.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"postgres", "temporal", "temporal-namespace", "temporal-schema", "temporal-ui", "worker", "worker-shared"}; !slices.Equal(names, want) {
		t.Fatalf("services = %v, want %v", names, want)
	}
	// Jobs run once per `up` and exit; everything else runs on.
	jobs := []string{"temporal-schema", "temporal-namespace", "worker-shared"}
	for n, s := range cf.Services {
		want := "unless-stopped"
		if slices.Contains(jobs, n) {
			want = "no"
		}
		if s.Restart != want {
			t.Errorf("%s: restart = %q, want %s", n, s.Restart, want)
		}
		if !slices.Contains(jobs, n) && (s.Healthcheck == nil || len(s.Healthcheck.Test) < 2 || s.Healthcheck.Test[0] == "NONE") {
			t.Errorf("%s: no health check: %+v", n, s.Healthcheck)
		}
	}
	// The start order Temporal's compose samples use: schema job, server,
	// namespace job; the workers need the namespace.
	for svc, deps := range map[string]map[string]string{
		"temporal-schema":    {"postgres": "service_healthy"},
		"temporal":           {"temporal-schema": "service_completed_successfully"},
		"temporal-namespace": {"temporal": "service_healthy"},
		"temporal-ui":        {"temporal": "service_healthy"},
		"worker":             {"postgres": "service_healthy", "temporal-namespace": "service_completed_successfully", "worker-shared": "service_completed_successfully"},
	} {
		for d, want := range deps {
			if c := cf.Services[svc].DependsOn[d].Condition; c != want {
				t.Errorf("%s depends on %s with condition %q, want %s", svc, d, c, want)
			}
		}
	}
	// The schema job runs a script of the checkout with temporal-sql-tool.
	scripts := filepath.Join(root, "deploy", "temporal", "scripts")
	if !slices.ContainsFunc(cf.Services["temporal-schema"].Volumes, func(m mount) bool {
		return m.Type == "bind" && filepath.Clean(m.Source) == scripts
	}) {
		t.Errorf("temporal-schema does not mount %s: %+v", scripts, cf.Services["temporal-schema"].Volumes)
	}
	// The namespace job is autocoder itself, the workers' image, so the
	// search attributes it registers are the ones the workflow sets.
	nsJob := cf.Services["temporal-namespace"]
	if nsJob.Image != cf.Services["worker"].Image {
		t.Errorf("temporal-namespace runs %s, want the workers' image %s", nsJob.Image, cf.Services["worker"].Image)
	}
	if !slices.Equal(nsJob.Command, []string{"temporal", "setup-namespace", "--retention", "720h"}) {
		t.Errorf("temporal-namespace command = %q, want [temporal setup-namespace --retention 720h]", nsJob.Command)
	}
	if got := nsJob.Environment["TEMPORAL_ADDRESS"]; got != "temporal:7233" {
		t.Errorf("temporal-namespace TEMPORAL_ADDRESS = %q, want temporal:7233", got)
	}

	w := cf.Services["worker"]
	// Fixed names or host ports would make --scale worker=N collide.
	if w.ContainerName != "" {
		t.Errorf("worker has container_name %q", w.ContainerName)
	}
	if len(w.Ports) != 0 {
		t.Errorf("worker publishes ports %v", w.Ports)
	}
	if !slices.Equal(w.Command, []string{"worker"}) {
		t.Errorf("worker command = %q, want [worker]", w.Command)
	}
	if w.Build == nil || filepath.Clean(w.Build.Context) != root {
		t.Errorf("worker build = %+v, want context %s", w.Build, root)
	}
	if !slices.Contains(w.GroupAdd, requiredEnv["DOCKER_GID"]) {
		t.Errorf("worker group_add = %v, want the docker socket group %s", w.GroupAdd, requiredEnv["DOCKER_GID"])
	}
	for k, want := range map[string]string{
		"TEMPORAL_ADDRESS":          "temporal:7233",
		"AUTOCODER_SANDBOX":         "docker",
		"PGPASSWORD":                requiredEnv["AUTOCODER_DB_PASSWORD"],
		"AUTOCODER_METRICS_ADDRESS": "0.0.0.0:9090",
	} {
		if got := w.Environment[k]; got != want {
			t.Errorf("worker %s = %q, want %q", k, got, want)
		}
	}
	u, err := url.Parse(w.Environment["AUTOCODER_DATABASE_URL"])
	if err != nil {
		t.Errorf("worker AUTOCODER_DATABASE_URL: %v", err)
	} else if u.Scheme != "postgres" || u.Host != "postgres:5432" || u.Path != "/autocoder" || u.User.Username() != "autocoder" {
		t.Errorf("worker AUTOCODER_DATABASE_URL = %s, want postgres://autocoder@postgres:5432/autocoder", u)
	}
	// The health check asks the worker's own /readyz.
	if w.Healthcheck == nil {
		t.Error("worker has no health check")
	} else if hc := strings.Join(w.Healthcheck.Test, " "); !strings.Contains(hc, "/dev/tcp/127.0.0.1/9090") || !strings.Contains(hc, "GET /readyz") {
		t.Errorf("worker health check %q does not read /readyz on the metrics port", hc)
	}
	if !hasMount(w.Volumes, "bind", "/var/run/docker.sock") {
		t.Errorf("worker does not mount the docker socket: %+v", w.Volumes)
	}
	// What sandboxes mount from the worker, the daemon finds at the same
	// path: the shared directory is a host directory at its own path, the
	// workers' since the job made it so.
	shared := w.Environment["AUTOCODER_SANDBOX_SHARED_DIR"]
	samePath := func(m mount) bool {
		return m.Type == "bind" && m.Target == shared && filepath.Clean(m.Source) == shared
	}
	if !filepath.IsAbs(shared) || !slices.ContainsFunc(w.Volumes, samePath) {
		t.Errorf("worker AUTOCODER_SANDBOX_SHARED_DIR = %q, not mounted at the same path: %+v", shared, w.Volumes)
	}
	if job := cf.Services["worker-shared"]; !slices.ContainsFunc(job.Volumes, samePath) || job.Image != w.Image {
		t.Errorf("worker-shared does not prepare %s with the workers' image: %+v", shared, job)
	}

	pg := cf.Services["postgres"]
	if !hasMount(pg.Volumes, "volume", "/var/lib/postgresql/data") {
		t.Errorf("postgres data is not on a named volume: %+v", pg.Volumes)
	}
	if _, ok := cf.Volumes["postgres-data"]; !ok {
		t.Errorf("volumes = %v, want postgres-data", cf.Volumes)
	}
	// The server reads its dynamic config from the file the repository
	// ships (TestTemporalDynamicConfig checks its content).
	tmp := cf.Services["temporal"]
	dcTarget := tmp.Environment["DYNAMIC_CONFIG_FILE_PATH"]
	if !slices.ContainsFunc(tmp.Volumes, func(m mount) bool {
		return m.Type == "bind" && m.Target == dcTarget && filepath.Clean(m.Source) == filepath.Join(root, dynamicConfigFile)
	}) {
		t.Errorf("temporal does not mount %s at %s: %+v", dynamicConfigFile, dcTarget, tmp.Volumes)
	}

	initDir := filepath.Join(root, "deploy", "postgres", "initdb")
	if !hasMount(pg.Volumes, "bind", "/docker-entrypoint-initdb.d") {
		t.Errorf("postgres has no init scripts mounted: %+v", pg.Volumes)
	}
	for _, m := range pg.Volumes {
		if m.Target == "/docker-entrypoint-initdb.d" && filepath.Clean(m.Source) != initDir {
			t.Errorf("postgres init scripts come from %s, want %s", m.Source, initDir)
		}
	}
}

func hasMount(ms []mount, typ, target string) bool {
	return slices.ContainsFunc(ms, func(m mount) bool { return m.Type == typ && m.Target == target })
}

// TestComposeRequiresSecrets checks that a missing password or socket group
// stops docker-compose before anything starts, naming the variable.
func TestComposeRequiresSecrets(t *testing.T) {
	for name := range requiredEnv {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vars := withRequired(nil)
			delete(vars, name)
			r := compose(t, vars)
			if r.code == 0 {
				t.Fatalf("docker-compose config succeeded without %s", name)
			}
			if !strings.Contains(r.stderr, name) {
				t.Errorf("error does not name %s: %s", name, tail(r.stderr))
			}
		})
	}
}

// moduleVersion is the version of a module in the repository's go.mod,
// without the "v": the version local mode embeds.
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	r := mustRun(testContext(t, time.Minute), t, os.Environ(), repoRoot(t), needTool(t, "go"), "list", "-m", "-f", "{{.Version}}", path)
	return strings.TrimPrefix(strings.TrimSpace(r.stdout), "v")
}
