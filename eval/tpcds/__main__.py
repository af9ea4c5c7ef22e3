"""`python -m eval.tpcds build ...` (the same command as `semcat eval tpcds build ...`, eval/tpcds/cli.py)."""

from eval.tpcds.cli import main

if __name__ == "__main__":
    main()
