package driver

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// apiPackage is the proto package, and so the version, of the Driver API
// this client speaks.
var apiPackage = string(driverv1alpha1.File_machina_driver_v1alpha1_identity_proto.Package())

// ErrNotServed is returned by Connect when the driver answers UNIMPLEMENTED
// to an identity RPC: it does not serve this version of the Driver API.
var ErrNotServed = fmt.Errorf("driver does not serve %s", apiPackage)

// Code returns the gRPC code of err: OK for nil, the code of a gRPC status
// (also when wrapped), DEADLINE_EXCEEDED and CANCELLED for the context
// errors, and UNKNOWN for anything else.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var withStatus interface{ GRPCStatus() *status.Status }
	if errors.As(err, &withStatus) {
		return status.Code(err)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Unknown
}

// IsTransient reports whether code means "the call may succeed if repeated
// soon": the driver was unreachable (UNAVAILABLE), too slow
// (DEADLINE_EXCEEDED), busy with the same machine (ABORTED), or failed in an
// unknown way (UNKNOWN). This is the Driver API's general classification;
// what to do about it is the caller's decision.
func IsTransient(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Unknown:
		return true
	}
	return false
}

// contextError turns a context error met before a call was sent into the
// gRPC status error the call itself would have produced, so that callers
// see one kind of error whatever stage failed.
func contextError(err error) error {
	return status.FromContextError(err).Err()
}

// unimplementedError is the local answer to an optional RPC whose
// capability the driver did not advertise.
func unimplementedError(driverName string, t driverv1alpha1.Capability_Type, rpc string) error {
	return status.Errorf(codes.Unimplemented, "driver %q does not advertise capability %s, so %s is not called", driverName, t, rpc)
}
