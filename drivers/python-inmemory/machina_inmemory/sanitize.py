"""Secret stripping for Driver API messages (docs/driver-api.md §8).

A field is secret when its descriptor carries the field option
``(machina.driver.v1alpha1.secret) = true``. The option is read from the
descriptors at run time, so a field that a later proto version marks secret
is stripped without a change here. This mirrors the Go package
github.com/machina-io/machina/proto/sanitize, so that a request logged by this
driver looks like one logged by the core.
"""

from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from machina.driver.v1alpha1 import options_pb2

#: Replaces the value of every secret string or bytes field (in bytes fields
#: as its UTF-8 bytes, which JSON shows base64-encoded).
REDACTED = "***stripped***"

# Deeper levels of a (pathological, self-nesting) message are cleared rather
# than left unsanitized.
_MAX_DEPTH = 100

_REDACTABLE = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)

# Reading an extension from the options costs more than a dict lookup, and
# every logged call walks the same few descriptors.
_secret_cache: dict[str, bool] = {}


def is_secret(field: FieldDescriptor) -> bool:
    """Tell whether ``field`` carries ``(machina.driver.v1alpha1.secret) = true``."""
    cached = _secret_cache.get(field.full_name)
    if cached is None:
        cached = bool(field.GetOptions().Extensions[options_pb2.secret])
        _secret_cache[field.full_name] = cached
    return cached


def strip(message: Message) -> Message:
    """Return a deep copy of ``message`` with every secret field replaced.

    String and bytes values become :data:`REDACTED`; lists and maps of them
    keep their length and keys but have each value replaced; a secret field
    of message type has every field inside it treated as secret; secret
    numbers, booleans and enums are cleared. Non-secret nested messages are
    searched too. Unknown fields are dropped, as nothing tells whether they
    are secret. The input is not modified.
    """
    out = type(message)()
    out.CopyFrom(message)
    _strip(out, False, 0)
    return out


def to_text(message: Message) -> str:
    """Render ``message`` for a log line: compact JSON of :func:`strip`."""
    return json_format.MessageToJson(strip(message), indent=None, sort_keys=True)


def _redacted(field: FieldDescriptor) -> str | bytes:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return REDACTED.encode()
    return REDACTED


def _strip(message: Message, everything: bool, depth: int) -> None:
    """Sanitize ``message`` in place; ``everything`` treats all fields as secret."""
    if depth > _MAX_DEPTH:
        message.Clear()
        return
    message.DiscardUnknownFields()
    for field, value in message.ListFields():
        secret = everything or is_secret(field)
        name = field.name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.message_type is not None:
                for entry in value.values():
                    _strip(entry, secret, depth + 1)
            elif secret and value_field.type in _REDACTABLE:
                for key in list(value.keys()):
                    value[key] = _redacted(value_field)
            elif secret:
                message.ClearField(name)
        elif field.label == FieldDescriptor.LABEL_REPEATED:
            if field.message_type is not None:
                for item in value:
                    _strip(item, secret, depth + 1)
            elif secret and field.type in _REDACTABLE:
                count = len(value)
                del value[:]
                value.extend([_redacted(field)] * count)
            elif secret:
                message.ClearField(name)
        elif field.message_type is not None:
            _strip(value, secret, depth + 1)
        elif secret and field.type in _REDACTABLE:
            setattr(message, name, _redacted(field))
        elif secret:
            message.ClearField(name)
