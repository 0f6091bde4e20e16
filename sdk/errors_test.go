package sdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestErrorHelpers(t *testing.T) {
	helpers := map[codes.Code]func(string, ...any) error{
		codes.InvalidArgument:    InvalidArgument,
		codes.NotFound:           NotFound,
		codes.AlreadyExists:      AlreadyExists,
		codes.ResourceExhausted:  ResourceExhausted,
		codes.Unavailable:        Unavailable,
		codes.Aborted:            Aborted,
		codes.DeadlineExceeded:   DeadlineExceeded,
		codes.FailedPrecondition: FailedPrecondition,
		codes.PermissionDenied:   PermissionDenied,
		codes.Unauthenticated:    Unauthenticated,
		codes.Internal:           Internal,
		codes.Unimplemented:      Unimplemented,
	}
	for code, helper := range helpers {
		t.Run(code.String(), func(t *testing.T) {
			st := status.Convert(helper("machine %q: %d", "m-1", 7))
			assert.Equal(t, code, st.Code())
			assert.Equal(t, `machine "m-1": 7`, st.Message())
		})
	}
}
