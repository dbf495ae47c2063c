package main

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// SimulatorSecret is the Secret --simulator writes the simulated BMCs'
// credentials to (credentialsRef: bmckit-simulator).
const SimulatorSecret = "bmckit-simulator"

// startSimulators starts n simulated Redfish BMCs (bmc/redfish/redfishtest,
// plain HTTP on 127.0.0.1, power changes taking 2 s), and, once the manager
// runs, writes their credentials to the Secret SimulatorSecret in ns and
// logs each BMC's address for spec.bmc (never the password).
func startSimulators(mgr manager.Manager, log logr.Logger, ns string, n int) (func(), error) {
	cfg := redfishtest.Realistic()
	var sims []*redfishtest.Server
	for i := 0; i < n; i++ {
		sim := redfishtest.NewServer(cfg)
		sim.SetPower("1", "On")
		sims = append(sims, sim)
	}
	stop := func() {
		for _, s := range sims {
			s.Close()
		}
	}
	creds := sims[0].Credentials()
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: SimulatorSecret}}
		sec.Data = map[string][]byte{"username": []byte(creds.Username), "password": []byte(creds.Password)}
		c := mgr.GetClient()
		if err := c.Create(ctx, sec); err != nil {
			if err := c.Update(ctx, sec); err != nil {
				return fmt.Errorf("writing the simulator Secret %s/%s: %w", ns, SimulatorSecret, err)
			}
		}
		for i, s := range sims {
			log.Info("simulated Redfish BMC", "n", i+1, "spec.bmc", s.Address("1"), "credentialsRef", SimulatorSecret)
		}
		<-ctx.Done()
		return nil
	}))
	return stop, err
}
