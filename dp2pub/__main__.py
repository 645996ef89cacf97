"""``python -m dp2pub`` is the ``dp2pub`` console script."""

from dp2pub.cli import main

if __name__ == "__main__":
    main()
