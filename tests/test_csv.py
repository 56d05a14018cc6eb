"""--csv: the header's columns, the per-line parser, and command-line runs against outputs
observed from VW 9.11.9 on the same files (docs/vw-reference.md, CSV input)."""
import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd
from reference import vw_hash

from olearn.data.csv_header import CsvError, header_of, namespace_order, split_cells
from olearn.data.parse import FORMAT_CSV, parse
from olearn.data.parsed import W_CSV_CELLS, W_CSV_EMPTY, W_CSV_QUOTE, W_CSV_UNCLOSED
from olearn.options.config import Config

BITS = 18
MASK = (1 << BITS) - 1

# A file exercising tags, labels with an importance, namespaces, string and quoted cells,
# nameless columns, an all-empty line (no example) and an unlabeled one.
MIXED = b"""_tag,_label,num|a,num|b,cat|color,|x,|,|,txt|note
r1,1,0.5,2,red,1.5,1,,"hello, world"
r2,-1,0.25,,blue,,,3,"say ""hi\"""
'r3,1 2,,1,"7",0.5,2,2,
r4,0.5,1.5,0,red,-1,,,plain
r5,-1,,,,,,,
r6,,0.75,1,green,2,1,1,"x"
"""
# VW 9.11.9, --csv --csv_ns_value num:2,:0.5 -d mixed.csv -p p --audit
MIXED_PREDICTIONS = "0 r1\n0.471620 r2\n0.026453 r3\n0.103886 r4\n0.593643 r6\n"
MIXED_FIRST_AUDIT = ("\ttxt^note^hello, world:254646:1:0@0\tx:170779:0.75:0@0\t:0:0.5:0@0"
                     "\tcat^color^red:218924:1:0@0\tnum^a:81492:1:0@0\tnum^b:234626:4:0@0"
                     "\tConstant:116060:1:0@0")


def _config(**options) -> Config:
    return Config(csv=True, quiet=True, **options)


def _parse(text: bytes, **options):
    """``text``, a whole CSV file in one block, parsed as --csv with ``options`` would."""
    config = _config(**options)
    data = np.frombuffer(text, dtype=np.uint8)
    header = header_of(config, text)
    return parse(data, FORMAT_CSV, MASK, 0, False, True, True, 0, csv=header.block(data, True))


def _features(batch, e):
    lo, hi = batch.offsets[e], batch.offsets[e + 1]
    return list(zip(batch.index[lo:hi].tolist(), batch.value[lo:hi].tolist(),
                    batch.namespace[lo:hi].tolist()))


def olearn(*args, cwd=None):
    return run_cmd(olearn_cmd(*args), cwd=cwd)


def test_cells_split_at_separators_outside_quotes():
    assert split_cells(b'a,"b,c",,"d ""e"""', ord(",")) == [b"a", b'"b,c"', b"", b'"d "e""']


def test_a_trailing_separator_adds_an_empty_cell():
    assert split_cells(b"a;b;", ord(";")) == [b"a", b"b", b""]


def test_line_ends_and_byte_order_marks_are_trimmed_before_splitting():
    assert split_cells(b"\xef\xbb\xbfa,b\r\x0c", ord(",")) == [b"a", b"b"]


def test_a_quote_inside_an_unquoted_cell_is_a_plain_byte():
    assert split_cells(b'a"b,c', ord(",")) == [b'a"b', b"c"]


@pytest.mark.parametrize("line", [b'"abc', b'"ab"c,d', b'"""'])
def test_malformed_quotes_are_refused(line):
    with pytest.raises(CsvError):
        split_cells(line, ord(","))


@pytest.mark.parametrize("names, vw_order", [
    # VW 9.11.9's feature order with --audit on a first example (all weights 0)
    ("a,b,c,d,e,f,g,h", "g,f,e,c,h,b,d,a"),
    ("n1,n2,n3,n4,n5,n6,n7,n8,n9,m1,m2,m3,m4,m5",
     "n1,n4,n8,n5,n2,n6,n7,n9,n3,m5,m2,m1,m4,m3"),
])
def test_namespaces_come_in_vws_hash_map_order(names, vw_order):
    order = namespace_order([name.encode() for name in names.split(",")])
    grouped = sorted(order, key=lambda ns: [o[:1] for o in order].index(ns[:1]))
    assert b",".join(grouped).decode() == vw_order


def test_the_header_line_is_no_example():
    batch = _parse(b"_label,a\n1,2\n")
    assert len(batch) == 1 and batch.lines.tolist() == [1]


def test_label_importance_and_tag_come_from_their_columns():
    batch = _parse(b"_tag,_label,a\n't,-1 2 0.5,1\n")
    assert batch.numbers[0].tolist() == [-1.0, 2.0, 0.5]
    assert bytes(batch.text[slice(*batch.tags[0])]) == b"t"


def test_without_a_label_column_examples_are_unlabeled():
    batch = _parse(b"label,a\n1,2\n")
    assert np.isnan(batch.numbers[0, 0])


def test_a_number_is_the_value_of_its_columns_feature():
    batch = _parse(b"_label,ns|f\n1,2.5\n")
    assert _features(batch, 0)[0] == (vw_hash(b"f", vw_hash(b"ns", 0)) & MASK, 2.5, ord("n"))


def test_a_quoted_number_is_a_string_feature():
    batch = _parse(b'_label,f\n1,"7"\n')
    assert _features(batch, 0)[0] == (vw_hash(b"7", vw_hash(b"f", 0)) & MASK, 1.0, 32)


def test_a_string_with_doubled_quotes_is_hashed_unescaped():
    batch = _parse(b'_label,f\n1,"say ""hi"""\n', audit=True)
    assert _features(batch, 0)[0][0] == vw_hash(b'say "hi"', vw_hash(b"f", 0)) & MASK
    start, end = batch.audit[0, 2:4]
    assert bytes(batch.text[start:end]) == b'say "hi"'


def test_nameless_columns_count_from_their_namespaces_hash():
    batch = _parse(b"_label,a|,a|\n1,3,4\n")
    ns = vw_hash(b"a", 0)
    assert [f[:2] for f in _features(batch, 0)[:2]] == [(ns & MASK, 3.0), ((ns + 1) & MASK, 4.0)]


def test_csv_ns_value_scales_numbers_not_strings():
    batch = _parse(b"_label,a|x,a|y\n1,3,s\n", csv_ns_value="a:0.5")
    assert [f[1] for f in _features(batch, 0)] == [1.5, 1.0, 1.0]


def test_a_line_of_empty_feature_cells_is_no_example():
    batch = _parse(b"_label,a,b\n1,,\n2,1,\n")
    assert batch.numbers[:, 0].tolist() == [2.0]


def test_the_separator_option_splits_cells():
    batch = _parse(b"_label;a\n1;2\n", csv_separator=";")
    assert batch.numbers[0, 0] == 1.0 and _features(batch, 0)[0][1] == 2.0


def test_csv_header_names_the_columns_of_a_file_without_one():
    batch = _parse(b"1,2\n", csv_no_file_header=True, csv_header="_label,a")
    assert batch.numbers[0, 0] == 1.0 and len(batch) == 1


@pytest.mark.parametrize("text, code", [(b"_label,a\n1,2\n\n", W_CSV_EMPTY),
                                        (b"_label,a\n1,2,3\n", W_CSV_CELLS),
                                        (b'_label,a\n1,"2\n', W_CSV_UNCLOSED),
                                        (b'_label,a\n1,"2"x\n', W_CSV_QUOTE)])
def test_a_malformed_line_is_a_fatal_warning(text, code):
    batch = _parse(text)
    assert batch.warnings[:, 1].tolist() == [code]


def test_a_header_with_two_bars_in_a_name_is_refused():
    with pytest.raises(CsvError, match="more than one"):
        _parse(b"_label,a|b|c\n1,2\n")


def test_a_mixed_file_predicts_as_vw(tmp_path):
    (tmp_path / "mixed.csv").write_bytes(MIXED)
    code, out, err = olearn("--csv", "--csv_ns_value", "num:2,:0.5", "-d", "mixed.csv",
                            "-p", "p.txt", "--audit", cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "p.txt").read_text() == MIXED_PREDICTIONS
    assert out.splitlines()[1] == MIXED_FIRST_AUDIT
    assert "number of examples = 5" in err and "average loss = 1.043632" in err


def test_several_passes_from_a_cache_equal_vws(tmp_path):
    (tmp_path / "mixed.csv").write_bytes(MIXED)
    for _ in range(2):  # writes the cache, then reads it
        code, _, err = olearn("--csv", "-d", "mixed.csv", "--passes", "3", "-c",
                              "--holdout_off", cwd=tmp_path)
        assert code == 0 and "average loss = 0.458018" in err  # VW 9.11.9's


def test_a_file_without_a_label_column_is_learned_unlabeled_with_a_warning(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"label,a\n1,0.5\n-1,0.1\n")
    code, _, err = olearn("--csv", "-d", "t.csv", cwd=tmp_path)
    assert code == 0 and "No '_label' column found" in err and "average loss = n.a." in err


@pytest.mark.parametrize("text, message", [
    (b"_label,a\n1,2\n\n3,4\n", "t.csv:3: malformed CSV: an empty line"),
    (b"_label,a\n1,2,3\n", "t.csv:2: malformed CSV: the line's cells"),
    (b"_label,a|b|c\n1,2\n", "t.csv:1: malformed CSV header"),
])
def test_malformed_csv_is_one_error_line_naming_file_and_line(tmp_path, text, message):
    (tmp_path / "t.csv").write_bytes(text)
    code, _, err = olearn("--csv", "-d", "t.csv", "--quiet", cwd=tmp_path)
    assert code == 1 and err.strip().startswith(f"olearn: error: {message}")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--csv_separator", "ab"], "--csv_separator takes one character"),
    (["--csv_separator", "|"], "--csv_separator cannot be '|'"),
    (["--csv_no_file_header"], "--csv_no_file_header needs --csv_header"),
    (["--csv_ns_value", "a:x"], "--csv_ns_value has a malformed pair 1"),
    (["--format", "vw"], "--csv contradicts --format vw"),
])
def test_bad_csv_options_are_usage_errors(tmp_path, args, message):
    (tmp_path / "t.csv").write_bytes(b"_label,a\n1,2\n")
    code, _, err = olearn("--csv", *args, "-d", "t.csv", cwd=tmp_path)
    assert code == 2 and message in err and "Traceback" not in err


def test_redefine_leaves_csv_namespaces_as_vw_does(tmp_path):
    (tmp_path / "r.csv").write_bytes(b"_label,zz|x,y\n1,2,3\n")
    code, out, _ = olearn("--csv", "-d", "r.csv", "--redefine", "a:=z", "--ignore", "a",
                          "--audit", cwd=tmp_path)
    assert code == 0 and "zz^x:144789:2" in out  # VW 9.11.9 keeps it too


@pytest.mark.parametrize("args", [["--daemon", "--csv"], ["--dask", "tcp://localhost:1", "--csv"],
                                  ["--daemon", "--format", "csv"]])
def test_the_daemon_and_dask_do_not_take_csv(args):
    code, _, err = olearn(*args)
    assert code == 2 and f"{args[0]} does not take CSV input" in err
