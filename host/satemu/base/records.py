# SPDX-License-Identifier: BSD-2-Clause
"""The records the channels write into memory and the host reads back: the frame log's
(gateware ``satemu_gw.framelog``, two 64-bit words a record; ``satemu.model.framelog`` says what
a ring of them holds) and the BoD statistics ring's (``satemu_gw.bod_slots``, one record a
superframe, fields ``regmap.BOD_RECORD``).

Frame log, word 0: ``cycle`` (48 bits, mod 2^48), ``length`` (16). Word 1: ``index`` (24, mod
2^24; sent: 0), ``tx`` (24, mod 2^24), ``fate`` (3), ``kind`` (1: 0 decided, 1 sent), ``late``
(1), ``valid`` (1, always 1), ``terminal`` (4: whose frame, 15 no one's; 0 without terminals),
``lap`` (6, mod 2^6).
"""

from __future__ import annotations

from dataclasses import dataclass

from satemu.base.regmap import BOD_RECORD

__all__ = ["RECORD_WORDS", "CYCLE_BITS", "LENGTH_BITS", "WORD1", "LAP_BITS", "DECIDED", "SENT",
           "Record",
           "pack", "unpack", "BodRecord", "pack_record", "unpack_record"]

RECORD_WORDS = 2
CYCLE_BITS, LENGTH_BITS = 48, 16
# Word 1's fields, least significant first.
WORD1 = (("index", 24), ("tx", 24), ("fate", 3), ("kind", 1), ("late", 1), ("valid", 1),
         ("terminal", 4), ("lap", 6))
LAP_BITS = 6
INDEX_MOD = 1 << 24
LAP_MOD = 1 << LAP_BITS
CYCLE_MOD = 1 << CYCLE_BITS
DECIDED, SENT = 0, 1


@dataclass(frozen=True)
class Record:
    kind: int
    cycle: int           # mod 2^48: arrival (decided) or start (sent)
    length: int
    index: int = 0       # decided: among the frames decided, mod 2^24
    tx: int = 0          # among the frames sent (decided: the index it takes if delivered)
    fate: int = 0        # decided: a satemu.base.params.Fate
    late: bool = False   # sent: started after its scheduled cycle
    lap: int = 0
    terminal: int = 0    # whose frame (its terminal's own index among frames sent: ``tx``)


def pack(r: Record) -> tuple[int, int]:
    w0 = (r.cycle % CYCLE_MOD) | (r.length << CYCLE_BITS)
    values = {"index": r.index % INDEX_MOD, "tx": r.tx % INDEX_MOD, "fate": r.fate,
              "kind": r.kind, "late": int(r.late), "valid": 1, "lap": r.lap % LAP_MOD,
              "terminal": r.terminal}
    w1, at = 0, 0
    for name, width in WORD1:
        w1 |= values[name] << at
        at += width
    return w0, w1


def unpack(w0: int, w1: int) -> Record | None:
    """The record in two words, or None where ``valid`` is 0 (never written)."""
    values, at = {}, 0
    for name, width in WORD1:
        values[name] = (w1 >> at) & ((1 << width) - 1)
        at += width
    if not values.pop("valid"):
        return None
    return Record(kind=values["kind"], cycle=w0 % CYCLE_MOD, length=w0 >> CYCLE_BITS,
                  index=values["index"], tx=values["tx"], fate=values["fate"],
                  late=bool(values["late"]), lap=values["lap"], terminal=values["terminal"])



@dataclass
class BodRecord:
    """One superframe, as the gateware's statistics ring holds it (regmap.BOD_RECORD)."""
    sf: int
    rbdc_req: int = 0
    vbdc_req: int = 0
    bg: int = 0
    g_cra: int = 0
    g_rbdc: int = 0
    g_vbdc: int = 0
    g_fca: int = 0
    used: int = 0
    terminal: int = 0
    backlog: int = 0

    @property
    def granted(self) -> int:
        return self.g_cra + self.g_rbdc + self.g_vbdc + self.g_fca


def pack_record(rec: BodRecord) -> int:
    value, shift = 0, 0
    for name, width in BOD_RECORD:
        value |= (getattr(rec, name) & ((1 << width) - 1)) << shift
        shift += width
    return value


def unpack_record(value: int) -> BodRecord:
    fields, shift = {}, 0
    for name, width in BOD_RECORD:
        fields[name] = (value >> shift) & ((1 << width) - 1)
        shift += width
    return BodRecord(**fields)
