"""Who is at fault decides how the command line fails: the user's input is one line naming
the flag they typed (exit 2); anything else is a bug, raised with its traceback and a note
that says so, never printed as bad input."""

import pytest

from roofline_book.cli import main


def test_a_rejected_argument_names_the_flag_the_user_typed(capsys):
    # the model's parameter is Precisions.weights; the user typed --weights-dtype
    argv = ["infer", "--model", "llama-3-8b", "--device", "h100-sxm", "--weights-dtype", "fp3"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("roofline-book infer: error: --weights-dtype 'fp3' is not a known")
    assert len(err.splitlines()) == 1


def test_a_name_without_a_flag_keeps_the_parameter_name(capsys):
    # batch * heads * seq * head_dim is no one flag: the message names the product as it is
    argv = ["op", "attention", "--batch", "2^31", "--heads", "2^31", "--seq-q", "2^31"]
    assert main([*argv, "--head-dim", "64", "--device", "h100-sxm"]) == 2
    err = capsys.readouterr().err
    assert "error: batch * heads * seq * head_dim (Q, K, V) must be at most 2**63 - 1" in err
    assert len(err.splitlines()) == 1


def test_a_bug_is_raised_with_a_note_not_printed_as_bad_input(monkeypatch, capsys):
    from roofline_book.cli import devices

    def broken(args):
        raise ValueError("an inconsistency inside the package")

    monkeypatch.setattr(devices, "run", broken)
    with pytest.raises(ValueError, match="an inconsistency inside the package") as info:
        main(["devices"])
    notes = getattr(info.value, "__notes__", [])
    assert any("bug in roofline-book" in n and "/issues" in n for n in notes)
    assert capsys.readouterr().err == ""  # no one-line "error:" that blames the input
