#!/usr/bin/python3
"""Start the machina in-memory driver in Python.

Usage: main.py [--endpoint unix:///path/driver.sock] (or set
MACHINA_DRIVER_ENDPOINT). Needs Debian's python3-grpcio and python3-protobuf.
"""

import os
import signal
import sys

# Before anything starts a thread (importing grpc can): threads inherit
# the blocked set, so SIGTERM and SIGINT stay pending until the main
# thread takes them with sigwait (server.main). A signal that arrives
# while the driver is still starting is acted on once it serves.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})

_HERE = os.path.dirname(os.path.abspath(__file__))
# The generated stubs import each other as machina.driver.v1alpha1.*.
sys.path[:0] = [os.path.join(_HERE, "gen"), _HERE]

from machina_inmemory import server  # noqa: E402

if __name__ == "__main__":
    sys.exit(server.main(sys.argv[1:]))
