"""Analysis and rules on plain records: no backend involved."""

from scanprobe.analysis.history import classify
from scanprobe.analysis.sizes import human_bytes, parse_bytes
from scanprobe.records import Buffer, Dim, ModeInfo, Read, Scan, Target
from scanprobe.rules import RULES, by_code


def make_target(reads, role="sit_sot", lead=1025, n=1024, offset=1, save_mem=False):
    buf = Buffer(
        scan_id=1, role=role, index=0, dtype="float32", itemsize=4,
        dims=[Dim(lead, str(lead)), Dim(10, "10")], taps=[-1], needed_rows=2,
        leading_offset=offset, length_of="scan_fn", belongs_to="recurrent state `h`", reads=reads,
    )
    scan = Scan(id=1, name="scan_fn", op="Scan", n_steps=Dim(n, str(n)), as_while=False, is_gradient=False)
    scan.buffers = [buf]
    mode = ModeInfo(name="FAST_COMPILE", linker="py", save_mem=save_mem,
                    save_mem_reason="the mode FAST_COMPILE does not run the save-mem rewrite")
    return Target(name="f", site=None, mode=mode, scans=[scan])


def test_only_last_row_read_is_removable_and_flagged():
    t = make_target([Read("recent", "Subtensor", "row 1024 of 1025")])
    (v,) = classify(t)
    assert (v.status, v.verdict) == ("full", "removable")
    (f,) = RULES[0].check(t, [v])
    assert f.code == "SP001" and f.bytes == 1025 * 10 * 4
    assert "1025 rows (n_steps+1)" in f.message
    assert any("FAST_COMPILE" in e for e in f.explanation)


def test_history_read_by_backward_scan_is_needed():
    t = make_target([Read("recent", "Subtensor"), Read("scan_sequence", "Scan", scan="grad_of_scan_fn")])
    (v,) = classify(t)
    assert v.verdict == "needed" and "backward pass" in v.why[0]
    (note,) = RULES[0].check(t, [v])  # no finding: a note with what scan_checkpoints would keep
    assert note.severity == "info" and "scan_checkpoints" in note.fix[0]
    # 1024 steps of 10 float32: every 32nd state plus a segment of 32 rows = (32 + 1 + 32) x 40 B
    assert "N=32: 2.6 kB" in note.explanation[0]


def test_reduced_buffer_is_not_full():
    t = make_target([Read("recent", "Subtensor")], lead=2, offset=None, save_mem=True)
    (v,) = classify(t)
    assert v.status == "reduced"


def test_tiny_scan_is_not_flagged():
    # two rows for one step is as small as the buffer can be
    t = make_target([Read("recent", "Subtensor")], lead=2, n=1, offset=1)
    (v,) = classify(t)
    assert v.status == "reduced"


def test_mit_mot_is_inherent_and_unread_is_unused():
    (v,) = classify(make_target([Read("recent", "Subtensor")], role="mit_mot"))
    assert v.verdict == "inherent"
    (v,) = classify(make_target([]))
    assert v.verdict == "unused"


def test_transpose_reason_when_save_mem_runs():
    t = make_target([Read("recent", "Subtensor", via_dimshuffle=True)], save_mem=True)
    (v,) = classify(t)
    assert v.verdict == "removable" and "DimShuffle" in v.why[-1]
    (f,) = RULES[0].check(t, [v])
    assert "transposing" in f.fix[0]


def test_rule_registry():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    for r in RULES:
        assert r.code.startswith("SP") and r.name and r.summary
        assert set(r.sections()) >= {"What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"}
    assert by_code("sp001") is RULES[0] and by_code("full-history-buffer") is RULES[0]


def test_sizes():
    assert human_bytes(25_190_400_000) == "25.2 GB"
    assert human_bytes(512) == "512 B"
    assert parse_bytes("512MiB") == 512 * 2**20 and parse_bytes("8GB") == 8 * 10**9
