module github.com/machina-io/machina/drivers/virtualnode

go 1.26.0

replace github.com/machina-io/machina/proto => ../../proto
replace github.com/machina-io/machina/sdk => ../../sdk
