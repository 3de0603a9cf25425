"""The Thrift binary protocol over a socket, as much of it as a Hive Metastore client needs (Apache Thrift's
``TBinaryProtocol`` in its strict form over a buffered ``TSocket``: what the metastore serves unless it is told to
frame its transport or to speak SASL).

A value to send is typed explicitly: ``(type, value)``, a struct a list of ``(field id, type, value)`` (a None value
is left out, as Thrift leaves out an unset optional field), a list ``(element type, [values])``, a map ``(key type,
value type, {key: value})``. A value received needs no schema (the protocol carries every type): a struct becomes
``{field id: value}``, a list a list, a map a dict, a string ``str`` (bytes that are not UTF-8 stay bytes).
"""
from __future__ import annotations

import socket
import struct
from typing import Any

BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
_STOP = 0
_VERSION_1 = 0x80010000
_CALL, _REPLY, _EXCEPTION = 1, 2, 3


class ThriftError(Exception):
    """The server answered with a Thrift application exception, or the exchange broke the protocol."""


def _encode(out: list[bytes], ttype: int, value: Any) -> None:
    if ttype == BOOL:
        out.append(b"\x01" if value else b"\x00")
    elif ttype == BYTE:
        out.append(struct.pack(">b", value))
    elif ttype == I16:
        out.append(struct.pack(">h", value))
    elif ttype == I32:
        out.append(struct.pack(">i", value))
    elif ttype == I64:
        out.append(struct.pack(">q", value))
    elif ttype == DOUBLE:
        out.append(struct.pack(">d", value))
    elif ttype == STRING:
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        out.append(struct.pack(">i", len(data)))
        out.append(data)
    elif ttype == STRUCT:
        for field_id, ftype, fvalue in value:
            if fvalue is None:
                continue
            out.append(struct.pack(">bh", ftype, field_id))
            _encode(out, ftype, fvalue)
        out.append(struct.pack(">b", _STOP))
    elif ttype in (LIST, SET):
        etype, items = value
        out.append(struct.pack(">bi", etype, len(items)))
        for item in items:
            _encode(out, etype, item)
    elif ttype == MAP:
        ktype, vtype, items = value
        out.append(struct.pack(">bbi", ktype, vtype, len(items)))
        for k, v in items.items():
            _encode(out, ktype, k)
            _encode(out, vtype, v)
    else:
        raise ThriftError(f"cannot encode Thrift type {ttype}")


def encode(ttype: int, value: Any) -> bytes:
    """``value`` of Thrift type ``ttype`` in the binary protocol."""
    out: list[bytes] = []
    _encode(out, ttype, value)
    return b"".join(out)


class _Reader:
    def __init__(self, read):
        self.read = read  # (n) -> exactly n bytes

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def value(self, ttype: int) -> Any:
        if ttype == BOOL:
            return self.read(1) != b"\x00"
        if ttype == BYTE:
            return self.unpack(">b")
        if ttype == I16:
            return self.unpack(">h")
        if ttype == I32:
            return self.unpack(">i")
        if ttype == I64:
            return self.unpack(">q")
        if ttype == DOUBLE:
            return self.unpack(">d")
        if ttype == STRING:
            data = self.read(self.unpack(">i"))
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return data
        if ttype == STRUCT:
            out = {}
            while True:
                ftype = self.unpack(">b")
                if ftype == _STOP:
                    return out
                field_id = self.unpack(">h")
                out[field_id] = self.value(ftype)
        if ttype in (LIST, SET):
            etype, n = self.unpack(">b"), self.unpack(">i")
            return [self.value(etype) for _ in range(n)]
        if ttype == MAP:
            ktype, vtype, n = self.unpack(">b"), self.unpack(">b"), self.unpack(">i")
            return {self.value(ktype): self.value(vtype) for _ in range(n)}
        raise ThriftError(f"cannot decode Thrift type {ttype}")


class Connection:
    """One socket to a Thrift server, calls made one at a time (``seqid`` counts them)."""

    def __init__(self, host: str, port: int, timeout_s: float):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.settimeout(timeout_s)
        self.seqid = 0

    def close(self) -> None:
        """Close the socket."""
        try:
            self.sock.close()
        except OSError:
            pass

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(left)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def call(self, method: str, args: list[tuple[int, int, Any]]) -> dict[int, Any]:
        """Call ``method`` with the argument struct ``args``: the result struct (field 0 the return value, the
        others the declared exceptions); a Thrift application exception raises :class:`ThriftError`."""
        self.seqid += 1
        name = method.encode("ascii")
        message = struct.pack(">Ii", _VERSION_1 | _CALL, len(name)) + name + struct.pack(">i", self.seqid) + \
            encode(STRUCT, args)
        self.sock.sendall(message)
        reader = _Reader(self._read)
        header = reader.unpack(">I")
        if header & 0xFFFF0000 != _VERSION_1:
            raise ThriftError(f"not a Thrift binary protocol reply to {method} (header {header:#x})")
        reader.read(reader.unpack(">i"))  # (the method's name)
        reader.unpack(">i")  # (seqid)
        result = reader.value(STRUCT)
        if header & 0xFF == _EXCEPTION:
            raise ThriftError(f"{method}: {result.get(1, 'application exception')}")
        return result


__all__ = ["Connection", "ThriftError", "encode", "BOOL", "BYTE", "DOUBLE", "I16", "I32", "I64", "STRING",
           "STRUCT", "MAP", "SET", "LIST"]
