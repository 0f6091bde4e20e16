package machinedeployment_test

import "github.com/machina-io/machina/core/internal/controller/controllertest"

// The controllers' logs go to stderr when MACHINA_TEST_LOG is set, and are
// dropped otherwise.
func init() { controllertest.UseTestLogger() }
