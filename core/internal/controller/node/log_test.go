package node_test

import "github.com/machina-io/machina/core/internal/controller/controllertest"

// Controller logs go to stderr when MACHINA_TEST_LOG is set.
func init() { controllertest.UseTestLogger() }
