package bmclib_test

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// BenchmarkIPMILatency measures per-operation latency of the native IPMI
// driver (bmc/ipmi, go-ipmi) and of the bmclib adapter over the real
// ipmitool against the same peers, in one run:
//
//	go test -run '^$' -bench IPMILatency -benchtime 50x ./bmc/bmclib/
//
// Operations: power-status (PowerState), power-off+on (SetPower off on a
// server that is on, then on: two changes per iteration), set-boot-pxe
// (SetBootOverride pxe once), dial (open a session and close it).
func BenchmarkIPMILatency(b *testing.B) {
	ctx := context.Background()
	gosim := ipmitest.NewServer(b, ipmitest.Options{PoweredOn: true})
	osim := ipmitest.StartOpenIPMI(b, ipmitest.OpenIPMIOptions{PoweredOn: true})
	tool := ipmitoolDialer(b, bmclib.IPMIToolOptions{CipherSuite: 3})
	native, err := ipmi.NewDialer(ipmi.Options{CipherSuites: []int{3}})
	if err != nil {
		b.Fatal(err)
	}
	peers := []struct {
		name  string
		ep    bmc.Endpoint
		creds bmc.Credentials
	}{
		{"ipmi_sim", osim.Endpoint, osim.Credentials},
		{"go-ipmi-sim", gosim.Endpoint, gosim.Credentials},
	}
	drivers := []struct {
		name string
		d    bmc.Dialer
	}{
		{"native", native},
		{"bmclib-ipmitool", tool},
	}
	for _, p := range peers {
		for _, dr := range drivers {
			b.Run(p.name+"/"+dr.name+"/dial", func(b *testing.B) {
				for b.Loop() {
					drv, err := dr.d.Dial(ctx, p.ep, p.creds)
					if err != nil {
						b.Fatal(err)
					}
					if err := drv.Close(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			drv, err := dr.d.Dial(ctx, p.ep, p.creds)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(p.name+"/"+dr.name+"/power-status", func(b *testing.B) {
				for b.Loop() {
					if _, err := drv.PowerState(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(p.name+"/"+dr.name+"/power-off+on", func(b *testing.B) {
				for b.Loop() {
					if err := drv.SetPower(ctx, bmc.PowerActionOff); err != nil {
						b.Fatal(err)
					}
					if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(p.name+"/"+dr.name+"/set-boot-pxe", func(b *testing.B) {
				s := drv.(bmc.BootOverrideSetter)
				for b.Loop() {
					if err := s.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
						b.Fatal(err)
					}
				}
			})
			if err := drv.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
