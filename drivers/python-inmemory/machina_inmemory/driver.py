"""The in-memory provider and the MachineService logic on top of it.

A VM is a record in this process's memory. It is keyed by the machine's
namespace and name, the idempotency key of CreateMachine (docs/driver-api.md
§6.1.3): one Machine, at most one VM. A Machine of the same name in another
namespace gets a VM of its own; the class name is not part of the key. Its
provider ID is
``python-inmemory:///<namespace>/<name>/<incarnation>``; the incarnation is
random per VM, so that a VM created again under a deleted VM's name never
gets the deleted VM's provider ID (§4.8: provider IDs are not reused).

The provider spec is any JSON object. One key is understood:
``createDelay`` (seconds, a number, at most 300) makes CreateMachine take
that long, like a slow cloud API; while it runs, other calls for the same
machine answer ABORTED (§9) and a call whose deadline passed leaves the
creation running, so that the retry finds the VM (§10.3).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Iterator

from machina.driver.v1alpha1 import machine_pb2

from . import validate
from .errors import aborted, already_exists, invalid, not_found

#: Prefix of every provider ID of this driver.
PROVIDER_ID_PREFIX = "python-inmemory:///"

#: CSI volumes of this CSI driver are disks of this provider.
CSI_DRIVER = "python-inmemory.csi.machina.io"

#: hostPath volumes under this directory are disks of this provider.
HOST_PATH_PREFIX = "/python-inmemory/"

MAX_CREATE_DELAY = 300.0

#: Provider spec keys UpdateMachine changes on a running VM, as a cloud
#: tags a running instance.
TAG_LIKE_KEYS = ("labels", "tags")


@dataclass(frozen=True)
class VM:
    """One VM of the in-memory provider, with what idempotency and listing need."""

    name: str
    namespace: str
    class_namespace: str
    class_name: str
    spec: dict[str, Any]
    provider_id: str
    uid: str


def _create_delay(spec: dict[str, Any]) -> float:
    value = spec.get("createDelay", 0)
    # bool is an int in Python; true is no delay.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_CREATE_DELAY:
        raise invalid(
            f"machine_class.provider_spec.createDelay must be a number of seconds from 0 to {MAX_CREATE_DELAY:g}"
        )
    return float(value)


class InMemoryDriver:
    """MachineService logic; methods take a request and return its response.

    Failures raise :class:`~machina_inmemory.errors.DriverError`. Every
    method is safe for concurrent calls: the VM table is guarded by one lock
    held only for dictionary operations, and calls for one machine are kept
    apart by :meth:`_machine_call`, so a slow creation delays nothing else.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vms: dict[tuple[str, str], VM] = {}
        self._busy: set[tuple[str, str]] = set()

    @contextlib.contextmanager
    def _machine_call(self, m: machine_pb2.Machine) -> Iterator[None]:
        """Run the body as the only call for machine ``m``, else ABORTED."""
        key = (m.namespace, m.name)
        with self._lock:
            if key in self._busy:
                raise aborted(f"another call for machine {m.namespace}/{m.name} is in flight; retry")
            self._busy.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(key)

    def _get(self, m: machine_pb2.Machine) -> VM | None:
        with self._lock:
            return self._vms.get((m.namespace, m.name))

    def vms(self) -> list[VM]:
        """Return a snapshot of every VM (for tests and diagnostics)."""
        with self._lock:
            return list(self._vms.values())

    def create_machine(self, request: machine_pb2.CreateMachineRequest) -> machine_pb2.CreateMachineResponse:
        """Create the VM for ``request.machine.name``, or return the existing one (§6.1)."""
        m = validate.machine(request)
        c, spec = validate.machine_class(request)
        validate.same_namespace(m, c)
        validate.secrets(request.secrets)
        validate.last_known_state(request.last_known_state)
        if len(request.user_data) > validate.MAX_USER_DATA:
            raise invalid(f"user_data is {len(request.user_data)} bytes, at most {validate.MAX_USER_DATA} are allowed")
        delay = _create_delay(spec)
        with self._machine_call(m):
            vm = self._get(m)
            if vm is not None:
                self._check_compatible(vm, m, spec)
                return self._create_response(vm)
            # The provider is slow: the name is claimed for the whole delay,
            # so that a retry after a deadline cannot start a second VM.
            time.sleep(delay)
            vm = VM(
                name=m.name,
                namespace=m.namespace,
                class_namespace=c.namespace,
                class_name=c.name,
                spec=spec,
                provider_id=f"{PROVIDER_ID_PREFIX}{m.namespace}/{m.name}/{uuid.uuid4().hex[:12]}",
                uid=m.uid,
            )
            with self._lock:
                self._vms[(m.namespace, m.name)] = vm
            return self._create_response(vm)

    @staticmethod
    def _check_compatible(vm: VM, m: machine_pb2.Machine, spec: dict[str, Any]) -> None:
        """Raise ALREADY_EXISTS unless ``vm`` is what the request would create.

        Compared: the provider spec as parsed JSON (key order and spacing do
        not matter). Not compared, as §6.1.3 requires or recommends:
        secrets, user_data, last_known_state, uid, labels, annotations and
        the class name (a Machine whose class was changed keeps its VM, which
        stays listed under its original class, §11.8). The message names
        what differs, never values.
        """
        if vm.spec != spec:
            keys = sorted(k for k in vm.spec.keys() | spec.keys() if vm.spec.get(k) != spec.get(k))
            raise already_exists(
                f"machine {m.name} exists with another provider spec (keys that differ: {', '.join(keys)})"
            )

    @staticmethod
    def _create_response(vm: VM) -> machine_pb2.CreateMachineResponse:
        return machine_pb2.CreateMachineResponse(
            provider_id=vm.provider_id,
            node_name=vm.name,
            last_known_state=json.dumps({"providerID": vm.provider_id}),
            addresses=[machine_pb2.NodeAddress(type="Hostname", address=vm.name)],
        )

    def update_machine(self, request: machine_pb2.UpdateMachineRequest) -> machine_pb2.UpdateMachineResponse:
        """Apply a class change to the running VM, or answer needs_new_vm (§6.7).

        Only the provider spec keys in :data:`TAG_LIKE_KEYS` can change on a
        running VM; any other difference from the VM's own spec leaves the VM
        untouched and answers needs_new_vm. A VM that already matches is
        answered applied (idempotency).
        """
        m = validate.machine(request, need_provider_id=True)
        if not request.HasField("old_machine_class"):
            raise invalid("old_machine_class is required")
        validate.json_object(
            "old_machine_class.provider_spec", request.old_machine_class.provider_spec, validate.MAX_PROVIDER_SPEC
        )
        _, spec = validate.machine_class(request)
        validate.secrets(request.secrets)
        validate.last_known_state(request.last_known_state)
        with self._machine_call(m):
            vm = self._get(m)
            if vm is None or vm.provider_id != m.provider_id:
                raise not_found(f"no VM with provider ID {m.provider_id} for machine {m.name}")
            differ = sorted(k for k in vm.spec.keys() | spec.keys() if vm.spec.get(k) != spec.get(k))
            fixed = [k for k in differ if k not in TAG_LIKE_KEYS]
            if fixed:
                return machine_pb2.UpdateMachineResponse(
                    needs_new_vm=machine_pb2.NeedsNewVM(
                        reason=f"provider spec keys {', '.join(fixed)} differ and cannot change on a running VM"
                        f" (only {' and '.join(TAG_LIKE_KEYS)} can)"
                    )
                )
            if differ:
                vm = replace(vm, spec=spec)
                with self._lock:
                    self._vms[(m.namespace, m.name)] = vm
        return machine_pb2.UpdateMachineResponse(
            applied=machine_pb2.GetMachineStatusResponse(
                provider_id=vm.provider_id,
                node_name=vm.name,
                addresses=[machine_pb2.NodeAddress(type="Hostname", address=vm.name)],
            )
        )

    def delete_machine(self, request: machine_pb2.DeleteMachineRequest) -> machine_pb2.DeleteMachineResponse:
        """Delete the machine's VM; a VM that is gone is OK (§6.3).

        With ``machine.provider_id`` set only the VM with that ID is deleted,
        never a newer VM of the same name.
        """
        m = validate.machine(request)
        validate.machine_class(request)
        validate.secrets(request.secrets)
        validate.last_known_state(request.last_known_state)
        with self._machine_call(m):
            with self._lock:
                key = (m.namespace, m.name)
                vm = self._vms.get(key)
                if vm is not None and (not m.provider_id or vm.provider_id == m.provider_id):
                    del self._vms[key]
        return machine_pb2.DeleteMachineResponse()

    def get_machine_status(self, request: machine_pb2.GetMachineStatusRequest) -> machine_pb2.GetMachineStatusResponse:
        """Look the VM up by name, and by provider ID when one is given (§6.4)."""
        m = validate.machine(request)
        validate.machine_class(request)
        validate.secrets(request.secrets)
        with self._machine_call(m):
            vm = self._get(m)
        if vm is None:
            raise not_found(f"no VM for machine {m.name}")
        if m.provider_id and vm.provider_id != m.provider_id:
            raise not_found(f"no VM with provider ID {m.provider_id} for machine {m.name}")
        return machine_pb2.GetMachineStatusResponse(
            provider_id=vm.provider_id,
            node_name=vm.name,
            addresses=[machine_pb2.NodeAddress(type="Hostname", address=vm.name)],
        )

    def list_machines(self, request: machine_pb2.ListMachinesRequest) -> machine_pb2.ListMachinesResponse:
        """List the VMs created for machines of this class (§6.5).

        The scope is the class's namespace and name. The provider spec
        defines no further scope: one driver process is one provider
        account and serves one control cluster.
        """
        c, _ = validate.machine_class(request)
        validate.secrets(request.secrets)
        return machine_pb2.ListMachinesResponse(
            machines=[
                machine_pb2.ListedMachine(provider_id=vm.provider_id, machine_name=vm.name)
                for vm in self.vms()
                if (vm.class_namespace, vm.class_name) == (c.namespace, c.name)
            ]
        )

    def get_volume_ids(self, request: machine_pb2.GetVolumeIDsRequest) -> machine_pb2.GetVolumeIDsResponse:
        """Map the volumes that are this provider's disks to their IDs (§6.6).

        A CSI volume of :data:`CSI_DRIVER` maps to its volume handle, a
        hostPath volume under :data:`HOST_PATH_PREFIX` to its path. Other
        volumes are left out.
        """
        specs = validate.volumes(request)
        response = machine_pb2.GetVolumeIDsResponse()
        for volume, spec in zip(request.volumes, specs):
            volume_id = _volume_id(volume, spec)
            if volume_id:
                response.volume_ids.add(persistent_volume_name=volume.name, volume_id=volume_id)
        return response


def _volume_id(volume: machine_pb2.PersistentVolume, spec: dict[str, Any]) -> str:
    """Return the provider volume ID of ``volume``, or "" when it is not ours."""
    csi = spec.get("csi") if isinstance(spec.get("csi"), dict) else {}
    driver = volume.csi_driver or str(csi.get("driver", ""))
    handle = volume.csi_volume_handle or str(csi.get("volumeHandle", ""))
    if driver:
        return handle if driver == CSI_DRIVER else ""
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict):
        path = str(host_path.get("path", ""))
        if path.startswith(HOST_PATH_PREFIX):
            return path
    return ""
