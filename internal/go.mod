module github.com/machina-io/machina/internal

go 1.26.0
