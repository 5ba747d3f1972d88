"""A reproducible noisy neighbour: burns one core in random bursts, its pattern seeded.

Each cycle is a busy burst then an idle gap, both drawn uniformly from [--min, --max] seconds with ``--seed``, so
two runs of a benchmark beside it meet the same pattern of interference from the same start. It stops after
``--seconds`` (or when killed) and prints how much of its time it burned.

    .venv/bin/python benchmarks/noisy_neighbour.py [--seconds 600] [--seed 1] [--min 0.2] [--max 2.0]
"""

from __future__ import annotations

import argparse
import random
import time


def burn(seconds: float, seed: int, low: float, high: float) -> float:
    """Burn and idle in turns for ``seconds``; the share of the time spent burning."""
    rng = random.Random(seed)
    start = time.monotonic()
    busy = 0.0
    while (now := time.monotonic()) - start < seconds:
        burst, gap = rng.uniform(low, high), rng.uniform(low, high)
        until = min(now + burst, start + seconds)
        while time.monotonic() < until:
            pass
        busy += until - now
        time.sleep(max(0.0, min(gap, start + seconds - time.monotonic())))
    return busy / max(time.monotonic() - start, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min", type=float, default=0.2)
    ap.add_argument("--max", type=float, default=2.0)
    a = ap.parse_args()
    if not 0 < a.min <= a.max:
        raise SystemExit("error: need 0 < --min <= --max")
    share = burn(a.seconds, a.seed, a.min, a.max)
    print(f"noisy neighbour: burned one core {share * 100:.0f}% of {a.seconds:.0f} s (seed {a.seed})")


if __name__ == "__main__":
    main()
