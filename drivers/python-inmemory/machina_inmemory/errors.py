"""The error type of the driver: a gRPC status code and a message.

Driver code raises :class:`DriverError`; the server turns it into the call's
status. Messages are for humans (docs/driver-api.md §7.1) and never contain
secret values (§8.3).
"""

from __future__ import annotations

import grpc


class DriverError(Exception):
    """A failed call: the status ``code`` the core acts on and a ``message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> DriverError:
    """INVALID_ARGUMENT; ``message`` names the field path (§4.10)."""
    return DriverError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> DriverError:
    """NOT_FOUND: no VM for the machine (§6.4.3)."""
    return DriverError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> DriverError:
    """ALREADY_EXISTS: an incompatible VM has the machine's name (§6.1.3)."""
    return DriverError(grpc.StatusCode.ALREADY_EXISTS, message)


def aborted(message: str) -> DriverError:
    """ABORTED: another call for the same machine is in flight (§9)."""
    return DriverError(grpc.StatusCode.ABORTED, message)
