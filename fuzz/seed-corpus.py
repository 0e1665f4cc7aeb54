#!/usr/bin/env python3
"""Writes every protocol test vector as one corpus file under corpus/decode, and a few
framing seeds under corpus/codec, so fuzzing starts from valid messages."""
import hashlib
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
vectors = here.parent / "crates/shard-protocol/tests/vectors"
decode = here / "corpus/decode"
codec = here / "corpus/codec"
decode.mkdir(parents=True, exist_ok=True)
codec.mkdir(parents=True, exist_ok=True)
for f in sorted(vectors.glob("*.json")):
    for v in json.loads(f.read_text()):
        b = json.dumps(v["json"], ensure_ascii=False, separators=(",", ":")).encode()
        (decode / hashlib.sha1(b).hexdigest()[:16]).write_bytes(b)
# First byte: line limit; second: chunk pattern; then the stream.
(codec / "mixed").write_bytes(
    b'\x20\x05{"a":1}\r\n\n  \n{"b":"\xe2\x80\xa8"}\n' + b"x" * 60 + b'\n{"c":3}'
)
(codec / "crlf").write_bytes(b'\x08\x01a\r\r\n\r\n' + b"y" * 9 + b"\r\n")
