"""Compare two `semcat eval run` results.jsonl files record by record (condition, question):
`python compare.py BEFORE AFTER` prints how many differ and the first 20 differences."""

import json
import sys

KEYS = ("sql", "outcome", "correct", "tool_calls", "tools", "abstain_reason", "tool_tokens", "tables_read", "reason")


def load(path: str) -> dict[tuple[str, str], dict]:
    with open(path, encoding="utf-8") as fh:
        return {(r["condition"], r["id"]): r for r in map(json.loads, fh)}


def main() -> None:
    a, b = load(sys.argv[1]), load(sys.argv[2])
    diff = [(k, f) for k in sorted(a) for f in KEYS if a[k].get(f) != b.get(k, {}).get(f)]
    print(f"{len(a)} records before, {len(b)} after; {len({k for k, _ in diff})} differ")
    for k, f in diff[:20]:
        print(k, f, repr(a[k].get(f))[:150], "->", repr(b.get(k, {}).get(f))[:150])


if __name__ == "__main__":
    main()
