"""``python -m dp2pub.bench [oracles|structure|memory|estimates|metrics|sweep|scaling|overhead] [options]``: run one benchmark, or all of them
(with their default options) when none is named."""

import sys

from dp2pub.bench import estimates, memory, metrics, oracles, overhead, scaling, structure, sweep

BENCHES = {
    "oracles": oracles.main,
    "structure": structure.main,
    "memory": memory.main,
    "estimates": estimates.main,
    "metrics": metrics.main,
    "sweep": sweep.main,
    "scaling": scaling.main,
    "overhead": overhead.main,
}

if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] in BENCHES:
        BENCHES[args[0]](args[1:])
    else:
        for main in BENCHES.values():
            main(args)
