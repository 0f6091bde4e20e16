module github.com/machina-io/machina/sdk

go 1.26.0

replace github.com/machina-io/machina/proto => ../proto
