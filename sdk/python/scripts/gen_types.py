#!/usr/bin/env python3
"""Generates ``src/shard_sdk/wire.py`` from ``schema/protocol.schema.json``.

The SDK's wire types come from the schema the Rust protocol crate exports, so they cannot
drift from what the binary sends: ``--check`` exits 1 when the committed file is not what
the schema generates (the test suite runs the same check).

Every object of the schema becomes a class that wraps the decoded JSON dict and exposes
each field as a typed read-only property (absent fields read as ``None``). Wrapping costs
one small object per message, so streaming stays cheap; nested objects are wrapped when
read. String enums become ``Literal`` aliases.

Usage: python3 sdk/python/scripts/gen_types.py [--check]
"""

from __future__ import annotations

import hashlib
import json
import keyword
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SDK = HERE.parent
SCHEMA = SDK.parent.parent / "schema" / "protocol.schema.json"
OUT = SDK / "src" / "shard_sdk" / "wire.py"

PRIMS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.replace(".", "_").split("_") if p)


def ref_name(node: dict) -> str | None:
    r = node.get("$ref")
    return r.rsplit("/", 1)[-1] if r else None


def doc_line(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text.replace("\\", "\\\\").replace('"""', "'''")


class Gen:
    def __init__(self, schema: dict, raw: bytes) -> None:
        self.schema = schema
        self.defs: dict = schema["$defs"]
        self.raw = raw
        # def name -> "object" | "tagged" | "literal" | "alias"
        self.kinds: dict[str, str] = {}
        self.classes: list[str] = []  # emitted class blocks, in order
        self.tag_tables: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        self.event_defs: dict[str, list[str]] = {}  # def -> event types it carries
        for br in self.defs["Event"]["oneOf"]:
            self.event_defs.setdefault(ref_name(br), []).append(br["properties"]["type"]["const"])

    # ----- classification -------------------------------------------------------------
    def classify(self, name: str) -> str:
        if name in self.kinds:
            return self.kinds[name]
        d = self.defs[name]
        if name in ("ClientMessage", "Event", "PermissionResponse"):
            kind = "skip"
        elif d.get("type") == "object" and "oneOf" not in d and "anyOf" not in d:
            kind = "object"
        elif self.merged(d) is not None:
            kind = "object"
        elif self.literal_values(d) is not None:
            kind = "literal"
        elif "oneOf" in d and self.tag_key(d["oneOf"]):
            kind = "tagged"
        else:
            kind = "alias"
        self.kinds[name] = kind
        return kind

    @staticmethod
    def merged(d: dict) -> dict | None:
        """An object whose alternatives are objects with no tag (``permission_resolved``,
        ``CompactData``): one class with every field; required = what all forms require."""
        alts = d.get("oneOf") or d.get("anyOf")
        if not alts or not all(a.get("type") == "object" for a in alts):
            return None
        if Gen.tag_key(alts):
            return None
        props = dict(d.get("properties", {}))
        for a in alts:
            props.update(a.get("properties", {}))
        req = set(d.get("required", []))
        req |= set.intersection(*(set(a.get("required", [])) for a in alts))
        return {"description": d.get("description"), "properties": props,
                "required": [p for p in props if p in req]}

    @staticmethod
    def literal_values(d: dict) -> list[str] | None:
        alts = d.get("oneOf")
        if alts and all(a.get("type") == "string" and "const" in a for a in alts):
            return [a["const"] for a in alts]
        return None

    @staticmethod
    def tag_key(alts: list) -> str | None:
        for key in ("type", "kind"):
            if all("const" in a.get("properties", {}).get(key, {}) for a in alts):
                return key
        return None

    # ----- type expressions -----------------------------------------------------------
    def expr(self, node: dict) -> tuple[str, str | None]:
        """(annotation, wrapper) for a schema node; wrapper is a code template with {v}."""
        if node is True or not node:
            return "Any", None
        r = ref_name(node)
        if r:
            kind = self.classify(r)
            if kind == "object":
                return r, f"_obj({r}, {{v}})"
            if kind == "tagged":
                return r, f"_tagged(_{r.upper()}, {{v}})"
            if kind in ("literal", "alias"):
                return r, None
            return "Any", None
        for key in ("anyOf", "oneOf"):
            alts = node.get(key)
            if alts:
                non_null = [a for a in alts if a.get("type") != "null"]
                if len(non_null) == 1 and len(non_null) < len(alts):
                    ann, wrap = self.expr(non_null[0])
                    return f"{ann} | None", wrap
                parts = [self.expr(a)[0] for a in alts]
                if any(w for w in (self.expr(a)[1] for a in alts)):
                    return "Any", None
                return " | ".join(dict.fromkeys(parts)), None
        if "enum" in node:
            return "str", None
        if "const" in node:
            return f"Literal[{json.dumps(node['const'])}]", None
        types = node.get("type")
        if types is None:
            return "Any", None
        types = types if isinstance(types, list) else [types]
        nullable = "null" in types
        types = [t for t in types if t != "null"]
        if len(types) != 1:
            return "Any", None
        t = types[0]
        if t in PRIMS:
            ann, wrap = PRIMS[t], None
        elif t == "array":
            item_ann, item_wrap = self.expr(node.get("items", {}))
            ann = f"list[{item_ann}]"
            wrap = None
            if item_wrap:
                wrap = "_list(lambda x: " + item_wrap.format(v="x") + ", {v})"
        elif t == "object":
            ann, wrap = "dict[str, Any]", None
        else:
            ann, wrap = "Any", None
        return (f"{ann} | None" if nullable else ann), wrap

    # ----- emission ---------------------------------------------------------------------
    def emit_object(self, name: str, d: dict, base: str, tag: tuple[str, str] | None = None) -> None:
        lines = [f"class {name}({base}):", f'    """{doc_line(d.get("description"))}"""', "", "    __slots__ = ()"]
        req = set(d.get("required", []))
        props = d.get("properties", {})
        if tag:
            key, value = tag
            lines += ["", "    @property", f"    def {key}(self) -> Literal[{json.dumps(value)}]:",
                      f'        """The tag, always ``{value}``."""', f"        return self._d[{json.dumps(key)}]"]
        for field, node in props.items():
            if tag and field == tag[0]:
                continue
            ann, wrap = self.expr(node)
            if field not in req and not ann.endswith("| None") and ann != "Any":
                ann += " | None"
            pyname = field + "_" if keyword.iskeyword(field) else field
            get = f"self._d.get({json.dumps(field)})"
            body = wrap.format(v=get) if wrap else get
            lines += ["", "    @property", f"    def {pyname}(self) -> {ann}:",
                      f'        """{doc_line(node.get("description")) or field}"""', f"        return {body}"]
        self.classes.append("\n".join(lines))

    def run(self) -> str:
        literals, aliases = [], []
        for name, d in self.defs.items():
            kind = self.classify(name)
            if kind == "object":
                base = "Event" if name in self.event_defs else "WireObject"
                self.emit_object(name, self.merged(d) or d, base)
            elif kind == "literal":
                vals = ", ".join(json.dumps(v) for v in self.literal_values(d))
                literals.append(f"{name} = Literal[{vals}]\n\"\"\"{doc_line(d.get('description'))}\"\"\"")
            elif kind == "tagged":
                alts = d["oneOf"]
                key = self.tag_key(alts)
                table = []
                for a in alts:
                    value = a["properties"][key]["const"]
                    r = ref_name(a)
                    if r:
                        self.classify(r)
                        table.append((value, r))
                    else:
                        cls = name + camel(value)
                        self.emit_object(cls, a, "WireObject", (key, value))
                        table.append((value, cls))
                self.tag_tables[name] = (key, table)
            elif kind == "alias":
                ann, _ = self.expr({k: v for k, v in d.items() if k != "description"})
                aliases.append(f"{name} = {ann}\n\"\"\"{doc_line(d.get('description'))}\"\"\"")
        out = [HEADER.format(sha=hashlib.sha256(self.raw).hexdigest(),
                             version=self.schema.get("x-protocol-version", ""))]
        out.append("\n\n".join(literals))
        out.append("\n\n\n".join(self.classes))
        for name, (key, table) in self.tag_tables.items():
            rows = "".join(f"    {json.dumps(v)}: {cls},\n" for v, cls in table)
            out.append(f"{name} = Union[{', '.join(cls for _, cls in table)}]\n"
                       f"\"\"\"{doc_line(self.defs[name].get('description'))}\"\"\"\n\n"
                       f"_{name.upper()}: tuple[str, dict[str, type[WireObject]]] = ({json.dumps(key)}, {{\n{rows}}})")
        out.append("\n\n".join(aliases))
        out.append(self.tables())
        return "\n\n\n".join(p for p in out if p).rstrip() + "\n"

    def tables(self) -> str:
        ev_rows, routed = [], []
        for br in self.defs["Event"]["oneOf"]:
            t = br["properties"]["type"]["const"]
            r = ref_name(br)
            ev_rows.append(f"    {json.dumps(t)}: {r},")
            aid = self.defs[r].get("properties", {}).get("agent_id", {})
            if (aid.get("description") or "").startswith("Routing id"):
                routed.append(t)
        cmd_rows = []
        cm = self.defs["ClientMessage"]
        for br in cm["oneOf"]:
            t = br["properties"]["type"]["const"]
            r = ref_name(br)
            d = self.defs[r] if r else br
            props = [p for p in self.command_props(d) if p != "type"]
            req = [p for p in self.command_required(d) if p != "type"]
            cmd_rows.append(f"    {json.dumps(t)}: ({tuple_lit(req)}, {tuple_lit(props)}),")
        return (
            "EVENT_CLASSES: dict[str, type[Event]] = {\n" + "\n".join(ev_rows) + "\n}\n"
            '"""The class of each event type the schema names (unknown types use ``Event``)."""\n\n'
            f"ROUTED_EVENT_TYPES: frozenset[str] = frozenset({{{', '.join(json.dumps(t) for t in routed)}}})\n"
            '"""Per-agent events, whose ``agent_id`` routes them to an attached agent."""\n\n'
            "COMMAND_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {\n"
            + "\n".join(cmd_rows) + "\n}\n"
            '"""Each command type: (required fields, every field), ``type`` and ``id`` aside."""'
        )

    def command_props(self, d: dict) -> list[str]:
        if "oneOf" in d:  # permission_response: the union of its forms
            seen: dict[str, None] = {}
            for a in d["oneOf"]:
                seen.update(dict.fromkeys(a.get("properties", {})))
            return list(seen)
        return list(d.get("properties", {}))

    def command_required(self, d: dict) -> list[str]:
        if "oneOf" in d:
            sets = [set(a.get("required", [])) for a in d["oneOf"]]
            common = set.intersection(*sets)
            return [p for p in self.command_props(d) if p in common]
        return list(d.get("required", []))


def tuple_lit(items: list[str]) -> str:
    if not items:
        return "()"
    return "(" + ", ".join(json.dumps(i) for i in items) + ("," if len(items) == 1 else "") + ")"


HEADER = '''"""Wire types of the Shard protocol, generated from ``schema/protocol.schema.json``.

Do not edit: run ``python3 sdk/python/scripts/gen_types.py`` after the schema changes
(the test suite fails while this file and the schema disagree).
"""

# fmt: off
# ruff: noqa
from __future__ import annotations

from typing import Any, Literal, Union

from ._base import Event, WireObject, _list, _obj, _tagged

SCHEMA_SHA256 = "{sha}"
"""SHA-256 of the schema file this module was generated from."""

PROTOCOL_VERSION = "{version}"
"""The protocol version the schema describes."""'''


def generate(schema_path: Path = SCHEMA) -> str:
    raw = schema_path.read_bytes()
    return Gen(json.loads(raw), raw).run()


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale: run python3 sdk/python/scripts/gen_types.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
