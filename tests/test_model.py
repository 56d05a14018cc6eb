"""Model files: -f saves, -i continues or (with -t) predicts; bad models give one clear line."""
import numpy as np
import pytest
from conftest import model_file, olearn_cmd, run_cmd, split_model


def olearn(*args):
    return run_cmd(olearn_cmd(*args))


@pytest.fixture
def halves(tmp_path):
    lines = [f"{(i * 7) % 11 - 5} |a x:{i % 5} y:{(i * 3) % 7 - 3} |b z{i % 4}\n"
             for i in range(400)]
    first, second, whole = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "all.vw"
    first.write_text("".join(lines[:200]))
    second.write_text("".join(lines[200:]))
    whole.write_text("".join(lines))
    return first, second, whole


def _error_line(result, expected_code=1):
    code, _, err = result
    assert code == expected_code and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("olearn: error: ")
    return lines[0]


def test_continued_training_equals_an_uninterrupted_run(tmp_path, halves):
    first, second, whole = halves
    model = tmp_path / "m.olearn"
    assert olearn("-d", whole, "-p", tmp_path / "all.p", "--quiet")[0] == 0
    assert olearn("-d", first, "-f", model, "-p", tmp_path / "a.p", "--quiet")[0] == 0
    assert olearn("-d", second, "-i", model, "-p", tmp_path / "b.p", "--quiet")[0] == 0
    joined = (tmp_path / "a.p").read_text() + (tmp_path / "b.p").read_text()
    assert joined == (tmp_path / "all.p").read_text()


def test_continued_regularized_training_equals_an_uninterrupted_run(tmp_path, halves):
    # saving applies the pending lazy steps; the continued run must not apply them twice
    first, second, whole = halves
    model = tmp_path / "m.olearn"
    reg = ("--l1", "1e-2", "--l2", "1e-2", "--quiet")
    assert olearn("-d", whole, "-p", tmp_path / "plain.p", "--quiet")[0] == 0
    assert olearn("-d", whole, "-p", tmp_path / "all.p", *reg)[0] == 0
    assert olearn("-d", first, "-f", model, "-p", tmp_path / "a.p", *reg)[0] == 0
    assert olearn("-d", second, "-i", model, "-p", tmp_path / "b.p", "--quiet")[0] == 0
    whole_run = np.loadtxt(tmp_path / "all.p")
    assert np.abs(whole_run - np.loadtxt(tmp_path / "plain.p")).max() > 0.1
    joined = np.concatenate([np.loadtxt(tmp_path / "a.p"), np.loadtxt(tmp_path / "b.p")])
    np.testing.assert_allclose(joined, whole_run, rtol=1e-4, atol=1e-5)


def test_predict_only_model_continues_from_the_weights_with_fresh_sums(tmp_path, halves):
    """VW's --predict_only_model: -f keeps the weights and the label range, not the adaptive
    and normalizer sums or the clock."""
    from olearn.kernel import layouts
    from olearn.persistence import model
    first, _, _ = halves
    full, bare = tmp_path / "full.olearn", tmp_path / "bare.olearn"
    assert olearn("-d", first, "-f", full, "--quiet")[0] == 0
    assert olearn("-d", first, "-f", bare, "--predict_only_model", "--quiet")[0] == 0
    kept, dropped = model.load(str(full)), model.load(str(bare))
    assert np.array_equal(kept.arrays["rows"][:, 0], dropped.arrays["rows"][:, 0])
    assert np.any(kept.arrays["rows"][:, 1:] != 0) and not np.any(dropped.arrays["rows"][:, 1:])
    fresh = [layouts.S_NORM, layouts.S_TOTAL, layouts.S_T]
    kept_range = [layouts.S_MIN, layouts.S_MAX]
    assert not np.any(dropped.state[fresh]) and np.all(kept.state[fresh])
    assert np.array_equal(dropped.state[kept_range], kept.state[kept_range])


def test_testonly_predicts_with_the_saved_model_without_learning(tmp_path, halves):
    first, second, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    code, _, err = olearn("-t", "-i", model, "-d", second, "-p", tmp_path / "t1.p")
    assert code == 0 and "only testing" in err
    olearn("-t", "-i", model, "-d", second, "-p", tmp_path / "t2.p", "--quiet")
    first_preds = (tmp_path / "t1.p").read_text().split()
    assert first_preds == (tmp_path / "t2.p").read_text().split()
    assert len(set(first_preds)) > 3  # real predictions, not a constant


def test_testonly_without_a_model_predicts_zero(tmp_path, halves):
    _, second, _ = halves
    olearn("-t", "-d", second, "-p", tmp_path / "t.p", "--quiet")
    assert set((tmp_path / "t.p").read_text().split()) == {"0"}


def test_model_keeps_the_options_that_change_predictions(tmp_path, halves):
    first, second, _ = halves
    model = tmp_path / "m.olearn"
    args = ["--loss_function", "logistic", "--link", "logistic", "-b", "12", "--noconstant"]
    olearn("-d", first, "-f", model, "--quiet", *args)
    olearn("-t", "-i", model, "-d", second, "-p", tmp_path / "saved.p", "--quiet")
    olearn("-d", first, "-f", tmp_path / "m2.olearn", "--quiet", *args)
    olearn("-t", "-i", tmp_path / "m2.olearn", "-d", second, "-p", tmp_path / "given.p",
           "--quiet", *args)
    saved = (tmp_path / "saved.p").read_text()
    assert saved == (tmp_path / "given.p").read_text()
    assert all(0 < float(p) < 1 for p in saved.split())  # the logistic link came back


def test_command_line_option_overrides_the_model_with_a_warning(tmp_path, halves):
    first, second, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    code, _, err = olearn("-i", model, "-d", second, "--loss_function", "hinge")
    assert code == 0 and "--loss_function hinge from the command line overrides" in err


def test_different_bits_is_refused(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    assert "-b 18" in _error_line(olearn("-t", "-i", model, "-d", first, "-b", "20"))


def test_truncated_model_is_refused(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    model.write_bytes(model.read_bytes()[:-100])
    assert "truncated" in _error_line(olearn("-t", "-i", model, "-d", first, "--quiet"))


def test_corrupted_model_is_refused(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    data = bytearray(model.read_bytes())
    data[-40] ^= 0xFF
    model.write_bytes(bytes(data))
    assert "checksum" in _error_line(olearn("-t", "-i", model, "-d", first, "--quiet"))


def test_command_line_class_count_that_disagrees_with_the_model_is_refused(tmp_path):
    data = tmp_path / "c.vw"
    data.write_text("".join(f"{1 + i % 5} |a x{i % 7} y:{i % 3}\n" for i in range(50)))
    model = tmp_path / "m.olearn"
    assert olearn("-d", data, "--oaa", "5", "-f", model, "--quiet")[0] == 0
    line = _error_line(olearn("-t", "-i", model, "--oaa", "3", "-d", data, "--quiet"))
    assert "--oaa 3" in line and "m.olearn" in line


def test_other_file_as_model_is_refused(tmp_path, halves):
    first, _, _ = halves
    line = _error_line(olearn("-t", "-i", first, "-d", first, "--quiet"))
    assert "neither an olearn nor a VW model" in line


def _rewritten(model, change) -> None:
    """Apply ``change`` to the header of the model file ``model`` (a valid checksum kept)."""
    header, payload = split_model(model.read_bytes())
    change(header)
    model.write_bytes(model_file(header, payload))


def test_wrong_version_model_is_refused(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    _rewritten(model, lambda header: header.update(format_version=99))
    assert "version 99" in _error_line(olearn("-t", "-i", model, "-d", first, "--quiet"))


def test_model_without_a_newer_option_loads_with_its_default(tmp_path, halves):
    first, second, _ = halves
    model, old = tmp_path / "m.olearn", tmp_path / "old.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    old.write_bytes(model.read_bytes())
    _rewritten(old, lambda header: header["options"].pop("hash_seed"))  # as if olearn had none
    for path, out in ((model, "new.p"), (old, "old.p")):
        assert olearn("-t", "-i", path, "-d", second, "-p", tmp_path / out, "--quiet")[0] == 0
    assert (tmp_path / "new.p").read_text() == (tmp_path / "old.p").read_text()
    _rewritten(old, lambda header: header["options"].pop("power_t"))
    olearn("-i", old, "-d", second, "-f", tmp_path / "again.olearn", "--quiet")
    assert split_model((tmp_path / "again.olearn").read_bytes())[0]["options"]["power_t"] == 0.5


def test_model_with_an_unknown_option_names_it(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    _rewritten(model, lambda header: header["options"].update(future_option=1))
    assert "does not know: future_option" in _error_line(
        olearn("-t", "-i", model, "-d", first, "--quiet"))


def test_model_fields_are_read_by_name_not_position(tmp_path, halves):
    first, second, _ = halves
    model, shuffled = tmp_path / "m.olearn", tmp_path / "shuffled.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    header, payload = split_model(model.read_bytes())
    assert header["fields"]["state"][:3] == ["norm", "total", "t"]
    assert header["fields"]["rows"] == ["w", "G", "N"]  # the scratch rate is not saved
    spec = header["arrays"]["state"]
    state = np.frombuffer(payload, "<f8", spec["shape"][0], spec["offset"])
    order = np.arange(len(state))[::-1]
    header["fields"]["state"] = [header["fields"]["state"][i] for i in order]
    payload = (payload[:spec["offset"]] + state[order].tobytes()
               + payload[spec["offset"] + spec["bytes"]:])
    shuffled.write_bytes(model_file(header, payload))
    for path, out in ((model, "m.p"), (shuffled, "s.p")):
        assert olearn("-i", path, "-d", second, "-p", tmp_path / out, "--quiet")[0] == 0
    assert (tmp_path / "m.p").read_text() == (tmp_path / "s.p").read_text()


def test_model_with_an_unknown_field_is_refused(tmp_path, halves):
    first, _, _ = halves
    model = tmp_path / "m.olearn"
    olearn("-d", first, "-f", model, "--quiet")
    _rewritten(model, lambda header: header["fields"]["state"].__setitem__(0, "novel"))
    assert "does not know (novel" in _error_line(olearn("-t", "-i", model, "-d", first, "--quiet"))


def test_failed_run_leaves_no_model(tmp_path):
    data = tmp_path / "bad.vw.gz"
    data.write_bytes(b"\x1f\x8b\x08\x00broken-broken-broken")
    model = tmp_path / "m.olearn"
    assert olearn("-d", data, "-f", model, "--quiet")[0] != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.vw.gz"]
