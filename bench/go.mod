module github.com/bmckit/bmckit/bench

go 1.25.0

replace (
	github.com/bmckit/bmckit => ..
	github.com/bmckit/bmckit/bmc/ipmi => ../bmc/ipmi
	github.com/bmckit/bmckit/bmc/redfish => ../bmc/redfish
	github.com/bmckit/bmckit/storage/sqlstore => ../storage/sqlstore
)

require (
	github.com/bmckit/bmckit v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/bmc/redfish v0.0.0-00010101000000-000000000000
	github.com/bmckit/bmckit/storage/sqlstore v0.0.0-00010101000000-000000000000
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/stmcginnis/gofish v0.26.0 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/time v0.9.0 // indirect
)
