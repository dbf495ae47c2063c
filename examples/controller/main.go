// Command controller runs the BMCJob controller of the bmckit Kubernetes kit
// (contrib/kubernetes: its controller package, with the BMCJob type of its
// api/v1alpha1) in a controller-runtime manager against the cluster of the
// current kubeconfig (--kubeconfig, $KUBECONFIG, in-cluster config or
// ~/.kube/config).
//
//	kubectl apply -f ../../contrib/kubernetes/config/crd/
//	go run . --lease-namespace=default
//	go run . --simulator=2   # and 2 simulated Redfish BMCs on 127.0.0.1 (README)
//
// Redfish (redfish://, redfish+http://, redfish+https://) and IPMI (ipmi://)
// BMCs are supported. Leader election is on by default; metrics and health
// listen on 127.0.0.1; log lines carry timestamps.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/machine"
	"github.com/bmckit/bmckit/contrib/kubernetes/rollout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
)

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// run runs the controller until ctx ends; args are the command line's
// arguments, log lines go to logOut.
func run(ctx context.Context, args []string, logOut io.Writer) error {
	flag := flag.NewFlagSet("controller", flag.ContinueOnError)
	kubeconfig := flag.String("kubeconfig", "", "path of a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	leaseNS := flag.String("lease-namespace", envOr("POD_NAMESPACE", "default"), "namespace of the per-system Leases (and of the leader-election Lease)")
	storePath := flag.String("store", "", "bbolt file for a job.Runner's jobs and the system locks; empty: no Runner, and systems are locked with Leases")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", `address of /metrics ("0" disables it)`)
	probeAddr := flag.String("health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	leaderElect := flag.Bool("leader-elect", true, "elect a leader for the BMCJob controller (the Runner runs on every replica anyway); replicas without it are kept apart by the system Leases, which name the job and the replica")
	verbosity := flag.Int("v", 0, "log verbosity (1: conflicts and other debug lines)")
	simulators := flag.Int("simulator", 0, "start this many simulated Redfish BMCs on 127.0.0.1 and write their credentials to the Secret bmckit-simulator in --lease-namespace (see README)")
	if err := flag.Parse(args); err != nil {
		return err
	}

	log := funcr.New(func(prefix, args string) { fmt.Fprintln(logOut, prefix, args) }, funcr.Options{Verbosity: *verbosity, LogTimestamp: true})
	ctrl.SetLogger(log)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "bmckit-bmcjob-controller",
		LeaderElectionNamespace: *leaseNS,
	})
	if err != nil {
		return err
	}

	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{}))
	ipmiDialer, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		return err
	}
	dialer.Register("ipmi", ipmiDialer)

	var store storage.Store
	if *storePath != "" {
		bs, err := boltstore.Open(*storePath, boltstore.Options{})
		if err != nil {
			return err
		}
		defer closeStore(log, bs)
		store = bs
	}
	ctl, err := controller.Setup(mgr, controller.Options[*v1alpha1.BMCJob]{
		NewObject: func() *v1alpha1.BMCJob { return &v1alpha1.BMCJob{} },
		Dialer:    &dialer, Store: store, Namespace: *leaseNS,
	})
	if err != nil {
		return err
	}
	// Machines: the monitor reads each one's BMC through the jobs' pool.
	if _, err := machine.Setup(mgr, machine.Options{Pool: ctl.Stepper.Pool()}); err != nil {
		return err
	}
	// BMCRollouts: one job template over the Machines of a label, run as
	// BMCJobs by the controller above (docs/kubernetes.md, "Rollouts").
	if _, err := rollout.Setup(mgr, rollout.Options{Stepper: ctl.Stepper}); err != nil {
		return err
	}
	if *simulators > 0 {
		stop, err := startSimulators(mgr, log, *leaseNS, *simulators)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func closeStore(log logr.Logger, s *boltstore.Store) {
	if err := s.Close(); err != nil {
		log.Error(err, "closing the store")
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
