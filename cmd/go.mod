module github.com/machina-io/machina/cmd

go 1.26.0

replace github.com/machina-io/machina/proto => ../proto
replace github.com/machina-io/machina/sdk => ../sdk
replace github.com/machina-io/machina/core => ../core
replace github.com/machina-io/machina/conformance => ../conformance
