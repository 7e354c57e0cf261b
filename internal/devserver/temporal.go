package devserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	clusterName = "active"
	storeName   = "sqlite-default"
)

// newTemporalServer prepares the SQLite file (schema and namespace) and builds
// a server running every service in this process.
func newTemporalServer(dbPath string, frontendPort int, opts Options, logLevel slog.Leveler) (temporal.Server, error) {
	sqlConf := sqlConfig(dbPath)
	if err := prepareDatabase(sqlConf, opts); err != nil {
		return nil, err
	}
	// Internal services only talk to each other over loopback. The frontend's
	// HTTP API is enabled too: without it the server warns at every start.
	ports, err := freePorts(0, 0, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("pick internal ports: %w", err)
	}
	addrs := map[primitives.ServiceName]int{
		primitives.FrontendService: frontendPort,
		primitives.HistoryService:  ports[0],
		primitives.MatchingService: ports[1],
		primitives.WorkerService:   ports[2],
	}
	conf := serverConfig(sqlConf, addrs, ports[3])
	hosts := make(map[primitives.ServiceName]static.Hosts, len(addrs))
	for svc, port := range addrs {
		hosts[svc] = static.SingleLocalHost(hostPort(port))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(newServerLogger(opts.Logger, logLevel)),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(dynamicConfig(opts.clusterQueueReads)),
	)
	if err != nil {
		return nil, fmt.Errorf("build temporal server: %w", err)
	}
	return srv, nil
}

// queueReadsPerSecond is how often the history shard may read its task
// queues (see dynamicConfig).
const queueReadsPerSecond = 1000

// DynamicConfig is the dynamic configuration local mode's server runs with.
// The compose deployment's server reads the same settings from
// deploy/temporal/dynamicconfig.yaml, so a task behaves the same in both.
func DynamicConfig() dynamicconfig.StaticClient { return dynamicConfig(false) }

// dynamicConfig sizes the server for one process on one machine. With
// clusterQueueReads the task queues keep the rate sized for clusters;
// benchmarks compare against it.
func dynamicConfig(clusterQueueReads bool) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// The default host-level cache of 128k executions is sized for
		// servers, not for a process shared with the agent.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8192,
		// The UI issues many list/count calls; the default of 10/s throttles it.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// New tasks go to one partition per task queue: partitions spread
		// a queue's load over the hosts of a cluster, and each keeps its
		// own backlog, so waiting tasks (sandbox runs waiting for a slot)
		// would start in no particular order. In one, they start in
		// arrival order. All partitions are still read, so a backlog
		// written by an earlier version drains.
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
	if clusterQueueReads {
		return dc
	}
	// Every workflow task, activity task, timer and visibility update
	// passes through its history shard's queue, which reads new entries
	// at most 20 times a second by default. A cluster spreads the load
	// over hundreds of shards; this server has one, so once a few tasks
	// run, every dispatch waits up to 50 ms for the next read
	// (BenchmarkRoundTrip). Reads still happen only when an entry is
	// written or due.
	for _, k := range []dynamicconfig.Key{
		dynamicconfig.TransferProcessorMaxPollRPS.Key(),
		dynamicconfig.TimerProcessorMaxPollRPS.Key(),
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(),
	} {
		dc[k] = queueReadsPerSecond
	}
	return dc
}

func sqlConfig(dbPath string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		ConnectAttributes: map[string]string{
			"mode": "rwc",
			// WAL keeps committed transactions across a process crash while
			// avoiding an fsync per commit (synchronous=normal).
			"journal_mode": "wal",
			"synchronous":  "normal",
		},
	}
}

// prepareDatabase creates the schema when the file is new and registers the
// namespace when it is missing. Writing the namespace row directly, before
// the server starts, makes it usable immediately instead of after the
// namespace cache refresh that RegisterNamespace would need.
func prepareDatabase(sqlConf *config.SQL, opts Options) error {
	if _, err := os.Stat(sqlConf.DatabaseName); errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(sqlConf); err != nil {
			// A half-written schema would fail every later start.
			removeDatabase(sqlConf.DatabaseName)
			return fmt.Errorf("create schema: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("stat database: %w", err)
	}
	// Search attributes given here only take effect when the namespace is
	// created; ensureSearchAttributes covers an existing namespace.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return fmt.Errorf("namespace config: %w", err)
	}
	ns.Detail.Config.Retention = timestamp.DurationPtr(opts.Retention)
	if err := sqliteschema.CreateNamespaces(sqlConf, ns); err != nil {
		return fmt.Errorf("register namespace: %w", err)
	}
	return nil
}

func removeDatabase(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

func serverConfig(sqlConf *config.SQL, ports map[primitives.ServiceName]int, httpPort int) *config.Config {
	frontend := hostPort(ports[primitives.FrontendService])
	conf := &config.Config{}
	conf.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host}
	conf.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  storeName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{storeName: {SQL: sqlConf}},
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            hostPort(httpPort),
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = make(map[string]config.Service, len(ports))
	for svc, port := range ports {
		conf.Services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: host}}
	}
	fe := conf.Services[string(primitives.FrontendService)]
	fe.RPC.HTTPPort = httpPort
	conf.Services[string(primitives.FrontendService)] = fe
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's system workflows dial the frontend through this.
	conf.PublicClient.HostPort = frontend
	return conf
}

func hostPort(port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
