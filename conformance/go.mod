module github.com/machina-io/machina/conformance

go 1.26.0

replace github.com/machina-io/machina/proto => ../proto
