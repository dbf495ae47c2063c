module github.com/bmckit/bmckit/bmc/redfish

go 1.24

replace github.com/bmckit/bmckit => ../..

require (
	github.com/bmckit/bmckit v0.0.0-00010101000000-000000000000
	github.com/go-logr/logr v1.4.3
	github.com/stmcginnis/gofish v0.26.0
	github.com/stretchr/testify v1.11.1
	golang.org/x/time v0.9.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
