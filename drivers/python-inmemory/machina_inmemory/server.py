"""gRPC server of the driver: identity, call logging, endpoint, shutdown.

Implements the process rules of docs/driver-api.md §2: the endpoint from
``--endpoint``, else ``MACHINA_DRIVER_ENDPOINT``, else the default; a Unix
socket with mode 0600 after a stale socket is removed; TCP only when asked
for; on SIGTERM or SIGINT a graceful stop in which calls in flight finish,
then the socket is removed and the process exits with status 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from concurrent import futures
from typing import Any, Callable, Sequence

import google.protobuf
import grpc

from machina.driver.v1alpha1 import identity_pb2, identity_pb2_grpc, machine_pb2_grpc

from . import sanitize
from .driver import InMemoryDriver
from .errors import DriverError

NAME = "python-inmemory.driver.machina.io"
VERSION = "v0.1.0"
ENDPOINT_ENV = "MACHINA_DRIVER_ENDPOINT"
DEFAULT_ENDPOINT = "unix:///var/run/machina/driver.sock"
# The MachineClass provider values the driver serves: a manager with
# several drivers routes a class to the driver that lists its provider.
PROVIDERS = ("python-inmemory",)

# sun_path holds 108 bytes including the terminating NUL (§2.2).
MAX_SOCKET_PATH = 107

CAPABILITIES = (
    identity_pb2.Capability.TYPE_LIST_MACHINES,
    identity_pb2.Capability.TYPE_GET_VOLUME_IDS,
    identity_pb2.Capability.TYPE_UPDATE_MACHINE,
)

log = logging.getLogger("machina.python-inmemory")

# The signals that stop the driver gracefully (§2.7).
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class EndpointError(Exception):
    """The endpoint cannot be used; the message names the value."""


class IdentityServicer(identity_pb2_grpc.IdentityServiceServicer):
    """IdentityService (§5): fixed name, version and capabilities; always ready."""

    def GetPluginInfo(self, request: Any, context: grpc.ServicerContext) -> identity_pb2.GetPluginInfoResponse:
        return identity_pb2.GetPluginInfoResponse(
            name=NAME,
            vendor_version=VERSION,
            providers=list(PROVIDERS),
            manifest={
                "language": "python",
                "python": platform.python_version(),
                "grpcio": grpc.__version__,
                "protobuf": google.protobuf.__version__,
            },
        )

    def GetPluginCapabilities(
        self, request: Any, context: grpc.ServicerContext
    ) -> identity_pb2.GetPluginCapabilitiesResponse:
        return identity_pb2.GetPluginCapabilitiesResponse(
            capabilities=[identity_pb2.Capability(type=t) for t in CAPABILITIES]
        )

    def Probe(self, request: Any, context: grpc.ServicerContext) -> identity_pb2.ProbeResponse:
        # An in-memory provider has nothing to wait for; unset means ready.
        return identity_pb2.ProbeResponse()


class MachineServicer(machine_pb2_grpc.MachineServiceServicer):
    """MachineService: logs each call, stripped of secrets, and maps errors to statuses."""

    def __init__(self, driver: InMemoryDriver) -> None:
        self._driver = driver

    def _call(self, method: str, handler: Callable[[Any], Any], request: Any, context: grpc.ServicerContext) -> Any:
        start = time.monotonic()
        response, code, message = None, grpc.StatusCode.OK, ""
        try:
            response = handler(request)
        except DriverError as err:
            code, message = err.code, err.message
        except Exception:  # A bug must not kill the server; the core retries.
            log.exception("method=%s panic", method)
            code, message = grpc.StatusCode.INTERNAL, f"internal error in {method}"
        # As the Go SDK and the core: the call at info, its request (stripped
        # of secrets) only at debug level.
        machine = ""
        if "machine" in request.DESCRIPTOR.fields_by_name and request.HasField("machine"):
            machine = f" machine={request.machine.namespace}/{request.machine.name}"
        payload = f" request={sanitize.to_text(request)}" if log.isEnabledFor(logging.DEBUG) else ""
        log.info(
            "method=%s code=%s duration=%.3fs%s%s%s",
            method,
            code.name,
            time.monotonic() - start,
            machine,
            payload,
            f" error={message!r}" if message else "",
        )
        if code is not grpc.StatusCode.OK:
            context.abort(code, message)
        return response

    def CreateMachine(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("CreateMachine", self._driver.create_machine, request, context)

    def DeleteMachine(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("DeleteMachine", self._driver.delete_machine, request, context)

    def GetMachineStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("GetMachineStatus", self._driver.get_machine_status, request, context)

    def ListMachines(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("ListMachines", self._driver.list_machines, request, context)

    def GetVolumeIDs(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("GetVolumeIDs", self._driver.get_volume_ids, request, context)

    def UpdateMachine(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._call("UpdateMachine", self._driver.update_machine, request, context)

    def InitializeMachine(self, request: Any, context: grpc.ServicerContext) -> Any:
        # Not advertised, so UNIMPLEMENTED (§3.5).
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "InitializeMachine: the driver does not advertise TYPE_INITIALIZE_MACHINE")


def parse_endpoint(value: str) -> tuple[str, str]:
    """Split an endpoint into ("unix", path) or ("tcp", "host:port") (§2.1)."""
    if value.startswith("/"):
        return "unix", value
    if value.startswith("unix://"):
        path = value[len("unix://"):]
        if not path.startswith("/"):
            raise EndpointError(f"endpoint {value!r}: a unix:// endpoint needs an absolute path, e.g. unix:///run/driver.sock")
        return "unix", path
    if value.startswith("tcp://"):
        address = value[len("tcp://"):]
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise EndpointError(f"endpoint {value!r}: a tcp:// endpoint needs host:port, e.g. tcp://127.0.0.1:7654")
        return "tcp", address
    raise EndpointError(f"endpoint {value!r}: use unix:///absolute/path or, for development only, tcp://host:port")


def prepare_socket_path(path: str) -> None:
    """Make ``path`` ready to bind (§2.2).

    Creates missing parent directories with mode 0750, removes a stale
    socket, and refuses a path that another process serves or that holds
    anything other than a socket.
    """
    if len(path.encode()) > MAX_SOCKET_PATH:
        raise EndpointError(f"socket path {path!r} is {len(path.encode())} bytes, at most {MAX_SOCKET_PATH} are possible")
    parent = os.path.dirname(path)
    missing = []
    while parent and not os.path.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(missing):
        os.mkdir(directory, 0o750)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise EndpointError(f"socket path {path!r} exists and is not a socket; not removing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        log.info("removing stale socket %s", path)
        os.unlink(path)
        return
    except OSError as err:
        raise EndpointError(f"socket path {path!r}: cannot tell whether it is in use: {err.strerror}") from None
    finally:
        probe.close()
    raise EndpointError(f"socket path {path!r} is served by another process; refusing to take it over")


def listen(server: grpc.Server, endpoint: str) -> Callable[[], None]:
    """Bind ``server`` to ``endpoint``; return a function that cleans up after it."""
    scheme, address = parse_endpoint(endpoint)
    if scheme == "tcp":
        log.warning("listening on %s: TCP is for development only, with no authentication and secrets in clear text", endpoint)
        if server.add_insecure_port(address) == 0:
            raise EndpointError(f"endpoint {endpoint!r}: cannot listen")
        return lambda: None
    prepare_socket_path(address)
    # gRPC core unlinks the path it bound when the server stops, whatever
    # file is there by then: possibly the socket of a driver started since.
    # So the socket is bound in a private directory next to the path (mode
    # 0700: nobody can connect before the chmod) and renamed into place,
    # which also replaces a stale socket atomically. At stop gRPC unlinks
    # the private path, which is gone; remove_socket decides about the real
    # one.
    private_dir = tempfile.mkdtemp(prefix=".bind-", dir=os.path.dirname(address))
    bind_path = os.path.join(private_dir, "s")
    try:
        if len(bind_path.encode()) > MAX_SOCKET_PATH:
            raise EndpointError(
                f"socket path {address!r}: binding needs {bind_path!r}, over {MAX_SOCKET_PATH} bytes; use a shorter path"
            )
        if server.add_insecure_port("unix:" + bind_path) == 0 or not os.path.exists(bind_path):
            raise EndpointError(f"endpoint {endpoint!r}: cannot listen")
        os.chmod(bind_path, 0o600)
        os.rename(bind_path, address)
    finally:
        shutil.rmtree(private_dir, ignore_errors=True)
    inode = os.lstat(address).st_ino

    def remove_socket() -> None:
        # Only our own socket: a new driver may already have replaced it.
        try:
            if os.lstat(address).st_ino == inode:
                os.unlink(address)
        except FileNotFoundError:
            pass

    return remove_socket


def build_server(driver: InMemoryDriver, max_workers: int) -> grpc.Server:
    """Create the gRPC server with both services registered."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"))
    identity_pb2_grpc.add_IdentityServiceServicer_to_server(IdentityServicer(), server)
    machine_pb2_grpc.add_MachineServiceServicer_to_server(MachineServicer(driver), server)
    return server


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line; the endpoint falls back to the environment."""
    parser = argparse.ArgumentParser(prog="python-inmemory", description="machina in-memory driver in Python")
    parser.add_argument(
        "--endpoint",
        default=os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT,
        help=f"unix:///path or tcp://host:port (default: ${ENDPOINT_ENV}, else {DEFAULT_ENDPOINT})",
    )
    parser.add_argument("--shutdown-grace", type=float, default=25.0, help="seconds calls in flight may take after SIGTERM")
    parser.add_argument("--max-workers", type=int, default=32, help="calls served at the same time")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    """Run the driver until SIGTERM or SIGINT; return the exit status.

    The stop signals are blocked in every thread and taken by the main
    thread with sigwait, not by a handler. The kernel hands a signal sent to
    the process to any thread that does not block it; when a gRPC or worker
    thread took it, Python only noted it for the main thread, which, asleep
    in a lock's wait, never looked: the driver went on serving until it was
    killed. main.py blocks the signals before grpc is imported; blocking
    them again here covers other callers, for threads started from now on.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )
    log.info("starting name=%s version=%s pid=%d", NAME, VERSION, os.getpid())

    server = build_server(InMemoryDriver(), args.max_workers)
    try:
        cleanup = listen(server, args.endpoint)
    except (EndpointError, OSError) as err:
        log.error("cannot serve: %s", err)
        return 1
    server.start()
    log.info("serving name=%s version=%s endpoint=%s", NAME, VERSION, args.endpoint)
    signum = signal.sigwait(STOP_SIGNALS)
    log.info("received %s, stopping gracefully", signal.Signals(signum).name)
    # New calls are refused at once; calls in flight get the grace period.
    server.stop(args.shutdown_grace).wait()
    cleanup()
    log.info("stopped")
    return 0
