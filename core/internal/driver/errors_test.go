package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"status", status.Error(codes.NotFound, "no VM"), codes.NotFound},
		{"wrapped status", fmt.Errorf("status of m1: %w", status.Error(codes.Aborted, "busy")), codes.Aborted},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"canceled", context.Canceled, codes.Canceled},
		{"other", errors.New("boom"), codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Code(tt.err))
		})
	}
}

func TestIsTransient(t *testing.T) {
	transient := map[codes.Code]bool{
		codes.Unavailable: true, codes.DeadlineExceeded: true, codes.Aborted: true, codes.Unknown: true,
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		assert.Equal(t, transient[c], IsTransient(c), c.String())
	}
}

func TestErrNotServedNamesThePackage(t *testing.T) {
	assert.Equal(t, "driver does not serve machina.driver.v1alpha1", ErrNotServed.Error())
}
