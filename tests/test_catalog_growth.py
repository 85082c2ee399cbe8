"""A new GPU is one entry in devices/data/hardware.toml, and a new LLM one entry in
llm/data/models.toml: every command, the flash-tile rule, the figures' colours and the
run-file matching read the catalogs, so no code changes. Each test adds a copy of an entry
under a new key (changing a figure), and runs what a user would."""

import json
import re

import pytest

from roofline_book.cli import main
from roofline_book.devices import catalog as devices
from roofline_book.devices.kernels import device_flash_tile
from roofline_book.llm import config as llms


def _copied(text: str, table: str, old: str, new: str, changes: dict[str, str]) -> str:
    """``text`` with the ``[table.old]`` entry and its sub-tables copied under ``new``."""
    entry = re.search(
        rf"^\[{table}\.{re.escape(old)}\].*?(?=^\[{table}\.(?!{re.escape(old)}[.\]])|\Z)",
        text,
        re.S | re.M,
    )
    assert entry is not None
    block = entry.group(0).replace(f"[{table}.{old}", f"[{table}.{new}")
    for a, b in changes.items():
        assert a in block, a
        block = block.replace(a, b)
    return text + "\n" + block


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out


@pytest.fixture
def new_gpu(monkeypatch):
    grown = _copied(
        devices._catalog_text(),
        "devices",
        "h100-sxm",
        "test-gpu",
        {
            'name = "NVIDIA H100 SXM5 80GB"': 'name = "Test GPU"',
            "memory_bandwidth = 3.35e12": "memory_bandwidth = 4e12",
            '["NVIDIA H100 80GB HBM3"]': '["Test GPU 80GB"]',
        },
    )
    monkeypatch.setattr(devices, "_catalog_text", lambda: grown)
    devices.catalog.cache_clear()
    yield devices.hardware("test-gpu")
    devices.catalog.cache_clear()


def test_a_new_gpu_is_one_entry_in_the_data_file(new_gpu, capsys, tmp_path):
    # a BF16 add of 2^20 elements reads two tensors and writes one: 6 bytes an element,
    # held to the new entry's 4 TB/s, not to the H100's 3.35 TB/s it was copied from
    out = json.loads(_run(capsys, "op", "add", "--numel", "1Mi", "--device", "test-gpu", "--json"))
    assert out["bound"] == "hbm"
    assert out["time_lower_bound_s"] == pytest.approx(6 * 2**20 / 4e12)
    assert "Test GPU" in _run(capsys, "devices", "--device", "test-gpu")
    assert "total" in _run(capsys, "block", "--device", "test-gpu")
    _run(capsys, "plot", "--device", "test-gpu", "--out", str(tmp_path / "roof.svg"))
    assert (tmp_path / "roof.svg").stat().st_size > 0
    # its architecture (Hopper) gives it FlashAttention-3's tile, as the H100's
    assert device_flash_tile(new_gpu, 128) == device_flash_tile(devices.hardware("h100-sxm"), 128)
    # a run measured on it meets this entry by the name the device reports
    assert devices.reported("Test GPU 80GB") == new_gpu


@pytest.fixture
def new_llm(monkeypatch):
    grown = _copied(
        llms._catalog_text(), "models", "llama-3-8b", "test-llm", {"layers = 32": "layers = 16"}
    )
    monkeypatch.setattr(llms, "_catalog_text", lambda: grown)
    llms.models.cache_clear()
    yield llms.model("test-llm")
    llms.models.cache_clear()


def test_a_new_llm_is_one_entry_in_the_data_file(new_llm, capsys):
    device = ("--device", "h100-sxm")
    # one layer is the same as Llama-3-8B's, so its block is the same operator for operator
    ours = json.loads(_run(capsys, "block", "--model", "test-llm", *device, "--json"))
    theirs = json.loads(_run(capsys, "block", "--model", "llama-3-8b", *device, "--json"))
    assert ours["ops"] == theirs["ops"]
    # 16 of Llama-3-8B's 32 layers. One layer (config.json: hidden 4096, 32 heads, 8 KV heads
    # of 128, MLP 14336): attention 4096 x (4096 + 1024 + 1024 + 4096) = 41,943,040,
    # MLP 3 x 4096 x 14336 = 176,160,768, two norms 8,192: 218,112,000 parameters.
    # Llama-3-8B has 8,030,261,248, so 16 layers fewer leave 8,030,261,248 - 16 x 218,112,000.
    step = json.loads(_run(capsys, "infer", "--model", "test-llm", *device, "--json"))
    assert step["model"] == "test-llm"
    assert step["parameters"] == 8_030_261_248 - 16 * 218_112_000
    # the KV cache: 16 layers x (K and V) x 8 heads x 128 x 2 bytes (BF16) a token
    assert step["kv_cache_bytes_per_token"] == 16 * 2 * 8 * 128 * 2
    _run(capsys, "train", "--model", "test-llm", *device, "--gpus", "8")
    assert new_llm.layers == 16
