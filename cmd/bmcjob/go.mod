module github.com/bmckit/bmckit/cmd/bmcjob

go 1.24.0

// Development only: scripts/release.sh drops these replace directives in
// the release commit it tags (go install MODULE@VERSION refuses a module
// whose go.mod has any) and puts them back in the commit after it.
replace (
	github.com/bmckit/bmckit => ../..
	github.com/bmckit/bmckit/bmc/ipmi => ../../bmc/ipmi
	github.com/bmckit/bmckit/bmc/redfish => ../../bmc/redfish
	github.com/bmckit/bmckit/oneshot => ../../oneshot
)

require (
	github.com/bmckit/bmckit v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/bmc/ipmi v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/bmc/redfish v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/oneshot v0.0.0-00010101000000-000000000000
	golang.org/x/term v0.34.0
)

require (
	github.com/bougou/go-ipmi v0.9.0 // indirect
	github.com/fatih/color v1.15.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-ole/go-ole v1.3.0 // indirect
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/google/uuid v1.1.2 // indirect
	github.com/kr/pretty v0.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/olekukonko/errors v1.1.0 // indirect
	github.com/olekukonko/ll v0.0.9 // indirect
	github.com/olekukonko/tablewriter v1.0.9 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
	github.com/stmcginnis/gofish v0.26.0 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.org/x/time v0.9.0 // indirect
)
