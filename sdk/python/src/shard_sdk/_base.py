"""Base classes of the generated wire types (``wire.py``).

A wire object wraps the dict decoded from one JSON message and reads fields from it on
demand: streaming 200k events a second leaves no room for eager conversion of every field.
"""

from __future__ import annotations

from typing import Any, Callable

class WireObject:
    """A protocol object: each field is an attribute, ``None`` when absent.

    The generated subclasses declare the schema's fields as typed properties; any other
    name (a field added by a newer server) reads from the underlying dict too.
    """

    __slots__ = ("_d",)
    _d: Any  # the decoded JSON object; typed loosely so field reads keep their declared types

    def __init__(self, data: dict[str, Any]) -> None:
        self._d = data

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed: fields the schema does not name.
        if name.startswith("__") or name == "_d":
            raise AttributeError(name)
        return self._d.get(name)

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles (e.g. to hand events to another process) rebuild from the dict.
        return (type(self), (self._d,))

    def to_dict(self) -> dict[str, Any]:
        """The message as decoded from the wire (the object's own storage; do not mutate)."""
        return self._d

    def get(self, name: str, default: Any = None) -> Any:
        """A field by its wire name (for names that are not identifiers, like ``exitCode``)."""
        return self._d.get(name, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WireObject):
            return type(self) is type(other) and self._d == other._d
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._d!r})"


class Event(WireObject):
    """One message from the server (PROTOCOL's events, ``response`` included).

    ``type`` is the wire type (``"message_delta"``, ``"turn_end"``, …); every field of the
    message is an attribute, ``None`` when absent. Event types this SDK does not know are
    plain ``Event`` objects, so a newer server never breaks an older client.
    """

    __slots__ = ()

    @property
    def type(self) -> str:
        """The wire type of the event."""
        return self._d["type"]

    @property
    def agent_id(self) -> str | None:
        """The agent the event is about (routing id, or payload of orchestrator events)."""
        return self._d.get("agent_id")


# The helpers return Any: the generated property's annotation says what the field is
# (``None`` only for optional fields), which is what editors and type checkers show.
def _obj(cls: type[WireObject], v: Any) -> Any:
    return None if v is None else cls(v)


def _list(wrap: Callable[[Any], Any], v: Any) -> Any:
    return None if v is None else [wrap(x) for x in v]


def _tagged(table: tuple[str, dict[str, type[WireObject]]], v: Any) -> Any:
    if v is None:
        return None
    key, classes = table
    return classes.get(v.get(key), WireObject)(v)
