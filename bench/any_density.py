"""`Any` per 1,000 lines of each package: how much of the code's typing is left open.

    .venv/bin/python -m bench.any_density [ROOT]

Counts every `Any` the parser sees in the source (annotations, casts, aliases; the `typing` import
line not included) and the lines of the .py files (blank and comment lines too, as `wc -l` does).
Anchors measured the same way are in issue 25 (3-10 per 1,000 lines)."""

from __future__ import annotations

import ast
import os
import sys

PACKAGES = ("catalog_core", "semantic", "mcp_server", "spark_bridge", "eval")


def count(path: str) -> tuple[int, int]:
    """(`Any` uses, lines) of one file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    uses = sum(1 for n in ast.walk(ast.parse(text, path))
               if (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any"))
    return uses, text.count("\n")


def main(root: str = ".") -> None:
    total_uses = total_lines = 0
    print(f"{'package':<14} {'Any':>6} {'lines':>7} {'per 1,000':>9}")
    for pkg in PACKAGES:
        uses = lines = 0
        for dirpath, _dirs, files in os.walk(os.path.join(root, pkg)):
            for f in files:
                if f.endswith(".py"):
                    u, n = count(os.path.join(dirpath, f))
                    uses, lines = uses + u, lines + n
        total_uses, total_lines = total_uses + uses, total_lines + lines
        print(f"{pkg:<14} {uses:>6} {lines:>7} {1000 * uses / max(1, lines):>9.1f}")
    print(f"{'all':<14} {total_uses:>6} {total_lines:>7} {1000 * total_uses / max(1, total_lines):>9.1f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
