"""Tests of machina_inmemory.driver and .validate."""

import json
import threading
import time
import unittest

import grpc

from machina.driver.v1alpha1 import machine_pb2
from machina_inmemory.driver import CSI_DRIVER, PROVIDER_ID_PREFIX, InMemoryDriver
from machina_inmemory.errors import DriverError


def machine(name="m1", namespace="ns", provider_id=""):
    return machine_pb2.Machine(name=name, namespace=namespace, provider_id=provider_id)


def klass(name="c1", namespace="ns", spec=b'{"size":"small","zone":"a"}'):
    return machine_pb2.MachineClass(name=name, namespace=namespace, provider_spec=spec)


def create(machine_name="m1", machine_namespace="ns", **class_args):
    return machine_pb2.CreateMachineRequest(machine=machine(machine_name, machine_namespace), machine_class=klass(**class_args))


class DriverTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.driver = InMemoryDriver()

    def assertCode(self, code, call, *args, contains=""):
        with self.assertRaises(DriverError) as caught:
            call(*args)
        self.assertEqual(caught.exception.code, code, caught.exception.message)
        self.assertIn(contains, caught.exception.message)
        return caught.exception


class CreateTest(DriverTestCase):
    def test_idempotent_on_name(self) -> None:
        first = self.driver.create_machine(create())
        self.assertTrue(first.provider_id.startswith(PROVIDER_ID_PREFIX + "ns/m1/"), first.provider_id)
        self.assertEqual(first.node_name, "m1")
        again = create(spec=b'{ "zone": "a", "size": "small" }')  # same JSON, other bytes
        again.machine.uid = "another-uid"
        again.user_data = b"renewed token"
        again.secrets["token"] = b"other"
        self.assertEqual(self.driver.create_machine(again).provider_id, first.provider_id)
        self.assertEqual(len(self.driver.vms()), 1)

    def test_incompatible_spec_is_already_exists_and_keeps_the_vm(self) -> None:
        first = self.driver.create_machine(create())
        err = self.assertCode(grpc.StatusCode.ALREADY_EXISTS, self.driver.create_machine,
                              create(spec=b'{"size":"large","zone":"a"}'), contains="size")
        self.assertNotIn("large", err.message, "values are not quoted")
        self.assertEqual([vm.provider_id for vm in self.driver.vms()], [first.provider_id])

    def test_another_class_name_gets_the_vm(self) -> None:
        # The class name is not part of the key (§6.1.3, §11.8); the VM
        # stays listed under the class it was created for.
        first = self.driver.create_machine(create())
        self.assertEqual(self.driver.create_machine(create(name="renamed")).provider_id, first.provider_id)
        status = machine_pb2.GetMachineStatusRequest(machine=machine(), machine_class=klass(name="renamed"))
        self.assertEqual(self.driver.get_machine_status(status).provider_id, first.provider_id)
        listed = self.driver.list_machines(machine_pb2.ListMachinesRequest(machine_class=klass()))
        self.assertEqual([m.provider_id for m in listed.machines], [first.provider_id])

    def test_namespace_is_part_of_the_key(self) -> None:
        # A Machine of the same name in another namespace is another
        # Machine: its own VM, and the first one is never reported or
        # deleted for it (§6.1.3).
        first = self.driver.create_machine(create())
        other_machine, other_class = machine(namespace="other"), klass(namespace="other")
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.driver.get_machine_status,
                        machine_pb2.GetMachineStatusRequest(machine=other_machine, machine_class=other_class))
        self.driver.delete_machine(machine_pb2.DeleteMachineRequest(machine=other_machine, machine_class=other_class))
        self.assertEqual([vm.provider_id for vm in self.driver.vms()], [first.provider_id])
        other = self.driver.create_machine(machine_pb2.CreateMachineRequest(machine=other_machine, machine_class=other_class))
        self.assertNotEqual(other.provider_id, first.provider_id)
        self.assertTrue(other.provider_id.startswith(PROVIDER_ID_PREFIX + "other/m1/"), other.provider_id)
        self.driver.delete_machine(machine_pb2.DeleteMachineRequest(machine=machine(), machine_class=klass()))
        self.assertEqual([vm.provider_id for vm in self.driver.vms()], [other.provider_id])

    def test_class_of_another_namespace_is_invalid(self) -> None:
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.create_machine,
                        create(machine_namespace="other"), contains="machine_class.namespace")
        self.assertEqual(self.driver.vms(), [])

    def test_recreate_after_delete_gets_a_new_provider_id(self) -> None:
        first = self.driver.create_machine(create())
        self.driver.delete_machine(machine_pb2.DeleteMachineRequest(machine=machine(), machine_class=klass()))
        second = self.driver.create_machine(create())
        self.assertNotEqual(first.provider_id, second.provider_id)

    def test_invalid_arguments_name_the_field(self) -> None:
        cases = {
            "machine is required": machine_pb2.CreateMachineRequest(machine_class=klass()),
            "machine.name is required": machine_pb2.CreateMachineRequest(machine=machine(name=""), machine_class=klass()),
            "machine.namespace is required": machine_pb2.CreateMachineRequest(machine=machine(namespace=""), machine_class=klass()),
            "machine_class is required": machine_pb2.CreateMachineRequest(machine=machine()),
            "machine_class.namespace is required": create(namespace=""),
            "machine_class.provider_spec is required": create(spec=b""),
            "machine_class.provider_spec is not valid JSON": create(spec=b"{nope"),
            "machine_class.provider_spec must be a JSON object": create(spec=b"[1]"),
            "machine_class.provider_spec.createDelay": create(spec=b'{"createDelay":"soon"}'),
        }
        for message, request in cases.items():
            with self.subTest(message):
                self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.create_machine, request, contains=message)
        self.assertEqual(self.driver.vms(), [])

    def test_slow_create_claims_the_machine(self) -> None:
        request = create(spec=b'{"createDelay": 0.5}')
        results = []
        worker = threading.Thread(target=lambda: results.append(self.driver.create_machine(request)))
        worker.start()
        status = machine_pb2.GetMachineStatusRequest(machine=machine(), machine_class=klass(spec=b'{"createDelay": 0.5}'))
        # Until the creation is done, calls for the machine answer ABORTED,
        # and a second create must not start another VM.
        deadline = time.monotonic() + 5
        seen_aborted = False
        while time.monotonic() < deadline and not seen_aborted:
            try:
                self.driver.create_machine(request)
            except DriverError as err:
                seen_aborted = err.code == grpc.StatusCode.ABORTED
        self.assertTrue(seen_aborted, "a create for a machine whose creation is in flight answers ABORTED")
        self.assertCode(grpc.StatusCode.ABORTED, self.driver.get_machine_status, status)
        worker.join(5)
        self.assertEqual(len(results), 1)
        self.assertEqual(self.driver.get_machine_status(status).provider_id, results[0].provider_id)
        self.assertEqual(len(self.driver.vms()), 1)


class DeleteAndStatusTest(DriverTestCase):
    def test_delete_with_another_provider_id_keeps_the_vm(self) -> None:
        vm = self.driver.create_machine(create())
        other = machine(provider_id=PROVIDER_ID_PREFIX + "ns/m1/old")
        self.driver.delete_machine(machine_pb2.DeleteMachineRequest(machine=other, machine_class=klass()))
        status = machine_pb2.GetMachineStatusRequest(machine=machine(provider_id=vm.provider_id), machine_class=klass())
        self.assertEqual(self.driver.get_machine_status(status).provider_id, vm.provider_id)

    def test_delete_is_idempotent_and_status_then_not_found(self) -> None:
        vm = self.driver.create_machine(create())
        delete = machine_pb2.DeleteMachineRequest(machine=machine(provider_id=vm.provider_id), machine_class=klass())
        for _ in range(3):
            self.driver.delete_machine(delete)
        for provider_id in ("", vm.provider_id):
            status = machine_pb2.GetMachineStatusRequest(machine=machine(provider_id=provider_id), machine_class=klass())
            self.assertCode(grpc.StatusCode.NOT_FOUND, self.driver.get_machine_status, status)

    def test_status_with_another_provider_id_is_not_found(self) -> None:
        self.driver.create_machine(create())
        status = machine_pb2.GetMachineStatusRequest(machine=machine(provider_id="x:///y"), machine_class=klass())
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.driver.get_machine_status, status)


class ListTest(DriverTestCase):
    def test_lists_only_the_class_in_its_namespace(self) -> None:
        mine = self.driver.create_machine(create("m1"))
        self.driver.create_machine(create("m2", name="other-class"))
        other_ns = machine_pb2.CreateMachineRequest(machine=machine("m3", namespace="ns2"), machine_class=klass(namespace="ns2"))
        self.driver.create_machine(other_ns)
        listed = self.driver.list_machines(machine_pb2.ListMachinesRequest(machine_class=klass()))
        self.assertEqual([(m.machine_name, m.provider_id) for m in listed.machines], [("m1", mine.provider_id)])
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.list_machines,
                        machine_pb2.ListMachinesRequest(), contains="machine_class is required")


class VolumeTest(DriverTestCase):
    def test_maps_own_csi_and_host_path_volumes(self) -> None:
        def pv(name, spec, csi_driver="", handle=""):
            return machine_pb2.PersistentVolume(name=name, spec=json.dumps(spec).encode(), csi_driver=csi_driver,
                                                csi_volume_handle=handle)

        request = machine_pb2.GetVolumeIDsRequest(volumes=[
            pv("csi-mine", {"csi": {"driver": CSI_DRIVER, "volumeHandle": "vol-1"}}, CSI_DRIVER, "vol-1"),
            pv("csi-in-spec-only", {"csi": {"driver": CSI_DRIVER, "volumeHandle": "vol-2"}}),
            pv("csi-other", {"csi": {"driver": "other.csi", "volumeHandle": "vol-3"}}, "other.csi", "vol-3"),
            pv("host-mine", {"hostPath": {"path": "/python-inmemory/disk-1"}}),
            pv("host-other", {"hostPath": {"path": "/var/lib/x"}}),
            pv("nfs", {"nfs": {"server": "s", "path": "/"}}),
        ])
        got = {v.persistent_volume_name: v.volume_id for v in self.driver.get_volume_ids(request).volume_ids}
        self.assertEqual(got, {"csi-mine": "vol-1", "csi-in-spec-only": "vol-2", "host-mine": "/python-inmemory/disk-1"})

    def test_invalid_volumes(self) -> None:
        cases = {
            "volumes is required": [],
            "volumes[0].name is required": [machine_pb2.PersistentVolume(spec=b"{}")],
            "volumes[1].spec is not valid JSON": [machine_pb2.PersistentVolume(name="a", spec=b"{}"),
                                                  machine_pb2.PersistentVolume(name="b", spec=b"{")],
            "volumes[1].spec must be a JSON object": [machine_pb2.PersistentVolume(name="a", spec=b"{}"),
                                                      machine_pb2.PersistentVolume(name="b", spec=b'["csi"]')],
            "volumes[2].name 'a' repeats volumes[0].name": [machine_pb2.PersistentVolume(name="a", spec=b"{}"),
                                                            machine_pb2.PersistentVolume(name="b", spec=b"{}"),
                                                            machine_pb2.PersistentVolume(name="a", spec=b"{}")],
            "volumes has 1025 entries": [machine_pb2.PersistentVolume(name=f"v{i}", spec=b"{}") for i in range(1025)],
        }
        for message, volumes in cases.items():
            with self.subTest(message):
                self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.get_volume_ids,
                                machine_pb2.GetVolumeIDsRequest(volumes=volumes), contains=message)


if __name__ == "__main__":
    unittest.main()


class UpdateTest(DriverTestCase):
    def created(self, spec):
        resp = self.driver.create_machine(create(spec=spec))
        return machine(provider_id=resp.provider_id), resp

    def update(self, m, old, new):
        return machine_pb2.UpdateMachineRequest(machine=m, old_machine_class=klass(spec=old), machine_class=klass(spec=new))

    def test_tags_are_applied_to_the_same_vm(self) -> None:
        old, new = b'{"size":"small","tags":{"team":"a"}}', b'{"size":"small","tags":{"team":"b"},"labels":{"x":"y"}}'
        m, created = self.created(old)
        for _ in range(2):  # the repeat is applied again and changes nothing
            resp = self.driver.update_machine(self.update(m, old, new))
            self.assertEqual(resp.WhichOneof("result"), "applied")
            self.assertEqual(resp.applied.provider_id, created.provider_id)
        (vm,) = self.driver.vms()
        self.assertEqual(vm.spec, json.loads(new))
        self.assertEqual(vm.provider_id, created.provider_id)
        # The VM matches the new class now.
        self.assertEqual(self.driver.create_machine(create(spec=new)).provider_id, created.provider_id)

    def test_other_keys_need_a_new_vm_and_leave_the_vm_alone(self) -> None:
        old, new = b'{"size":"small","tags":{"team":"a"}}', b'{"size":"large","tags":{"team":"b"}}'
        m, _ = self.created(old)
        resp = self.driver.update_machine(self.update(m, old, new))
        self.assertEqual(resp.WhichOneof("result"), "needs_new_vm")
        self.assertIn("size", resp.needs_new_vm.reason)
        (vm,) = self.driver.vms()
        self.assertEqual(vm.spec, json.loads(old))

    def test_errors(self) -> None:
        old = b'{"size":"small"}'
        m, _ = self.created(old)
        self.assertCode(grpc.StatusCode.NOT_FOUND, self.driver.update_machine, self.update(machine(provider_id="other"), old, old))
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.update_machine, self.update(machine(), old, old),
                        contains="machine.provider_id")
        self.assertCode(grpc.StatusCode.INVALID_ARGUMENT, self.driver.update_machine,
                        machine_pb2.UpdateMachineRequest(machine=m, machine_class=klass(spec=old)), contains="old_machine_class")
