# SPDX-License-Identifier: BSD-2-Clause
"""Bandwidth-on-Demand on the host: profiles, their registers, the firmware's checks against the
model's, BOD_TRACE through the device API and the CLI (against a fake box), CSV and plot."""

import csv
import random
from dataclasses import replace
from fractions import Fraction

import pytest

from satemu.box import device as device_mod
from satemu.base import protocol as P
from satemu.base.records import BodRecord, pack_record
from satemu.model.bod import superframe_cycles
from satemu.base.boards import BOARDS
from satemu.box.bod_trace import COLUMNS, records_to_rows, write_csv
from satemu.base.validate import delay_line_traffic
from satemu.model.channel import simulate
from satemu.base.params import ChannelRegs
from satemu.cli import main
from satemu.box.device import Device, DeviceError
from satemu.link.profile import ProfileError, builtin_profiles, load_profile, parse_profile
from satemu.base.regmap import BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, BOD_RECORD_WORDS, REGMAP
from satemu.report.plots import plot_demand_grant
from satemu.base.hardware import Hardware
from satemu.base.validate import profile_fields, validate

from fake_serial import FakeSerial

SIM = BOARDS["sim"].hardware
HW75 = Hardware(f_clk=75_000_000, mem_words=6 << 20)     # a 75 MHz clock, 48 MiB delay lines
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BASE = """
[forward]
rate = "8.5 Mbit/s"
delay = "300 ms"
[return]
delay = "300 ms"
{ret}
[return.bod]
superframe = "26.5 ms"
slots = 140
slot_bytes = 188
latency = 26
{bod}
"""


def bod_profile(bod: str = 'cra = "100 kbit/s"', ret: str = ""):
    return parse_profile(BASE.format(bod=bod, ret=ret), "t")


# ---- profiles ---------------------------------------------------------------------------------

def test_geo_testbed_bod_registers():
    p = load_profile("geo-testbed-bod")
    regs = p.check(HW75)
    r = regs["return"]
    assert r.bod and not regs["forward"].bod
    assert (r.rate_q, r.rate_num, r.rate_den) == (0, 0, 1)           # the grants pace it
    # 26.5 ms over 140 slots at 75 MHz: 14196 cycles a slot, 26.4992 ms a superframe.
    assert (r.bod_slot_cycles, r.bod_slots, r.bod_slot_bytes) == (14196, 140, 188)
    # rate x superframe / (8 x slot bytes) x 256: 100 kbit/s -> 451.05, 1.5 Mbit/s -> 6765.7
    assert (r.bod_cra, r.bod_rbdc_max) == (451, 6766)
    assert r.bod_vbdc_max == 341                                      # ceil(64000 / 188)
    assert (r.bod_rbdc_timeout, r.bod_req_period, r.bod_latency) == (8, 1, 26)
    assert r.bod_flags == BOD_ENABLE
    assert (r.bod_bg_count, r.bod_bg0, r.bod_bg1) == (1, 70 | 1 << 16, 0)   # half of 140 slots
    assert r.queue_frames == 50 and r.delay == 22_500_000
    sim = p.check(SIM)["return"]
    assert sim.bod_slot_cycles == 1183 and sim.bod_cra == 451
    assert p.ret.bod.superframe_at(75_000_000) == Fraction(140 * 14196, 75_000_000)


def test_builtin_bod_profiles_fit_the_reference_and_the_simulated_board():
    profiles = builtin_profiles()
    names = ["geo-small", "geo-testbed", "geo-medium", "geo-large", "geo-constrained-return"]
    for name in names:
        base, p = profiles[name], profiles[f"{name}-bod"]
        assert p.forward == base.forward and p.ret.rate is None
        assert p.ret.delay == base.ret.delay
        assert (p.ret.queue_frames, p.ret.queue_bytes) == (base.ret.queue_frames, base.ret.queue_bytes)
        b = p.ret.bod
        assert b.rbdc_max == base.ret.rate and b.superframe == Fraction(53, 2000)
        assert b.latency == 26 and b.rbdc_timeout == 8 and b.vbdc_max == 64_000 and not b.fca
        assert b.cra == (32_000 if name == "geo-constrained-return" else 100_000)
        # The carrier left by the other terminals carries CRA and the whole RBDC maximum.
        assert b.carrier_rate() * (1 - b.background[0][0]) >= b.cra + b.rbdc_max
        for hw in (HW75, SIM):
            regs = p.check(hw)
            fields = profile_fields(regs["return"])
            assert validate(fields, hw, P.CHANNEL_RETURN).status == P.Status.OK, name


def test_bod_schedule_flags_and_default_queue():
    p = bod_profile('rbdc_max = "2 Mbit/s"\nfca = true\nbackground_repeat = true\n'
                    'background = [{level = "10%", duration = "265 ms"}, '
                    '{level = 1, duration = "1 s"}, {level = 0, duration = "26.5 ms"}]')
    r = p.check(HW75)["return"]
    assert r.bod_flags == BOD_ENABLE | BOD_FCA | BOD_BG_REPEAT
    assert r.bod_bg_count == 3
    # 10% of 140 slots for 10 superframes, all for round(1 s / 26.4992 ms) = 38, none for 1.
    assert (r.bod_bg0, r.bod_bg1, r.bod_bg2, r.bod_bg3) == (14 | 10 << 16, 140 | 38 << 16,
                                                            1 << 16, 0)
    assert r.bod_cra == 0 and r.bod_vbdc_max == 0
    assert p.ret.queue_bytes == 2_000_000 * Fraction(6, 10) / 8        # one BDP at rbdc_max
    # Without RBDC, one BDP at the carrier's rate: 140 x 188 B per 26.5 ms.
    assert bod_profile().ret.queue_bytes == int(Fraction(140 * 188 * 8, Fraction(53, 2000))
                                                * Fraction(6, 10) / 8)
    text = "\n".join(p.ret.describe(HW75, "return").splitlines())
    assert "superframe 26.4992 ms (140 slots of 188 B, 26.5 ms asked)" in text
    assert "FCA on" in text and "10% for 265 ms, 100% for 1 s, 0% for 26.5 ms, repeating" in text


def test_show_prints_bod_settings(capsys):
    assert main(["show", "geo-testbed-bod", "--f-clk", "75000000"]) == 0
    out = capsys.readouterr().out
    assert "paced by BoD grants" in out and "carrier 7.9459 Mbit/s" in out
    assert "CRA 100 kbit/s, RBDC up to 1.5 Mbit/s (held 8 superframes), VBDC up to 64 KB" in out
    assert "granted 26 superframes later (688.979 ms)" in out
    assert "140 slots of 14196 cycles; CRA 451, RBDC max 6766" in out


@pytest.mark.parametrize("bod, ret, message", [
    ('cra = "100 kbit/s"', 'rate = "1 Mbit/s"', r"return.rate: a BoD channel is paced by its grants"),
    ('cra = "1 kbit/s"\nspeed = 1', "", r"return.bod.speed: unknown setting; known ones are"),
    ("", "", r"return.bod: no capacity could ever be granted; give cra, rbdc_max"),
    ('cra = "0 bit/s"\nfca = 1', "", r"return.bod.fca: expected true or false, got 1"),
    ('cra = "1 kbit/s"\nbackground_repeat = "yes"', "", r"return.bod.background_repeat: expected true or false"),
    ('cra = "10 Mbit/s"', "", r"return.bod.cra: 10 Mbit/s is outside the allowed range 0 bit/s \.\. "
                              r"7.9459 Mbit/s \(the carrier: 140 slots of 188 B per 26.4992 ms\)"),
    ('cra = "fast"', "", r"return.bod.cra: expected a rate"),
    ('rbdc_max = "9 Mbit/s"\nfca = true', "", r"return.bod.rbdc_max: 9 Mbit/s is outside the allowed range 0 bit/s"),
    ('rbdc_max = "1 Mbit/s"', "", r"return.bod: RBDC alone can leave frames queued for good: .* give "
                                  r"vbdc_max, cra or fca = true too"),
    ('cra = "1 kbit/s"\nrbdc_timeout = 70000', "", r"return.bod.rbdc_timeout: 70000 is outside the allowed range 0 \.\. 65535"),
    ('cra = "1 kbit/s"\nrbdc_timeout = 1.5', "", r"return.bod.rbdc_timeout: expected a whole number"),
    ('vbdc_max = "100 MB"', "", r"return.bod.vbdc_max: 100 MB is outside the allowed range 0 B \.\. 12.3206 MB \(65535 slots\)"),
    ('vbdc_max = "1.5 B"', "", r"return.bod.vbdc_max: must be a whole number of bytes"),
    ('cra = "1 kbit/s"\nrequest_period = 0', "", r"return.bod.request_period: 0 is outside the allowed range 1 \.\. 65535"),
    ('cra = "1 kbit/s"\nbackground = 1.5', "", r"return.bod.background: 1.5 is outside the allowed range 0 \.\. 1"),
    ('cra = "1 kbit/s"\nbackground = "lots"', "", r"return.bod.background: expected a probability"),
    ('cra = "1 kbit/s"\nbackground = []', "", r"return.bod.background: 0 levels is outside the allowed range 1 \.\. 8"),
    ('cra = "1 kbit/s"\nbackground = [' + ", ".join(['{level = 0, duration = "1 s"}'] * 9) + "]", "",
     r"return.bod.background: 9 levels is outside the allowed range 1 \.\. 8"),
    ('cra = "1 kbit/s"\nbackground = [{level = 0.2}]', "", r"return.bod.background\[0\]: expected a table with exactly level, duration"),
    ('cra = "1 kbit/s"\nbackground = [3]', "", r"return.bod.background\[0\]: expected a table of a level"),
    ('cra = "1 kbit/s"\nbackground = [{level = 0.2, duration = "1 s", x = 1}]', "", r"return.bod.background\[0\].x: unknown setting"),
    ('cra = "1 kbit/s"\nbackground = [{level = 0, duration = "1 s"}, {level = 2, duration = "1 s"}]', "",
     r"return.bod.background\[1\].level: 2.0 is outside the allowed range 0 \.\. 1"),
    ('cra = "1 kbit/s"\nbackground = [{level = 0.2, duration = "1 ms"}]', "",
     r"return.bod.background\[0\].duration: 1 ms is 0 superframes of 26.4992 ms, outside the allowed range 1 \.\. 65535"),
    ('cra = "1 kbit/s"\nbackground = [{level = 0.2, duration = "1 h"}]', "", r"return.bod.background\[0\].duration: unknown unit 'h'"),
])
def test_bod_errors_name_the_field_and_range(bod, ret, message):
    with pytest.raises(ProfileError, match=message):
        bod_profile(bod, ret).check(HW75)


def test_a_timeline_step_that_leaves_rbdc_alone_is_refused():
    """A step may not take a BoD block to RBDC alone either: the backlog could stay for good."""
    from satemu.link.timeline import compile_timeline
    text = BASE.format(bod='cra = "100 kbit/s"\nrbdc_max = "1 Mbit/s"', ret="") + \
        '[[timeline]]\nat = "1 s"\nreturn.bod.cra = "0 bit/s"\n'
    with pytest.raises(ProfileError, match=r"timeline\[0\] \(at 1 s\): return.bod: RBDC alone"):
        compile_timeline(parse_profile(text, "t"), SIM)


@pytest.mark.parametrize("replace_line, message", [
    ("slots = 140", r"return.bod.slots: missing; a BoD table needs superframe, slots, slot_bytes, latency"),
    ("slots = 0", r"return.bod.slots: 0 is outside the allowed range 1 \.\. 65535"),
    ("slots = 70000", r"return.bod.slots: 70000 is outside the allowed range 0 \.\. 65535 "
                      r"\(16-bit register\)"),
    ('slots = "many"', r"return.bod.slots: expected a whole number, got 'many'"),
    ("slot_bytes = 0", r"return.bod.slot_bytes: 0 B is outside the allowed range 1 B \.\. 65535 B"),
    ('slot_bytes = "100 KB"', r"return.bod.slot_bytes: 100000 B is outside the allowed range 0 B \.\. "
                              r"65535 B \(16-bit register\)"),
    ('slot_bytes = "1.5 B"', r"return.bod.slot_bytes: must be a whole number of bytes"),
    ('superframe = "1 us"', r"return.bod.superframe: 1 us is outside the allowed range 59.7333 us \.\. "
                            r"8017.27 s \(32 \.\. 2\^32 - 1 cycles a slot at 75 MHz\)"),
    ('superframe = "soon"', r"return.bod.superframe: expected a time"),
    ("latency = 0", r"return.bod.latency: 0 is outside the allowed range 1 \.\. 64"),
    ("latency = 65", r"return.bod.latency: 65 is outside the allowed range 1 \.\. 64"),
])
def test_bod_required_settings_and_ranges(replace_line, message):
    text = BASE.format(bod='cra = "100 kbit/s"', ret="")
    key = replace_line.split(" = ")[0]
    lines = [line for line in text.splitlines() if not line.startswith(f"{key} = ")]
    if replace_line != "slots = 140":
        lines.insert(lines.index("[return.bod]") + 1, replace_line)
    with pytest.raises(ProfileError, match=message):
        parse_profile("\n".join(lines), "t").check(HW75)


def test_a_queue_deeper_than_the_chip_keeps_slots_small():
    """Where a BoD queue may hold more frames than the chip holds departure times (1024 on the
    simulated board, whose BoD queue takes 65,535), a slot carries fewer than a quarter of them
    (docs/bod.md, "The queue"): 256 x (60 + 10) - 1 = 17,919 bytes at most, with a 10-byte
    overhead. A queue within the chip's depth leaves the slot alone."""
    def profile(slot_bytes, ret='queue = "1 MB"'):
        text = BASE.format(bod='cra = "100 kbit/s"', ret=f'overhead = "10 B"\n{ret}')
        return parse_profile(text.replace("slot_bytes = 188", f"slot_bytes = {slot_bytes}"), "t")

    assert SIM.params.bod_depth == 65535 and SIM.params.queue_onchip == 1024
    assert profile(17_919).check(SIM)["return"].bod_slot_bytes == 17_919
    with pytest.raises(ProfileError, match=r"return.bod.slot_bytes: 17920 B is outside the "
                                           r"allowed range 1 B \.\. 17919 B"):
        profile(17_920).check(SIM)
    assert profile(17_920, 'queue = "1024 packets"').check(SIM)["return"].queue_frames == 1024


def test_bod_only_where_the_hardware_has_it():
    text = BASE.format(bod='cra = "100 kbit/s"', ret="").replace("[return.bod]", "[forward.bod]")
    text = text.replace('rate = "8.5 Mbit/s"\n', "")
    with pytest.raises(ProfileError, match=r"forward.bod: the forward channel has no "
                                           r"Bandwidth-on-Demand block on this hardware "
                                           r"\(return channel has one\)"):
        parse_profile(text, "t").check(HW75)
    with pytest.raises(ProfileError, match=r"return.bod: .* \(no channel has one\)"):
        load_profile("geo-testbed-bod").check(replace(HW75, bod_channels=()))
    parse_profile(text, "t").check(replace(HW75, bod_channels=("forward", "return")))


def test_bod_budget_is_checked():
    # A slow forward link, so the return channel is the one that needs the most.
    p = parse_profile(BASE.format(bod='cra = "100 kbit/s"', ret='queue = "50 packets"')
                      .replace("8.5 Mbit/s", "1 Mbit/s"), "t")
    need = p.ret.budget_words(HW75, "return")
    with pytest.raises(ProfileError, match=rf"return: delay x rate needs {need} delay-line words"):
        p.check(replace(HW75, mem_words=need - 1))


# ---- the firmware's checks against the model's --------------------------------------------------

def _random_bod_fields(rng: random.Random, base: dict) -> dict:
    f = dict(base, bod_flags=BOD_ENABLE | rng.choice([0, BOD_FCA, BOD_BG_REPEAT]))
    slots = f["bod_slots"] = rng.choice([0, 1, 2, 140, rng.randrange(1, 1 << 16)])
    top = slots * 256

    def pick(*choices):
        return rng.choice(choices)
    f["bod_slot_cycles"] = pick(0, 31, 32, 33, 14196, rng.randrange(1 << 32))
    f["bod_slot_bytes"] = pick(0, 1, 188, 65535)
    f["bod_cra"] = pick(0, top, top + 1, rng.randrange(1 << 24))
    f["bod_rbdc_max"] = pick(0, top, top + 1, rng.randrange(1 << 24))
    f["bod_rbdc_timeout"] = pick(0, 8, 65535)
    f["bod_vbdc_max"] = pick(0, 341, 65535)
    f["bod_req_period"] = pick(0, 1, 2, 65535)
    f["bod_latency"] = pick(0, 1, 26, 64, 65, 127)
    f["bod_bg_count"] = pick(0, 1, 2, 8, 9, 15)
    for i in range(8):
        f[f"bod_bg{i}"] = pick(0, slots, slots + 1, rng.randrange(1 << 16)) | pick(0, 1, 7) << 16
    return f


def test_the_model_runs_every_bod_setting_the_validator_accepts():
    """Random BoD register sets: each one the validator (the firmware's rules) accepts, the
    BoD model runs (a few superframes of two frames); every rule is seen to reject some."""
    hw = HW75
    regs = load_profile("geo-testbed-bod").check(hw)["return"]
    base = profile_fields(regs)
    memory = replace(hw, mem_words=1 << 40)   # enough for any carrier: no BUDGET verdicts
    rng = random.Random(11)
    seen, ran = set(), 0
    for _ in range(4000):
        fields = _random_bod_fields(rng, base)
        v = validate(fields, memory, P.CHANNEL_RETURN)
        assert v.status in (P.Status.OK, P.Status.BAD_FIELD)
        if v.status == P.Status.BAD_FIELD:
            assert v.name.startswith("bod_") and v.lo <= v.hi and v.name in v.explain()
            seen.add(v.name.rstrip("01234567") if v.name.startswith("bod_bg") else v.name)
            continue
        if fields["bod_slots"] <= 1000:
            r = ChannelRegs(**fields, mem_size=1 << 20)
            out = simulate([(100, 200, False), (300, 1500, False)], r, hw.channel_params(1),
                           until=100 + 3 * superframe_cycles(r))
            assert len(out.frames) == 2 and out.counters["rx_frames"] == 2
            ran += 1
    assert ran >= 5
    assert seen == {"bod_slot_cycles", "bod_slots", "bod_slot_bytes", "bod_cra", "bod_rbdc_max",
                    "bod_req_period", "bod_latency", "bod_bg_count", "bod_bg"}


def test_validate_bod_only_on_a_bod_channel():
    regs = load_profile("geo-testbed-bod").check(HW75)["return"]
    fields = profile_fields(regs)
    assert validate(fields, HW75, P.CHANNEL_RETURN).status == P.Status.OK
    v = validate(fields, HW75, P.CHANNEL_FORWARD)
    assert (v.status, P.PROFILE_FIELDS[v.field].name, v.value, v.lo, v.hi) == \
        (P.Status.BAD_FIELD, "bod_flags", BOD_ENABLE, 0, 0)
    v = validate(dict(fields, bod_bg0=141 | 1 << 16), HW75, P.CHANNEL_RETURN)
    assert "a background level is at most 140 slots" in v.explain()


# ---- a fake box: the firmware's Python references behind a serial port ------------------------

class FakeBox(FakeSerial):
    """A box on a fake serial port: HELLO, SET/GET_PROFILE (satemu.base.validate), COMMIT and
    BOD_TRACE (protocol.bod_trace_answer) over a ring of ``ring`` records (by default the
    gateware's depth) from ``history``, superframe 0 having begun at cycle ``start``; each
    BOD_TRACE request lets ``per_request`` more superframes be recorded."""

    def __init__(self, bod: bool = True, history=(), count: int = 0, ring: int | None = None,
                 per_request: int = 0, hw: Hardware = SIM, start: int = 0x1_2345_6789):
        self.hw, self.bod, self.ring = hw, bod, ring or hw.params.bod_ring
        self.history, self.count, self.per_request = list(history), count, per_request
        self.start = start
        self.restart_after: dict[int, tuple[int, int]] = {}   # request -> (count, start) after it
        self.requests = 0
        self.ops: list = []                       # every request's opcode, in order
        super().__init__()
        self.regs = [ChannelRegs(), ChannelRegs()]
        self.staged = [0, 0]                      # each channel's staged generation
        self.commits = 0
        self.tamper: dict[int, int] = {}          # sf read -> sf the ring holds instead

    def answer(self, op: int, p: bytes) -> bytes:
        hw = replace(self.hw, bod_channels=("return",) if self.bod else ())
        self.ops.append(P.Op(op) if op in iter(P.Op) else op)
        if op in (P.Op.TIMELINE_WRITE, P.Op.TIMELINE_START):     # stored, and started
            return bytes([P.Status.OK])
        if op == P.Op.HELLO:
            return P.hello_answer(p, hw.limits(), hw.bod_mask)
        if op == P.Op.SET_PROFILE:
            channel, generation, *values = P.SET_PROFILE_REQUEST.unpack(p)
            fields = {f.name: v for f, v in zip(P.PROFILE_FIELDS, values)}
            v = validate(fields, hw, channel)
            self.staged[channel] = generation if v.status == P.Status.OK else 0
            if v.status == P.Status.BAD_FIELD:
                return bytes([v.status]) + P.BAD_FIELD_DETAIL.pack(v.field, v.value, v.lo, v.hi)
            if v.status in (P.Status.BUDGET, P.Status.THROUGHPUT):
                return bytes([v.status]) + P.BUDGET_DETAIL.pack(v.value, v.hi)
            self.regs[p[0]] = ChannelRegs(**fields)
            return bytes([v.status])
        if op == P.Op.TIMELINE_STATUS:           # no timeline ever started
            return bytes([P.Status.OK]) + P.TIMELINE_STATE.pack(
                *[0] * len(P.TIMELINE_STATE_FIELDS))
        if op == P.Op.GET_STATS:                 # nothing counted, at cycle 0
            return bytes([P.Status.OK]) + P.STATS.pack(*[0] * len(P.STATS_FIELDS))
        if op == P.Op.GET_PROFILE:
            regs = profile_fields(self.regs[p[0]])
            return bytes([P.Status.OK]) + P.PROFILE.pack(*regs.values())
        if op == P.Op.COMMIT:
            _, generation = P.COMMIT_REQUEST.unpack(p)
            if self.staged != [generation, generation]:
                return bytes([P.Status.INCOMPLETE]) + P.INCOMPLETE_DETAIL.pack(*self.staged)
            self.commits += 1
            self.staged = [0, 0]
            return bytes([P.Status.OK, P.COMMIT_APPLIED])
        if op == P.Op.BOD_TRACE:
            answer = P.bod_trace_answer(p, hw.bod_mask, self.ring, lambda ch: self.count,
                                        lambda ch: self.start, self.read_record)
            self.count = min(self.count + self.per_request, len(self.history))
            self.requests += 1
            if self.requests in self.restart_after:      # a layout commit restarts the block
                self.count, self.start = self.restart_after[self.requests]
            return answer
        return bytes([P.Status.BAD_OPCODE])

    def read_record(self, channel: int, sf: int) -> list[int]:
        value = pack_record(self.history[self.tamper.get(sf, sf)])
        return [(value >> (32 * w)) & 0xFFFF_FFFF for w in range(BOD_RECORD_WORDS)]


@pytest.fixture
def box(monkeypatch):
    """Device URLs starting with fake:// reach the FakeBox this returns."""
    boxes = {}

    def connect(url, **kwargs):
        assert url.startswith("fake://")
        return boxes["box"]

    monkeypatch.setattr(device_mod.serial, "serial_for_url", connect)

    def make(**kwargs):
        boxes["box"] = FakeBox(**kwargs)
        return boxes["box"]
    return make


def _model_records(profile: str = "geo-testbed-bod", superframes: int = 60):
    """BoD records of the model for a burst of return traffic, at the simulated board's clock."""
    regs = replace(load_profile(profile).check(SIM)["return"], delay=4096)
    frame = regs.bod_slots * regs.bod_slot_cycles
    frames = [(1000 + i * 5000, 1000, False) for i in range(300)]
    return simulate(frames, regs, replace(SIM.params, bod=True), until=superframes * frame).bod


@pytest.mark.parametrize("profile", ["geo-testbed-bod", "leo-starlink"])
def test_a_load_says_hello_once_and_checks_the_profile_once(box, monkeypatch, profile):
    """The profile path runs straight: one HELLO, one check of the profile against the box's
    hardware (a timeline's compile takes that check's registers), then the load."""
    from satemu.link.profile import Profile
    fake, checks, real = box(), [], Profile.check

    def check(self, hw):
        checks.append(self.name)
        return real(self, hw)
    monkeypatch.setattr(Profile, "check", check)
    assert main(["load", profile, "--port", "fake://box", "--start-cycle", "1000"]) == 0
    assert fake.ops.count(P.Op.HELLO) == 1 and checks == [profile]
    assert fake.commits == 1
    timeline = [op for op in fake.ops if op in (P.Op.TIMELINE_WRITE, P.Op.TIMELINE_START)]
    assert timeline[-1:] == ([P.Op.TIMELINE_START] if profile == "leo-starlink" else [])
    if timeline:        # armed with the load staged, so that its one COMMIT starts it
        load = [op for op in fake.ops if op in (P.Op.SET_PROFILE, P.Op.TIMELINE_START,
                                                P.Op.COMMIT)]
        assert load == [P.Op.SET_PROFILE, P.Op.SET_PROFILE, P.Op.TIMELINE_START, P.Op.COMMIT]


def test_load_accepts_a_bod_profile(box, capsys):
    fake = box()
    assert main(["load", "geo-testbed-bod", "--port", "fake://box"]) == 0
    want = load_profile("geo-testbed-bod").check(SIM)
    got = fake.regs[P.CHANNEL_RETURN]
    assert profile_fields(got) == \
        profile_fields(want["return"])
    assert fake.commits == 1 and not fake.regs[P.CHANNEL_FORWARD].bod
    out = capsys.readouterr().out
    assert "loaded geo-testbed-bod" in out and "BoD: superframe 26.5 ms" in out


def test_load_refuses_bod_on_a_box_without_it(box, capsys):
    fake = box(bod=False)
    assert main(["load", "geo-testbed-bod", "--port", "fake://box"]) == 2
    assert "return.bod: the return channel has no Bandwidth-on-Demand block" in capsys.readouterr().err
    assert fake.commits == 0


def test_the_box_rejects_bod_on_a_channel_without_it(box):
    box()
    regs = load_profile("geo-testbed-bod").check(SIM)["return"]
    with Device("fake://box") as dev:
        assert dev.hardware().bod_channels == ("return",)
        with pytest.raises(DeviceError, match=r"bod_flags=1: the channel has no "
                                              r"Bandwidth-on-Demand block"):
            dev.set_profile(P.CHANNEL_FORWARD, regs)
        with pytest.raises(DeviceError, match="no Bandwidth-on-Demand block on that channel"):
            dev.bod_trace(channel=P.CHANNEL_FORWARD)


def test_load_checks_the_box_throughput_first(box, capsys):
    """HELLO carries the box's delay-line throughput: the host refuses a profile too fast for
    it before sending anything, and the box itself answers THROUGHPUT with the same numbers.
    On a box that limits it, a queue the profile does not cap in frames stays on chip (1024
    frames) where a deeper one would not fit the guarantee either."""
    regs = replace(load_profile("geo-testbed").check(SIM)["forward"],
                   queue_frames=SIM.params.queue_onchip)
    num, den = delay_line_traffic(regs, SIM.f_clk, SIM.port_bps, SIM.params)
    need = -(-num // den)
    fake = box(hw=replace(SIM, mem_wpc=need - 1))
    assert main(["load", "geo-testbed", "--port", "fake://box"]) == 2
    err = capsys.readouterr().err
    assert (f"forward: the profile's rate needs up to {need} words per 65536 cycles of "
            f"delay-line bandwidth, the board guarantees this channel {need - 1}") in err
    assert fake.commits == 0 and fake.regs[P.CHANNEL_FORWARD] == ChannelRegs()
    with Device("fake://box") as dev:
        assert dev.hardware().wpc("forward") == need - 1
        with pytest.raises(DeviceError, match=rf"rejected the profile: the profile's rate needs "
                                              rf"up to {need} words .* this channel {need - 1} "):
            dev.set_profile(P.CHANNEL_FORWARD, regs)
    box(hw=replace(SIM, mem_wpc=need))                    # just enough
    assert main(["load", "geo-testbed", "--port", "fake://box"]) == 0


def test_device_bod_trace_catches_up_and_reports_lost_superframes(box):
    history = _model_records(superframes=80)
    assert len(history) == 80
    # 40 recorded into a ring of 16, 3 more each request: 0..23 are gone before the first read.
    fake = box(history=history, count=40, ring=16, per_request=3)
    fake.tamper = {30: 46}                  # superframe 30 is overwritten while being read
    with Device("fake://box") as dev:
        trace = dev.bod_trace(first=0, max_records=5)
    assert trace.lost == [(0, 24), (30, 31)] and trace.lost_count == 25
    sfs = [r.sf for r in trace.records]
    assert sfs == [sf for sf in range(24, trace.count) if sf != 30]
    assert trace.count > 40 and trace.records == [history[sf] for sf in sfs]
    assert trace.start == fake.start == 0x1_2345_6789
    # From a later superframe, nothing is lost.
    fake = box(history=history, count=80, start=5 << 40)
    with Device("fake://box") as dev:
        trace = dev.bod_trace(first=70)
    assert [r.sf for r in trace.records] == list(range(70, 80)) and trace.lost == []
    assert trace.start == 5 << 40
    # No record asked for: just the count and the start, in one request.
    fake = box(history=history, count=80, start=77)
    with Device("fake://box") as dev:
        trace = dev.bod_trace(max_records=0)
    assert (trace.records, trace.count, trace.start, fake.requests) == ([], 80, 77, 1)


def test_device_bod_trace_starts_over_when_the_block_restarts(box):
    """A layout commit between two answers restarts the block (a new bod_start): the records
    read so far belong to the old run, so the reading starts over in the new one."""
    history = _model_records(superframes=80)
    fake = box(history=history, count=60, start=1000)
    fake.restart_after = {2: (12, 9_000_000)}     # after the second answer: 12 recorded, anew
    with Device("fake://box") as dev:
        trace = dev.bod_trace(first=0, max_records=10)
    assert trace.start == 9_000_000 and trace.count == 12 and trace.lost == []
    assert [r.sf for r in trace.records] == list(range(12))


def test_cli_bod_trace_writes_csv_and_plot(box, tmp_path, capsys):
    history = _model_records()
    fake = box(history=history, count=len(history))
    assert main(["load", "geo-testbed-bod", "--port", "fake://box"]) == 0
    out_csv, out_png = tmp_path / "trace.csv", tmp_path / "demand.png"
    assert main(["bod-trace", "--port", "fake://box", "--out", str(out_csv), "--plot",
                 str(out_png), "--from", "10"]) == 0
    out = capsys.readouterr().out
    assert "read superframes 10 .. 59 of 60 recorded" in out and f"wrote {out_csv}" in out
    rows = list(csv.DictReader(out_csv.read_text().splitlines()))
    assert list(rows[0]) == COLUMNS and [int(r["sf"]) for r in rows] == list(range(10, 60))
    assert f"superframe 0 began at cycle {fake.start} " in out
    regs = fake.regs[P.CHANNEL_RETURN]
    superframe = regs.bod_slots * regs.bod_slot_cycles / SIM.f_clk
    for row, rec in zip(rows, history[10:]):
        assert float(row["time_s"]) == pytest.approx(rec.sf * superframe, abs=1e-6)
        assert int(row["cycle"]) == fake.start + rec.sf * regs.bod_slots * regs.bod_slot_cycles
        assert int(row["granted_slots"]) == rec.granted and int(row["backlog_bytes"]) == rec.backlog
    assert out_png.read_bytes()[:8] == PNG_MAGIC


def test_cli_bod_trace_errors(box, capsys):
    box(bod=False)
    assert main(["bod-trace", "--port", "fake://box"]) == 2
    assert "has no Bandwidth-on-Demand hardware" in capsys.readouterr().err
    box()                                    # BoD hardware, but the profile leaves it off
    assert main(["bod-trace", "--port", "fake://box"]) == 2
    assert "BoD is off on the return channel" in capsys.readouterr().err


# ---- CSV and plot -------------------------------------------------------------------------------

def test_records_to_rows_in_physical_units(tmp_path):
    recs = [BodRecord(sf=0, backlog=0),
            BodRecord(sf=1, rbdc_req=3 * 256 + 128, vbdc_req=4, bg=70, g_cra=2, g_rbdc=3,
                      g_vbdc=4, g_fca=1, used=7, backlog=1500)]
    # 25 ms superframes of a 75 MHz clock from cycle 2^33 + 7 on, 1 kbit a slot
    rows = records_to_rows(recs, (1 << 33) + 7, 1_875_000, 75_000_000, 125)
    assert rows[0]["cycle"] == (1 << 33) + 7 and rows[0]["time_s"] == 0
    assert rows[1] == {"sf": 1, "terminal": 0, "cycle": (1 << 33) + 7 + 1_875_000, "time_s": 0.025,
                       "rbdc_req_kbps": 140.0, "vbdc_req_bytes": 500,
                       "background_slots": 70, "granted_cra": 2, "granted_rbdc": 3,
                       "granted_vbdc": 4, "granted_fca": 1, "granted_slots": 10,
                       "used_slots": 7, "granted_kbps": 400.0, "used_kbps": 280.0,
                       "backlog_bytes": 1500}
    path = write_csv(rows, tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[2] == "1,0,8591809599,0.025,140.0,500,70,2,3,4,1,10,7,400.0,280.0,1500"
    png = plot_demand_grant(rows, tmp_path / "p.png", "test")
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 1000
    assert plot_demand_grant([], tmp_path / "empty.png", "none").exists()


def test_superframe_segments_follow_the_steps_as_the_model_does():
    """Each superframe's start and shape, from the profile and a timeline's commits, are where
    the model's BoD block begins it and the shape it runs with (a commit's shape from the first
    superframe that begins after its cycle); the CSV rows carry them."""
    from satemu.model.bod import Bod
    from satemu.box.bod_trace import superframe_at, superframe_segments
    from satemu.model.channel import Commit
    from satemu.base.params import ChannelParams
    from dataclasses import replace
    r0 = ChannelRegs(bod_flags=BOD_ENABLE, bod_slot_cycles=100, bod_slots=10, bod_slot_bytes=50,
                     bod_cra=256, bod_req_period=1, bod_latency=2, bod_bg_count=1)
    r1 = replace(r0, bod_slot_cycles=70, bod_slots=12, bod_slot_bytes=30)
    r2 = replace(r0, bod_slot_bytes=80)
    commits = [Commit(2_500, r1), Commit(3_340, r2), Commit(3_341, r1), Commit(9_000, r2)]

    class Logged(Bod):
        seen = []

        def _superframe(self):
            Logged.seen.append((self.t - 17, self.shape[0] * self.shape[1], self.shape[2]))
            super()._superframe()

    bod = Logged(r0, 17, ChannelParams(bod=True), [(c.cycle, c.regs) for c in commits])
    bod.record(30)
    segments = superframe_segments(r0, 17, commits, 30)
    assert [superframe_at(segments, k) for k in range(30)] == Logged.seen
    assert len(segments) == 3           # r2 between 3,340 and 3,341 began no superframe
    assert superframe_segments(r0, 17, commits, bod.records) == segments   # up to the last's
    rows = records_to_rows(bod.records, 17, 1000, 1_000_000, 50, segments)
    assert [row["cycle"] for row in rows] == [17 + s[0] for s in Logged.seen]
    k = next(i for i, s in enumerate(Logged.seen) if s[2] == 30)
    assert rows[k]["granted_kbps"] == round(rows[k]["granted_slots"] * 30 * 8 / 840 * 1000, 3)


def test_bod_registers_are_in_the_map():
    assert {"bod_sel", "bod_count", "bod_rec"} <= set(REGMAP)


def test_a_queue_of_departure_distances_bounds_frames_and_slots():
    """The Versa-5G's return channel holds its departure times as distances of 23 bits, so a
    frame's serialisation takes fewer than 2^23 - 1 cycles there (152 ms at 55 MHz) and a BoD
    slot fewer than 2^22 (satemu.model.depdelta); the simulated board, whose queues spill to a
    ring of whole departure times, takes either. Each refusal is one line that says why."""
    versa = BOARDS["versa-ecp5"].hardware
    plain = ('[forward]\nrate = "10 Mbit/s"\n[return]\nrate = "RATE"\nqueue = "20 packets"\n'
             'overhead = "24 B"\n')
    slow = parse_profile(plain.replace("RATE", "80 kbit/s"), "t")
    with pytest.raises(ProfileError, match=r"^return.rate: 80 kbit/s is outside the allowed "
                                           r"range 80.8824 kbit/s \.\. 3.52 Gbit/s \(the return "
                                           r"channel holds its queue's departure times as "
                                           r"distances: a frame of max_len \+ overhead, 1542 B, "
                                           r"must serialise in under 152.52 ms, 8388607 cycles "
                                           r"at 55 MHz\)$"):
        slow.check(versa)
    assert slow.check(SIM)["return"].rate_q > 0
    assert parse_profile(plain.replace("RATE", "81 kbit/s"), "t").check(versa)
    # A superframe of 140 slots of 2^22 cycles is refused, one cycle a slot less is taken.
    for cycles, ok in ((1 << 22, False), ((1 << 22) - 1, True)):
        superframe = Fraction(140 * cycles * 1000, 55_000_000)
        text = BASE.format(bod='cra = "1 kbit/s"', ret="").replace(
            'superframe = "26.5 ms"', f'superframe = "{float(superframe):.6f} ms"')
        if ok:
            assert parse_profile(text, "t").check(versa)["return"].bod_slot_cycles == cycles
            assert parse_profile(text, "t").check(SIM)
        else:
            with pytest.raises(ProfileError, match=r"^return.bod.superframe: .* \(32 \.\. "
                                                   r"4194303 cycles a slot at 55 MHz\)$"):
                parse_profile(text, "t").check(versa)
