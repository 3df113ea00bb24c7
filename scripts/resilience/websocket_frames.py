"""WebSocket frames (RFC 6455) for the resilience helpers, standard library only."""
import os
import struct


async def read_frame(reader):
    """One frame from an asyncio reader: (opcode, payload), unmasked if it came masked."""
    first, second = await reader.readexactly(2)
    length = second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", await reader.readexactly(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if second & 0x80 else None
    payload = await reader.readexactly(length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return first & 0x0F, payload


def frame(opcode, payload, masked):
    """A final frame; a client's must be masked, a server's must not (RFC 6455 §5.1)."""
    mask_bit = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, mask_bit | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, mask_bit | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, mask_bit | 127, n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
