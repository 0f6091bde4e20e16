module github.com/machina-io/machina/core

go 1.26.0

replace github.com/machina-io/machina/proto => ../proto
replace github.com/machina-io/machina/sdk => ../sdk
