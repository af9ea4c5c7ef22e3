"""The clock-independent part of table cards (`describe._base`), kept on disk beside an embedded catalog so a
new process (a `semcat mcp` session an IDE just started, or one restarted after `kill -9`) does not recompute
the card of a table it is asked about first (issue 47, cold start: the first `describe_table` of a session
spent ~1-1.4 s of CPU on the card's staleness findings and completeness).

A card at vid V is a function of the catalog's state at V (immutable) and of the code that computed it, so an
entry is keyed by: the catalog's identity (RocksDB's IDENTITY file, which `cp -a` copies with the data, and the
commit time of V), V itself, the table, and a fingerprint of this code (the size and mtime of every source file of
`semantic` and `catalog_core`). An entry written at another vid, by other code, or for another catalog is never
read as this one: a newer vid simply has no entry until its card is computed. What the clock changes (freshness
age and status, the time findings, annotation ages at `now`) is added per call by `describe.describe`, as it is
to a card from the in-memory cache.

Layout: DATA_DIR/cache/cards/<vid>/<sha256 of table, identity, fingerprint>.json, written atomically (a
temporary file then `os.replace`), so processes sharing the directory never read half an entry. Only the
KEEP_VIDS newest vids are kept. A catalog without a local directory (an HTTP client) has no store, and any
error reading or writing one only means the card is computed as before."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from typing import Any

from semantic.models import TableCard

__all__ = ["load", "store", "store_dir", "KEEP_VIDS", "ENV_OFF"]

KEEP_VIDS = 3  # vids whose cards stay on disk (the newest; older ones are removed when a card is stored)
ENV_OFF = "SEMCAT_CARD_STORE"  # "0": neither read nor write the store
_FORMAT = 1


def store_dir(cat: Any) -> str | None:
    """DATA_DIR/cache/cards of an embedded catalog; None for a remote one (or with SEMCAT_CARD_STORE=0)."""
    if os.environ.get(ENV_OFF, "1") == "0":
        return None
    data_dir = getattr(cat, "data_dir", None)
    if not isinstance(data_dir, str) or not data_dir or "://" in data_dir:
        return None
    return os.path.join(data_dir, "cache", "cards")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Size and mtime of every .py file of semantic and catalog_core: a card written by other code is not read."""
    import catalog_core

    h = hashlib.sha256(str(_FORMAT).encode())
    for pkg in (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(catalog_core.__file__))):
        for root, dirs, files in os.walk(pkg):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(root, f))
                    h.update(f"{os.path.relpath(os.path.join(root, f), pkg)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _identity(cat: Any) -> str:
    try:
        with open(os.path.join(cat.data_dir, "catalog", "rocksdb", "IDENTITY"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _key(cat: Any, vid: int, commit_time: float, name: str) -> dict[str, Any]:
    return {"format": _FORMAT, "code": code_fingerprint(), "identity": _identity(cat), "vid": vid,
            "commit_time": commit_time, "table": name}


def _path(root: str, key: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return os.path.join(root, str(key["vid"]), digest + ".json")


def load(cat: Any, vid: int, commit_time: float, name: str) -> TableCard | None:
    """The stored card of `name` at `vid` (committed at `commit_time`) of this catalog, by this code; else None."""
    root = store_dir(cat)
    if root is None:
        return None
    key = _key(cat, vid, commit_time, name)
    try:
        with open(_path(root, key), encoding="utf-8") as f:
            entry = json.load(f)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None  # another entry under the same digest: never served
        return TableCard.model_validate(entry["card"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(cat: Any, vid: int, commit_time: float, name: str, card: TableCard) -> bool:
    """Keep `card` for later processes; only a card that reads back equal to itself is kept (so a stored
    card never answers differently). False when nothing was stored."""
    root = store_dir(cat)
    if root is None:
        return False
    key = _key(cat, vid, commit_time, name)
    try:
        dumped = card.model_dump(mode="json")
        if TableCard.model_validate(dumped) != card:
            return False
        newest = _newest_vids(root)
        if len(newest) >= KEEP_VIDS and vid < min(newest) and vid not in newest:
            return False  # an old snapshot's card: not worth evicting a newer vid's
        path = _path(root, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".card-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "card": dumped}, f, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _prune(root)
        return True
    except (OSError, ValueError, TypeError):
        return False


def _newest_vids(root: str) -> list[int]:
    try:
        vids = sorted((int(d) for d in os.listdir(root) if d.isdigit()), reverse=True)
    except OSError:
        return []
    return vids[:KEEP_VIDS]


def _prune(root: str) -> None:
    """Remove the cards of every vid but the KEEP_VIDS newest."""
    try:
        vids = sorted((int(d) for d in os.listdir(root) if d.isdigit()), reverse=True)
    except OSError:
        return
    for v in vids[KEEP_VIDS:]:
        shutil.rmtree(os.path.join(root, str(v)), ignore_errors=True)

