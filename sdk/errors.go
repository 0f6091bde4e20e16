package sdk

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The helpers below build gRPC status errors with the codes the Driver API
// gives a meaning to. They are shorthands for status.Errorf; plain status
// errors work just as well. The core acts on the code only, never on the
// message, and the message must not contain a secret value.

// InvalidArgument reports a request the driver cannot act on, e.g. a
// provider_spec it does not understand. The core retries after a while; the
// user has to fix the MachineClass.
func InvalidArgument(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// NotFound reports that the machine's VM does not exist (GetMachineStatus).
func NotFound(format string, args ...any) error {
	return status.Errorf(codes.NotFound, format, args...)
}

// AlreadyExists reports that a VM of the machine's name exists with a
// provider_spec that is incompatible with the request (CreateMachine).
func AlreadyExists(format string, args ...any) error {
	return status.Errorf(codes.AlreadyExists, format, args...)
}

// ResourceExhausted reports that the provider is out of capacity or quota;
// the core retries CreateMachine only after a long delay.
func ResourceExhausted(format string, args ...any) error {
	return status.Errorf(codes.ResourceExhausted, format, args...)
}

// Unavailable reports a transient failure (the provider's API cannot be
// reached); the core retries soon.
func Unavailable(format string, args ...any) error {
	return status.Errorf(codes.Unavailable, format, args...)
}

// Aborted reports that another operation on the same machine is in flight
// in the driver; the core retries soon.
func Aborted(format string, args ...any) error {
	return status.Errorf(codes.Aborted, format, args...)
}

// DeadlineExceeded reports that the provider did not answer in time; the
// operation may still complete, and the core retries soon with the same
// request.
func DeadlineExceeded(format string, args ...any) error {
	return status.Errorf(codes.DeadlineExceeded, format, args...)
}

// FailedPrecondition reports that the VM is not in a state that allows the
// operation.
func FailedPrecondition(format string, args ...any) error {
	return status.Errorf(codes.FailedPrecondition, format, args...)
}

// PermissionDenied reports that the credentials lack a permission.
func PermissionDenied(format string, args ...any) error {
	return status.Errorf(codes.PermissionDenied, format, args...)
}

// Unauthenticated reports that the credentials are missing or invalid.
func Unauthenticated(format string, args ...any) error {
	return status.Errorf(codes.Unauthenticated, format, args...)
}

// Internal reports a failure inside the driver or the provider.
func Internal(format string, args ...any) error {
	return status.Errorf(codes.Internal, format, args...)
}

// Unimplemented reports an RPC the driver does not implement. The SDK
// answers it by itself for optional RPCs that are not advertised.
func Unimplemented(format string, args ...any) error {
	return status.Errorf(codes.Unimplemented, format, args...)
}
