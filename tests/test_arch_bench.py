"""`iclaw bench arch` end to end on a few hundred tokens: every number is there, JSON and PNG are written."""

import json

from rich.console import Console

from iclaw.lab import bench_arch
from iclaw.train.data import prep


def test_bench_arch_small_run(tmp_path):
    data = tmp_path / "data"
    prep([], data, max_tokens=6000, progress=False)
    out = tmp_path / "bench.json"
    result = bench_arch.run(config="tiny", tokens=128, data=data, batch=2, seq=32, variants=["mha", "mla+moe"],
                            sample_batch=2, sample_prompt=8, sample_new=4, progress=False, out=out)  # fmt: skip
    png = bench_arch.save(result, out)
    assert png.is_file() and png.stat().st_size > 10_000
    saved = json.loads(out.read_text())
    mha, mm = saved["variants"]["mha"], saved["variants"]["mla+moe"]
    for r in (mha, mm):
        assert r["val_loss"] > 0 and r["train_tokens_per_s"] > 0 and r["sample_tokens_per_s"] > 0
    assert mha["active_params"] == mha["params"] and mm["active_params"] < mm["params"]
    c = (
        bench_arch.VARIANTS
    )  # tiny: 4 layers; MHA caches k and v (2 x 128), MLA its latent + RoPE key (128 + 16)
    assert c["mla+moe"][0]["attn"] == "mla"
    assert mha["kv_bytes_per_token"] == 4 * 2 * 128 * 4 and mm["kv_bytes_per_token"] == 4 * (128 + 16) * 4
    assert mm["moe_max_over_mean_load"] >= 1.0 and mha["moe_max_over_mean_load"] is None
    console = Console(record=True, width=120)
    console.print(bench_arch.table(result))
    assert "mla+moe" in console.export_text()
