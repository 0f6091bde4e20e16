"""Tests of machina_inmemory.sanitize."""

import json
import unittest

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from machina.driver.v1alpha1 import machine_pb2, options_pb2
from machina_inmemory import sanitize

CANARY = "canary-7f3a"


class StripTest(unittest.TestCase):
    def test_request_secrets_and_user_data_are_replaced(self) -> None:
        request = machine_pb2.CreateMachineRequest(
            machine=machine_pb2.Machine(name="m1", namespace="ns", labels={"team": "a"}),
            machine_class=machine_pb2.MachineClass(name="c", namespace="ns", provider_spec=b'{"size":"s"}'),
            secrets={"token": CANARY.encode(), "other": b"x"},
            user_data=CANARY.encode(),
            last_known_state="state",
        )
        clean = sanitize.strip(request)
        self.assertEqual(dict(clean.secrets), {"token": b"***stripped***", "other": b"***stripped***"})
        self.assertEqual(clean.user_data, b"***stripped***")
        # Everything that is not secret stays.
        self.assertEqual(clean.machine, request.machine)
        self.assertEqual(clean.machine_class, request.machine_class)
        self.assertEqual(clean.last_known_state, "state")
        # The input is untouched.
        self.assertEqual(request.secrets["token"], CANARY.encode())
        self.assertEqual(request.user_data, CANARY.encode())

    def test_every_request_with_a_secret_field_is_covered(self) -> None:
        # The option is read from the descriptors: these are the fields of
        # docs/driver-api.md §8.1, found without a list in the code.
        found = set()
        for message in machine_pb2.DESCRIPTOR.message_types_by_name.values():
            for field in message.fields:
                if sanitize.is_secret(field):
                    found.add(f"{message.name}.{field.name}")
        self.assertEqual(
            found,
            {
                "CreateMachineRequest.secrets",
                "CreateMachineRequest.user_data",
                "InitializeMachineRequest.secrets",
                "DeleteMachineRequest.secrets",
                "GetMachineStatusRequest.secrets",
                "ListMachinesRequest.secrets",
                "UpdateMachineRequest.secrets",
            },
        )

    def test_to_text_is_json_without_secrets(self) -> None:
        request = machine_pb2.ListMachinesRequest(
            machine_class=machine_pb2.MachineClass(name="c", namespace="ns", provider_spec=b"{}"),
            secrets={"token": CANARY.encode()},
        )
        text = sanitize.to_text(request)
        self.assertNotIn(CANARY, text)
        self.assertNotIn("\n", text)
        parsed = json.loads(text)
        self.assertEqual(parsed["machineClass"]["name"], "c")
        # bytes are base64 in JSON: "***stripped***" encodes to this.
        self.assertEqual(parsed["secrets"]["token"], "Kioqc3RyaXBwZWQqKio=")


def _dynamic_message_class():
    """Build a message type with secret fields of every shape, as a later
    proto version might add them, to show the stripping is generic."""
    pool = descriptor_pool.DescriptorPool()
    for dep in (descriptor_pb2.DESCRIPTOR, options_pb2.DESCRIPTOR):
        proto = descriptor_pb2.FileDescriptorProto()
        dep.CopyToProto(proto)
        pool.Add(proto)
    file = descriptor_pb2.FileDescriptorProto(
        name="sanitize_test.proto",
        package="sanitizetest",
        syntax="proto3",
        dependency=["machina/driver/v1alpha1/options.proto"],
    )
    inner = file.message_type.add(name="Inner")
    inner.field.add(name="text", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    inner.field.add(name="count", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    outer = file.message_type.add(name="Outer")

    def add(name, number, ftype, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, type_name="", secret=True):
        field = outer.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = type_name
        if secret:
            field.options.Extensions[options_pb2.secret] = True

    t = descriptor_pb2.FieldDescriptorProto
    add("password", 1, t.TYPE_STRING)
    add("tokens", 2, t.TYPE_STRING, t.LABEL_REPEATED)
    add("pin", 3, t.TYPE_INT64)
    add("nested", 4, t.TYPE_MESSAGE, type_name=".sanitizetest.Inner")
    add("plain", 5, t.TYPE_MESSAGE, type_name=".sanitizetest.Inner", secret=False)
    pool.Add(file)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("sanitizetest.Outer"))


class DynamicMessageTest(unittest.TestCase):
    def test_every_shape_of_secret_field(self) -> None:
        outer_class = _dynamic_message_class()
        message = outer_class(password=CANARY, tokens=[CANARY, CANARY], pin=1234)
        message.nested.text = CANARY
        message.nested.count = 7
        message.plain.text = "visible"
        clean = sanitize.strip(message)
        self.assertEqual(clean.password, sanitize.REDACTED)
        self.assertEqual(list(clean.tokens), [sanitize.REDACTED, sanitize.REDACTED])
        self.assertEqual(clean.pin, 0, "secret numbers are cleared")
        self.assertEqual(clean.nested.text, sanitize.REDACTED, "a secret message is secret throughout")
        self.assertEqual(clean.nested.count, 0)
        self.assertEqual(clean.plain.text, "visible")
        self.assertNotIn(CANARY, str(clean))


if __name__ == "__main__":
    unittest.main()
