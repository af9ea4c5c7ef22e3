"""Read-only values: what `Catalog.get` hands out from the current-object cache.

The cache returns one decoded value to every reader of the same object version (decoding it
again for each point get was most of the get's cost), so the value must not change under the
other readers. `FrozenDict` and `FrozenList` are `dict` and `list` in every way that reads (the
same equality, `isinstance`, JSON and msgpack encoding, iteration order) and raise a TypeError
naming the way out on every write. `copy.deepcopy(value)` and `thaw(value)` give a private,
mutable plain copy; `dict(value)` and `list(value)` give a mutable top level (nested values stay
read-only); pickling yields plain values.

Invariant: a value built by `freeze`, `freeze_packed` or `freeze_leaf` holds no mutable dict or
list anywhere inside it.
"""

from __future__ import annotations

from typing import Any, NoReturn

import msgpack
import orjson

__all__ = ["FrozenDict", "FrozenList", "freeze", "freeze_packed", "freeze_leaf", "thaw"]

_WHY = ("values returned by Catalog.get are shared, read-only views of the stored version; copy "
        "before changing one: copy.deepcopy(obj.value) (or dict(obj.value) for the top level)")


def _refuse(self: Any, *_a: Any, **_k: Any) -> NoReturn:
    raise TypeError(f"cannot change a {type(self).__name__}: {_WHY}")


def thaw(value: Any) -> Any:
    """A private, mutable deep copy of a (possibly frozen) JSON-like value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


class FrozenDict(dict[str, Any]):
    """A dict that refuses every change (see the module docstring)."""

    __slots__ = ()

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        out: dict[str, Any] = thaw(self)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses every change (see the module docstring)."""

    __slots__ = ()

    __setitem__ = __delitem__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __imul__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        out: list[Any] = thaw(self)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """`value` with every dict and list inside it replaced by a read-only copy."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(v) for v in value])
    return value


def freeze_packed(data: bytes) -> Any:
    """Decode msgpack (as `codec.unpack` does) straight into frozen values."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True,
                           object_hook=FrozenDict, list_hook=FrozenList)


def freeze_leaf(data: bytes) -> Any:
    """Decode a packed leaf value (as `codec.unpack_leaf` does) into frozen values."""
    return freeze(orjson.loads(data)) if data[:1] == b"{" else freeze_packed(data)
