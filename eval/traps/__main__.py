"""`python -m eval.traps ...` (the same commands as `semcat eval traps ...`, eval/traps/cli.py)."""

from eval.traps.cli import main

if __name__ == "__main__":
    main()
