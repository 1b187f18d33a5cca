"""The lab: experiments built on the trainers in iclaw/train/ — the end-to-end demo (demo.py), the β ablation
(ablate.py) and the architecture benchmark (bench_arch.py)."""
