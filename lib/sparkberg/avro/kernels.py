"""The compiled part of :mod:`sparkberg.avro.compiled`: the interpreter that runs a schema's program over Avro
records, compiled to machine code by numba (once per machine, kept in numba's on-disk cache) when first called,
without the GIL. Imported, with numba, only when a file is first decoded."""
import numba
import numpy as np

from sparkberg.avro.instructions import (
    MAX_DEPTH, OP_ARRAY, OP_BOOLEAN, OP_BYTES, OP_DOUBLE, OP_FIXED, OP_FLOAT, OP_INT, OP_ITEM_END, OP_JUMP, OP_MAP,
    OP_KEYED_ARRAY, OP_MARK, OP_NULL, OP_SKIP_ARRAY, OP_UNION, SKIP_LENGTH, SKIP_VARINT,
)

_compiled = numba.njit(cache=True, nogil=True, boundscheck=False)
# (steps of the interpreter, inlined where it calls them: a call that passes the value arrays costs about as much
# as reading a metrics map of a few items)
_inlined = numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")


@_compiled
def read_long(buf, pos, size):
    """The Avro long (a zigzag varint) at ``pos`` and the position after it; the position is -1 where the data
    ends first or the varint runs past 64 bits."""
    shift = 0
    acc = np.uint64(0)
    while True:
        if pos >= size or shift > 63:
            return np.int64(0), np.int64(-1)
        byte = buf[pos]
        pos += 1
        acc |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            break
        shift += 7
    return np.int64(acc >> np.uint64(1)) ^ -np.int64(acc & np.uint64(1)), np.int64(pos)


@_inlined
def read_width(buf, pos, size, width):
    """The length of the bytes value at ``pos`` (``width``, or read first when it is SKIP_LENGTH) and the position
    of its first byte; the position is -1 where the value runs past the data."""
    if width == SKIP_LENGTH:
        width, pos = read_long(buf, pos, size)
        if pos < 0:
            return np.int64(0), np.int64(-1)
    if width < 0 or width > size - pos:
        return np.int64(0), np.int64(-1)
    return np.int64(width), np.int64(pos)


@_compiled
def run(buf, n, code, targets, ints, ivalid, ibase, floats, fvalid, fbase, starts, lens, bvalid, bbase, counts,
        caps, store):
    """Decode ``n`` records of ``buf`` with the program ``code``: the position after the last record, -1 when
    an array's items outgrow their room (``caps``, by the array's slot: the caller makes more), -2 for data that
    does not fit the schema. Each kind's values are one flat array, a slot's from its base (``ibase``...) on:
    the records' slots hold ``n`` values, those inside an array as many as its room. ``counts`` ends with each
    array's items; with ``store`` false nothing else is written (how much room each array needs). The integer
    arithmetic is numpy's, so it wraps as Java's."""
    size = buf.shape[0]
    stack_body = np.empty(MAX_DEPTH, np.int64)  # an open array: its first item instruction,
    stack_left = np.empty(MAX_DEPTH, np.int64)  # items left in the current block,
    stack_row = np.empty(MAX_DEPTH, np.int64)   # the row it belongs to,
    stack_total = np.empty(MAX_DEPTH, np.int64)  # its items so far,
    stack_array = np.empty(MAX_DEPTH, np.int64)  # its instruction
    ncode = code.shape[0]
    pos = 0
    for entry in range(n):
        pc = 0
        row = entry
        depth = 0
        while pc < ncode:
            op = code[pc, 0]
            slot = code[pc, 3]
            if op == OP_INT or op == OP_UNION:
                value, pos = read_long(buf, pos, size)
                if pos < 0:
                    return -2
                if op == OP_INT:
                    if slot >= 0 and store:
                        ints[ibase[slot] + row] = value
                        ivalid[ibase[slot] + row] = 1
                    pc += 1
                else:
                    if value < 0 or value >= code[pc, 2]:
                        return -2
                    pc = targets[code[pc, 1] + value]
            elif op == OP_BYTES or op == OP_FIXED:  # (bytes and strings: their length first)
                width = code[pc, 1]
                if op == OP_BYTES:
                    width, pos = read_long(buf, pos, size)
                    if pos < 0:
                        return -2
                if width < 0 or width > size - pos:
                    return -2
                if slot >= 0 and store:
                    starts[bbase[slot] + row] = pos
                    lens[bbase[slot] + row] = width
                    bvalid[bbase[slot] + row] = 1
                pos += width
                pc += 1
            elif op == OP_JUMP:
                pc = code[pc, 1]
            elif op == OP_SKIP_ARRAY:
                pos = skip_array(buf, pos, size, targets, code[pc, 1], code[pc, 2])
                if pos < 0:
                    return -2
                pc += 1
            elif op == OP_NULL:
                pc += 1
            elif op == OP_MARK:
                if store:
                    ints[ibase[slot] + row] = pos
                    ivalid[ibase[slot] + row] = 1
                pc += 1
            elif op == OP_BOOLEAN:
                if pos >= size:
                    return -2
                if slot >= 0 and store:
                    ints[ibase[slot] + row] = buf[pos]
                    ivalid[ibase[slot] + row] = 1
                pos += 1
                pc += 1
            elif op == OP_FLOAT or op == OP_DOUBLE:
                width = 4 if op == OP_FLOAT else 8
                if width > size - pos:
                    return -2
                if slot >= 0 and store:
                    if op == OP_FLOAT:
                        floats[fbase[slot] + row] = buf[pos:pos + 4].view(np.float32)[0]
                    else:
                        floats[fbase[slot] + row] = buf[pos:pos + 8].view(np.float64)[0]
                    fvalid[fbase[slot] + row] = 1
                pos += width
                pc += 1
            elif op == OP_ARRAY or op == OP_MAP or op == OP_ITEM_END:
                if op == OP_ITEM_END:  # an item is done: the next one, or the next block
                    depth -= 1
                    array = stack_array[depth]
                    stack_left[depth] -= 1
                    more = stack_left[depth] > 0
                else:
                    if depth >= MAX_DEPTH:
                        return -2
                    array = pc
                    more = False
                    stack_row[depth] = row
                    stack_total[depth] = 0
                    stack_array[depth] = pc
                    stack_body[depth] = pc + 1
                    stack_left[depth] = 0
                if not more:  # a block count (0 ends the array; negative: its byte size follows)
                    count, pos = read_long(buf, pos, size)
                    if count < 0:
                        count = -count
                        _, pos = read_long(buf, pos, size)  # (the block's size in bytes)
                    if pos < 0:
                        return -2
                    if count == 0:  # the array is done
                        row = stack_row[depth]
                        list_slot = code[array, 3]
                        if list_slot >= 0 and store:
                            ints[ibase[list_slot] + row] = stack_total[depth]
                            ivalid[ibase[list_slot] + row] = 1
                        pc = code[array, 1]
                        continue
                    if count > size - pos:  # (a corrupt count; items of no bytes are left to the other decoders)
                        return -2
                    stack_left[depth] = count
                    stack_total[depth] += count
                list_slot = code[array, 3]
                if list_slot >= 0:
                    if store and counts[list_slot] >= caps[list_slot]:
                        return -1
                    row = counts[list_slot]
                    counts[list_slot] += 1
                else:
                    row = 0
                if code[array, 0] == OP_MAP:  # a map item's key: read past it
                    length, pos = read_long(buf, pos, size)
                    if pos < 0 or length < 0 or length > size - pos:
                        return -2
                    pos += length
                depth += 1
                pc = stack_body[depth - 1]
            elif op == OP_KEYED_ARRAY:
                pos = keyed_array(buf, pos, size, targets, code[pc, 1], code[pc, 2], slot, row, ints, ivalid, ibase,
                                  starts, lens, bvalid, bbase, counts, caps, store)
                if pos < 0:
                    return pos
                pc += 1
            else:
                return -2
    return pos


@_compiled
def skip_array(buf, pos, size, shapes, first, width):
    """The position after the array (or map) at ``pos`` whose items are flat values of the shape
    ``shapes[first:first + width]`` (widths in bytes, or SKIP_VARINT, SKIP_LENGTH); -1 for data that does not
    fit. Blocks that give their size in bytes are stepped over whole."""
    while True:
        count, pos = read_long(buf, pos, size)
        if pos < 0:
            return -1
        if count == 0:
            return pos
        if count < 0:
            count = -count
            length, pos = read_long(buf, pos, size)
            if pos < 0 or length < 0 or length > size - pos:
                return -1
            pos += length
            continue
        if count > size - pos:  # (a corrupt count; as the interpreter's arrays)
            return -1
        for _ in range(count):
            for k in range(first, first + width):
                shape = shapes[k]
                if shape == SKIP_VARINT:
                    _, pos = read_long(buf, pos, size)
                    if pos < 0:
                        return -1
                else:
                    length, pos = read_width(buf, pos, size, shape)
                    if pos < 0:
                        return -1
                    pos += length


@_inlined
def keyed_array(buf, pos, size, targets, first, nkeys, list_slot, row, ints, ivalid, ibase, starts, lens, bvalid,
                bbase, counts, caps, store):
    """Read the array at ``pos`` of (int key, flat value) records, keeping only the items whose key is one of
    ``targets[first + 3:first + 3 + nkeys]`` (``targets[first:first + 3]``: the key's slot, the value's slot and
    the value's shape, SKIP_VARINT for an integer, SKIP_LENGTH or a width in bytes for bytes), as the interpreter
    keeps an array's items, and as the row's item count the items kept. Returns the position after the array,
    -1 when the items kept outgrow their room, -2 for data that does not fit."""
    key_slot, value_slot, shape = targets[first], targets[first + 1], targets[first + 2]
    kept = 0
    while True:
        count, pos = read_long(buf, pos, size)
        if pos < 0:
            return -2
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = read_long(buf, pos, size)  # (the block's size in bytes)
            if pos < 0:
                return -2
        if count > size - pos:  # (a corrupt count; as the interpreter's arrays)
            return -2
        for _ in range(count):
            key, pos = read_long(buf, pos, size)
            if pos < 0:
                return -2
            # (an integer value, or the length of a bytes value starting at ``start``)
            if shape == SKIP_VARINT:
                value, pos = read_long(buf, pos, size)
            else:
                value, pos = read_width(buf, pos, size, shape)
            if pos < 0:
                return -2
            start = pos
            if shape != SKIP_VARINT:
                pos += value
            wanted = False
            for k in range(first + 3, first + 3 + nkeys):
                if targets[k] == key:
                    wanted = True
                    break
            if not wanted:
                continue
            if store:
                if counts[list_slot] >= caps[list_slot]:
                    return -1
                item = counts[list_slot]
                ints[ibase[key_slot] + item] = key
                ivalid[ibase[key_slot] + item] = 1
                if shape == SKIP_VARINT:
                    ints[ibase[value_slot] + item] = value
                    ivalid[ibase[value_slot] + item] = 1
                else:
                    starts[bbase[value_slot] + item] = start
                    lens[bbase[value_slot] + item] = value
                    bvalid[bbase[value_slot] + item] = 1
            counts[list_slot] += 1
            kept += 1
    if store:
        ints[ibase[list_slot] + row] = kept
        ivalid[ibase[list_slot] + row] = 1
    return pos


@_compiled
def gather(buf, starts, lens, valid, n):
    """The ``n`` byte strings at (start, length) as Arrow's int32 offsets and data (nulls empty)."""
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        if valid[i]:
            total += lens[i]
        offsets[i + 1] = total
    data = np.empty(total, np.uint8)
    at = 0
    for i in range(n):
        if valid[i]:
            length = lens[i]
            data[at:at + length] = buf[starts[i]:starts[i] + length]
            at += length
    return offsets, data
