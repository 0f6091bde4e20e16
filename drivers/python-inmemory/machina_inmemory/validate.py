"""Checks of the REQUIRED fields and size limits of requests.

Every check raises :class:`~machina_inmemory.errors.DriverError` with code
INVALID_ARGUMENT and a message that starts with the field path
(docs/driver-api.md §4.1, §4.10). Messages quote names, never provider specs
or secret values.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from machina.driver.v1alpha1 import machine_pb2

from .errors import invalid

# Limits of docs/driver-api.md §4.2, in bytes.
MAX_NAME = 253
MAX_NAMESPACE = 63
MAX_UID = 128
MAX_PROVIDER_ID = 2048
MAX_PROVIDER_SPEC = 256 << 10
MAX_SECRET_ENTRIES = 64
MAX_SECRETS = 1 << 20
MAX_USER_DATA = 1 << 20
MAX_LAST_KNOWN_STATE = 64 << 10
MAX_VOLUMES = 1024
MAX_VOLUME_SPEC = 64 << 10
MAX_OTHER_STRING = 4096

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _max_bytes(field: str, value: str | bytes, limit: int) -> None:
    size = len(value.encode() if isinstance(value, str) else value)
    if size > limit:
        raise invalid(f"{field} is {size} bytes, at most {limit} are allowed")


def object_name(field: str, name: str) -> None:
    """Check a REQUIRED DNS-1123 subdomain (§4.3)."""
    if not name:
        raise invalid(f"{field} is required")
    _max_bytes(field, name, MAX_NAME)
    if not _SUBDOMAIN.match(name):
        raise invalid(f"{field} {name!r} must be a DNS-1123 subdomain")


def namespace(field: str, value: str) -> None:
    """Check a REQUIRED DNS-1123 label (§4.3)."""
    if not value:
        raise invalid(f"{field} is required")
    _max_bytes(field, value, MAX_NAMESPACE)
    if not _LABEL.match(value):
        raise invalid(f"{field} {value!r} must be a DNS-1123 label")


def json_object(field: str, raw: bytes, limit: int) -> dict[str, Any]:
    """Parse a REQUIRED JSON object without quoting it in errors."""
    if not raw:
        raise invalid(f"{field} is required")
    _max_bytes(field, raw, limit)
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise invalid(f"{field} is not valid JSON") from None
    if not isinstance(value, dict):
        raise invalid(f"{field} must be a JSON object")
    return value


def machine(request: Any, need_provider_id: bool = False) -> machine_pb2.Machine:
    """Check ``request.machine`` and return it."""
    if not request.HasField("machine"):
        raise invalid("machine is required")
    m = request.machine
    object_name("machine.name", m.name)
    namespace("machine.namespace", m.namespace)
    if need_provider_id and not m.provider_id:
        raise invalid("machine.provider_id is required")
    _max_bytes("machine.provider_id", m.provider_id, MAX_PROVIDER_ID)
    _max_bytes("machine.uid", m.uid, MAX_UID)
    return m


def machine_class(request: Any) -> tuple[machine_pb2.MachineClass, dict[str, Any]]:
    """Check ``request.machine_class``; return it and its parsed provider spec."""
    if not request.HasField("machine_class"):
        raise invalid("machine_class is required")
    c = request.machine_class
    object_name("machine_class.name", c.name)
    namespace("machine_class.namespace", c.namespace)
    spec = json_object("machine_class.provider_spec", c.provider_spec, MAX_PROVIDER_SPEC)
    return c, spec


def same_namespace(m: machine_pb2.Machine, c: machine_pb2.MachineClass) -> None:
    """Refuse a class of another namespace than its machine's (§4.9).

    The VM would be listed in that namespace's class scope, where no Machine
    claims it, so CreateMachine must not create it.
    """
    if c.namespace != m.namespace:
        raise invalid(f"machine_class.namespace {c.namespace!r} must equal machine.namespace {m.namespace!r}")


def secrets(values: Mapping[str, bytes]) -> None:
    """Check the size of a ``secrets`` map; the message names sizes only."""
    if len(values) > MAX_SECRET_ENTRIES:
        raise invalid(f"secrets has {len(values)} entries, at most {MAX_SECRET_ENTRIES} are allowed")
    total = sum(len(k.encode()) + len(v) for k, v in values.items())
    if total > MAX_SECRETS:
        raise invalid(f"secrets is {total} bytes, at most {MAX_SECRETS} are allowed")


def last_known_state(value: str) -> None:
    """Check the size of ``last_known_state``."""
    _max_bytes("last_known_state", value, MAX_LAST_KNOWN_STATE)


def volumes(request: machine_pb2.GetVolumeIDsRequest) -> list[dict[str, Any]]:
    """Check ``request.volumes``; return the parsed spec of each volume."""
    if not request.volumes:
        raise invalid("volumes is required: at least one volume")
    if len(request.volumes) > MAX_VOLUMES:
        raise invalid(f"volumes has {len(request.volumes)} entries, at most {MAX_VOLUMES} are allowed")
    specs = []
    first: dict[str, int] = {}
    for i, volume in enumerate(request.volumes):
        field = f"volumes[{i}]"
        object_name(f"{field}.name", volume.name)
        # The answer names volumes by name: a name sent twice could not be
        # answered unambiguously (§6.6.4).
        if volume.name in first:
            raise invalid(f"{field}.name {volume.name!r} repeats volumes[{first[volume.name]}].name")
        first[volume.name] = i
        specs.append(json_object(f"{field}.spec", volume.spec, MAX_VOLUME_SPEC))
        _max_bytes(f"{field}.csi_driver", volume.csi_driver, MAX_OTHER_STRING)
        _max_bytes(f"{field}.csi_volume_handle", volume.csi_volume_handle, MAX_OTHER_STRING)
    return specs
