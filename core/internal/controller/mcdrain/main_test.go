package mcdrain_test

import (
	"os"
	"testing"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

func TestMain(m *testing.M) {
	// The controllers' logs go to stderr when MACHINA_TEST_LOG is set.
	controllertest.UseTestLogger()
	os.Exit(m.Run())
}
