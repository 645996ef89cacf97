"""``python -m dp2pub.bench [--n N] [--reference-n N]``: run every benchmark."""

from dp2pub.bench.oracles import main

if __name__ == "__main__":
    main()
