package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	bmcprom "github.com/bmckit/bmckit/contrib/prometheus"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// Options configures [New] and [Setup]. NewObject and Dialer are required.
type Options[O Object] struct {
	// NewObject returns an empty O: the kind the controller reconciles.
	// Required.
	NewObject func() O
	// Name names the controller (logs, metrics, the event recorder
	// "bmckit-<name>"): Reconciler.Name. Defaults to the lower-case kind of
	// O.
	Name string
	// MaxConcurrentReconciles is the controller's number of workers
	// (Reconciler.MaxConcurrentReconciles). Defaults to
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Dialer opens BMC connections (a bmc.SchemeDialer with the drivers you
	// import, or a fake.Fleet in tests). Required.
	Dialer bmc.Dialer
	// Store, if set, is the store of a job.Runner that Setup adds to the
	// manager, for jobs submitted outside BMCJobs (runner.Submit). The
	// replicas of the controller must share it (storage/sqlstore); the
	// Runner then runs on every replica (NeedLeaderElection is false).
	Store storage.Store
	// Locks keeps one job per system on the BMCJob path. Defaults to
	// syslock.NewStoreLocker over Store when Store is set (so BMCJobs and the
	// Runner's jobs exclude each other: they share the lock records), and
	// otherwise to a leaselock.Locker in Namespace.
	Locks syslock.Locker
	// Namespace holds the lease locker's Leases. Required when Locks and
	// Store are nil.
	Namespace string
	// Credentials resolves the "namespace/name" references [JobFor] makes.
	// Defaults to a secretcreds.Store: its Resolver reads the manager's
	// (cached) client, and its Client, uncached, reads and writes the
	// pending credentials of a rotation (rotateCredentials tasks; those
	// writes need the opt-in RBAC of config/rotation). Without a rotation
	// it reads exactly what a secretcreds.Resolver reads.
	Credentials bmc.CredentialsResolver
	// Registerer receives the Prometheus adapter's metrics. Defaults to
	// controller-runtime's registry, which the manager serves on /metrics.
	Registerer prometheus.Registerer
	// Stepper holds the Stepper's other knobs (poll intervals, timeouts,
	// retry policy, boot tracker); its Dialer, Credentials, Locks, Observer
	// and Logger are set by Setup.
	Stepper job.StepperConfig
	// Runner holds the Runner's other knobs; its Store, Dialer,
	// Credentials, Observer and Logger are set by Setup, and its Kinds
	// (custom task kinds) default to Stepper.Kinds.
	Runner job.Config
}

// Controller is what [New] built and added to the manager.
type Controller[O Object] struct {
	Reconciler *Reconciler[O]
	Stepper    *job.Stepper
	// Runner is nil unless Options.Store was set.
	Runner  *job.Runner
	Metrics *bmcprom.Metrics
}

// Setup builds the controller of O's objects and adds it to mgr: [New],
// then the Reconciler registered as O's controller
// ([Reconciler.SetupWithManager]). A host with its own Reconcile around
// [Reconciler.Step] calls New instead, and registers its own controller.
func Setup[O Object](mgr ctrl.Manager, opts Options[O]) (*Controller[O], error) {
	c, err := New(mgr, opts)
	if err != nil {
		return nil, err
	}
	if err := c.Reconciler.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return c, nil
}

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=bmckit-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// New builds everything the controller of O's objects needs and adds it to
// mgr, but registers no controller: the Reconciler (with its Stepper, woken
// by BMC power events through [WakeFunc]), the system locks, the
// credentials resolver, the Stepper's idle-connection sweeper, the Runner
// (when Options.Store is set) as a Runnable with the healthz check
// "bmckit-runner", and the Prometheus adapter's metrics on the manager's
// /metrics. [Setup] registers the Reconciler as O's controller; a host
// with its own Reconcile registers its own (see [Reconciler.SetupWithManager])
// and calls c.Reconciler.Step.
//
// The markers above are the permissions New's defaults need
// (config/rbac/role.yaml is generated from them and those of
// Reconciler.SetupWithManager): the Leases of the lease locker in
// Options.Namespace (a Role: its namespace bmckit-system stands for
// yours), the Secrets the credentials resolver reads through the manager's
// cache, which lists and watches them (cluster-wide, unless the manager's
// cache is restricted to some namespaces: then bind the ClusterRole with a
// RoleBinding in each), and the events of the manager's GetEventRecorder
// (events.k8s.io/v1).
func New[O Object](mgr ctrl.Manager, opts Options[O]) (*Controller[O], error) {
	if opts.NewObject == nil {
		return nil, errors.New("controller: Options.NewObject is required")
	}
	if opts.Dialer == nil {
		return nil, errors.New("controller: Options.Dialer is required")
	}
	name := opts.Name
	if name == "" {
		var err error
		if name, err = kindName(mgr, opts.NewObject()); err != nil {
			return nil, err
		}
	}
	log := mgr.GetLogger().WithName("bmckit")
	metrics := bmcprom.New(bmcprom.Options{})
	reg := opts.Registerer
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if err := reg.Register(metrics); err != nil {
		return nil, fmt.Errorf("registering bmckit metrics: %w", err)
	}
	creds := opts.Credentials
	if creds == nil {
		// The Store, not only the Resolver, so that rotateCredentials runs
		// in the kit (docs/kubernetes.md, "Credential rotation").
		direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
		if err != nil {
			return nil, fmt.Errorf("controller: a client for the credentials store: %w", err)
		}
		creds = secretcreds.Store{Resolver: secretcreds.Resolver{Reader: mgr.GetClient()}, Client: direct}
	}
	locks := opts.Locks
	switch {
	case locks != nil:
	case opts.Store != nil:
		locks = syslock.NewStoreLocker(opts.Store, syslock.StoreLockerConfig{KeyPrefix: opts.Runner.KeyPrefix, Clock: opts.Runner.Clock})
	default:
		ll, err := leaselock.New(mgr.GetClient(), leaselock.Config{Namespace: opts.Namespace, Clock: opts.Stepper.Clock, Reader: mgr.GetAPIReader()})
		if err != nil {
			return nil, err
		}
		locks = ll
	}
	sc := opts.Stepper
	sc.Dialer, sc.Credentials, sc.Locks, sc.Observer, sc.Logger = opts.Dialer, creds, locks, metrics.JobObserver(), log.WithName("stepper")
	// BMC events (bmc.PowerWatcher drivers) wake a waiting job at once.
	wakes := make(chan event.GenericEvent, 1024)
	sc.Wake = WakeFunc(opts.NewObject, wakes)
	stepper, err := job.NewStepper(sc)
	if err != nil {
		return nil, err
	}
	c := &Controller[O]{Stepper: stepper, Metrics: metrics, Reconciler: &Reconciler[O]{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Stepper: stepper, NewObject: opts.NewObject, Wakes: wakes,
		Events: mgr.GetEventRecorder("bmckit-" + name), Name: name, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}}
	if err := mgr.Add(&poolSweeper{stepper: stepper, every: sweepInterval(sc.IdleTimeout)}); err != nil {
		return nil, err
	}
	if opts.Store != nil {
		rc := opts.Runner
		rc.Store, rc.Dialer, rc.Credentials, rc.Observer, rc.Logger = opts.Store, opts.Dialer, creds, metrics.JobObserver(), log.WithName("runner")
		if rc.Kinds == nil {
			rc.Kinds = opts.Stepper.Kinds // the program's custom task kinds, for both paths
		}
		runner, err := job.NewRunner(rc)
		if err != nil {
			return nil, err
		}
		// The Runner is a Runnable that needs no leader election
		// (Runner.NeedLeaderElection): every replica runs it.
		if err := mgr.Add(runner); err != nil {
			return nil, err
		}
		if err := mgr.AddHealthzCheck("bmckit-runner", runner.Healthz); err != nil {
			return nil, err
		}
		c.Runner = runner
	}
	return c, nil
}

// kindName is the default name of the controller of obj's type: its kind
// in lower case, as the manager's scheme knows it.
func kindName(mgr ctrl.Manager, obj client.Object) (string, error) {
	gvk, err := mgr.GetClient().GroupVersionKindFor(obj)
	if err != nil {
		return "", fmt.Errorf("controller: the manager's scheme does not know %T: %w", obj, err)
	}
	return strings.ToLower(gvk.Kind), nil
}

// poolSweeper closes the Stepper's idle BMC connections and closes all of
// them when the manager stops. The pool also sweeps when a connection is
// asked for, but a controller with no job left asks for none: without the
// ticker its last sessions would stay logged in. It runs on every replica:
// each has its own connections.
type poolSweeper struct {
	stepper *job.Stepper
	every   time.Duration
}

var (
	_ manager.Runnable               = (*poolSweeper)(nil)
	_ manager.LeaderElectionRunnable = (*poolSweeper)(nil)
	_ manager.Runnable               = (*job.Runner)(nil)
	_ manager.LeaderElectionRunnable = (*job.Runner)(nil)
)

func sweepInterval(idle time.Duration) time.Duration {
	if idle <= 0 {
		idle = 2 * time.Minute // the Stepper's default IdleTimeout
	}
	return max(idle/2, time.Second)
}

func (p *poolSweeper) Start(ctx context.Context) error {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.stepper.Close(context.WithoutCancel(ctx))
		case <-t.C:
			p.stepper.Pool().CloseIdle(ctx)
		}
	}
}

func (p *poolSweeper) NeedLeaderElection() bool { return false }
