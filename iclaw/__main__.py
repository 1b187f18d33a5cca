# `python -m iclaw ...` and `torchrun -m iclaw ...` land here.
from iclaw.cli import main

main()
