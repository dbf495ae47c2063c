module github.com/bmckit/bmckit/examples

go 1.24.0

replace (
	github.com/bmckit/bmckit => ..
	github.com/bmckit/bmckit/bmc/redfish => ../bmc/redfish
)

require (
	github.com/bmckit/bmckit v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/bmc/redfish v0.0.0-00010101000000-000000000000
	github.com/go-logr/logr v1.4.3
)

require (
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/stmcginnis/gofish v0.26.0 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.org/x/time v0.9.0 // indirect
)
