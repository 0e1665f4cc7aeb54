"""The generated wire types against the schema, and the SDK's commands against both."""

from __future__ import annotations

import inspect
import json
import keyword

import gen_types
import pytest
from conftest import REPO

from shard_sdk import wire
from shard_sdk._base import Event, WireObject
from shard_sdk.connection import check_fields

SCHEMA = json.loads((REPO / "schema" / "protocol.schema.json").read_text())
DEFS = SCHEMA["$defs"]


def test_generated_module_is_what_the_schema_generates() -> None:
    expected = gen_types.generate()
    actual = (gen_types.OUT).read_text(encoding="utf-8")
    assert actual == expected, (
        "sdk/python/src/shard_sdk/wire.py disagrees with schema/protocol.schema.json: "
        "run python3 sdk/python/scripts/gen_types.py"
    )


def test_check_mode_fails_on_a_stale_module(tmp_path, monkeypatch) -> None:
    stale = tmp_path / "wire.py"
    stale.write_text(gen_types.generate().replace("message_delta", "message_deltas", 1))
    monkeypatch.setattr(gen_types, "OUT", stale)
    assert gen_types.main(["--check"]) == 1
    stale.write_text(gen_types.generate())
    assert gen_types.main(["--check"]) == 0


def test_a_schema_change_changes_the_generated_module(tmp_path) -> None:
    changed = json.loads(json.dumps(SCHEMA))
    changed["$defs"]["MessageDelta"]["properties"]["new_field"] = {"type": "string", "description": "x"}
    p = tmp_path / "schema.json"
    p.write_text(json.dumps(changed))
    text = gen_types.generate(p)
    assert "def new_field(self) -> str | None" in text
    assert text != gen_types.generate()


def test_every_event_type_has_its_class_and_fields() -> None:
    branches = DEFS["Event"]["oneOf"]
    types = {b["properties"]["type"]["const"] for b in branches}
    assert set(wire.EVENT_CLASSES) == types
    for b in branches:
        t = b["properties"]["type"]["const"]
        cls = wire.EVENT_CLASSES[t]
        assert issubclass(cls, Event), t
        d = DEFS[b["$ref"].rsplit("/", 1)[-1]]
        props = set(d.get("properties", {}))
        for alt in d.get("oneOf", []) + d.get("anyOf", []):
            props |= set(alt.get("properties", {}))
        for field in props:
            name = field + "_" if keyword.iskeyword(field) else field
            assert isinstance(inspect.getattr_static(cls, name), property), f"{t}.{field}"


def test_every_object_def_has_a_class_with_exactly_its_fields() -> None:
    for name, d in DEFS.items():
        if d.get("type") != "object" or "oneOf" in d or "anyOf" in d or name == "ClientMessage":
            continue
        cls = getattr(wire, name)
        own = {k for k, v in vars(cls).items() if isinstance(v, property)}
        assert own == set(d.get("properties", {})), name


def test_every_command_type_is_known_with_its_fields() -> None:
    types = {b["properties"]["type"]["const"] for b in DEFS["ClientMessage"]["oneOf"]}
    assert set(wire.COMMAND_FIELDS) == types
    required, allowed = wire.COMMAND_FIELDS["prompt"]
    assert required == ("message",)
    assert set(allowed) == set(DEFS["Prompt"]["properties"])


def test_routed_events_are_the_per_agent_ones() -> None:
    assert "message_delta" in wire.ROUTED_EVENT_TYPES
    assert "turn_end" in wire.ROUTED_EVENT_TYPES
    # Orchestrator events carry agent_id as payload: never routed by it.
    for t in ("agent_spawned", "agent_status_changed", "agent_activity", "subagent_run_changed", "hello", "response"):
        assert t not in wire.ROUTED_EVENT_TYPES


def test_fields_read_as_attributes_none_when_absent() -> None:
    ev = wire.MessageDelta({"type": "message_delta", "message_id": "m", "block_index": 0, "kind": "text", "text_delta": "hi"})
    assert ev.type == "message_delta" and ev.text_delta == "hi" and ev.args_delta is None
    assert ev.tool_name is None  # a field of another event: None, not an error
    assert ev.something_newer is None
    req = wire.PermissionRequest({
        "type": "permission_request", "request_id": "req-1", "tool_name": "bash",
        "input": {"command": "ls"}, "prompt": "?", "options": ["allow", "deny"],
        "choices": [{"id": "allow", "label": "Allow once", "intent": "allow"}],
    })
    assert req.choices is not None and req.choices[0].id == "allow" and req.choices[0].label == "Allow once"
    assert isinstance(req.choices[0], wire.PermissionChoice)
    msg = wire.Message({"role": "assistant", "content": [
        {"type": "text", "text": "a"},
        {"type": "tool_result", "tool_call_id": "c", "content": {"kind": "text", "text": "out"}},
    ]})
    text, result = msg.content
    assert isinstance(text, wire.ContentBlockText) and text.text == "a"
    assert isinstance(result, wire.ContentBlockToolResult)
    assert isinstance(result.content, wire.ToolResultContentText) and result.content.text == "out"


def test_commands_are_checked_against_the_schema_before_sending() -> None:
    check_fields("prompt", {"message": "x"})
    with pytest.raises(ValueError, match="no field 'mesage'"):
        check_fields("prompt", {"mesage": "x"})
    with pytest.raises(ValueError, match="needs 'message'"):
        check_fields("prompt", {})


def test_the_sdk_sends_only_fields_the_schema_has() -> None:
    """Every literal command the SDK's source builds names only schema fields."""
    import ast

    from conftest import SDK

    calls = 0
    for path in (SDK / "src" / "shard_sdk").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            name = getattr(node.func, "attr", "")
            if name not in ("call", "_call", "request"):
                continue
            t = node.args[0].value
            if t == "runtime.auth":
                continue  # a connection message, not in the schema's command union
            assert t in wire.COMMAND_FIELDS, f"{path.name}: unknown command {t!r}"
            calls += 1
            if len(node.args) > 1 and isinstance(node.args[1], ast.Dict):
                keys = {k.value for k in node.args[1].keys if isinstance(k, ast.Constant)}
                allowed = set(wire.COMMAND_FIELDS[t][1])
                assert keys <= allowed, f"{path.name}: {t} {keys - allowed}"
    assert calls > 30


def test_wrapped_objects_compare_and_print() -> None:
    a = wire.Usage({"input": 1, "output": 2})
    assert a == wire.Usage({"input": 1, "output": 2})
    assert "Usage" in repr(a) and a.get("input") == 1 and a.to_dict() == {"input": 1, "output": 2}
    assert isinstance(a, WireObject)


def test_wrapped_objects_copy_and_pickle() -> None:
    import copy
    import pickle

    ev = wire.MessageDelta({"type": "message_delta", "message_id": "m", "block_index": 0, "kind": "text", "text_delta": "x"})
    for clone in (copy.copy(ev), copy.deepcopy(ev), pickle.loads(pickle.dumps(ev))):
        assert clone == ev and clone.text_delta == "x" and type(clone) is wire.MessageDelta
