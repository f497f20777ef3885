# SPDX-License-Identifier: BSD-2-Clause
"""A fake box behind serial.Serial's surface, as satemu.box.device.Device uses it: requests are
deframed as they are written and each is answered by the subclass's ``answer(op, payload)``
(the payload of the response, status byte first), framed, ready to be read."""

from satemu.base import protocol as P


class FakeSerial:
    def __init__(self):
        self.deframer, self.out = P.Deframer(), bytearray()

    def answer(self, op: int, payload: bytes) -> bytes:
        raise NotImplementedError

    def write(self, data: bytes):
        for seq, op, payload in self.deframer.feed(data):
            self.out += P.encode_frame(seq, op | P.RESPONSE_BIT, self.answer(op, payload))

    def read(self, n: int) -> bytes:
        data, self.out[:n] = bytes(self.out[:n]), b""
        return data

    def close(self):
        pass

    def reset_input_buffer(self):
        self.out.clear()

    @property
    def in_waiting(self) -> int:
        return len(self.out)
