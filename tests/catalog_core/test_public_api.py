"""The public surface of catalog_core: pinned names, the one error tree and its round trip,
and the protocols both catalogs satisfy."""

import inspect
import json

import pytest

import catalog_core as cc
from catalog_core import errors
from catalog_core.api import CatalogAPI, TransactionAPI
from catalog_core.remote.client import RemoteCatalog, RemoteTransaction

PUBLIC = {
    "Catalog", "open", "open_catalog", "catalogs_below", "mark_lake_root", "lake_root", "Transaction", "CatalogAPI", "TransactionAPI", "SnapshotRef", "Obj", "FileObj", "Version",
    "Commit", "Snapshot", "Change", "Branch", "QueryStats", "errors", "lake", "CatalogError", "ConflictError", "PreconditionError",
    "NotFoundError", "NoSuchTableError", "SnapshotNotFoundError", "AlreadyExistsError", "InvalidPathError",
    "InvalidValueError", "QuerySyntaxError", "SqlError", "SqlRefusedError", "SqlTimeoutError",
    "retry_transaction", "connect", "open_duckdb", "open_table", "run_sql", "warm_sql", "prepare_sql", "set_sql_cache_budget",
}


def test_all_is_pinned_and_every_name_exists():
    assert set(cc.__all__) == PUBLIC
    assert len(cc.__all__) == len(PUBLIC)  # no duplicates
    for name in cc.__all__:
        assert getattr(cc, name) is not None, name


def _subclasses(cls):
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


ALL_ERRORS = sorted({c for c in _subclasses(errors.CatalogError) if c.__module__ == "catalog_core.errors"},
                    key=lambda c: c.__name__)


def test_every_error_class_is_in_errors_all_and_documented_in_the_tree():
    doc = errors.__doc__
    for cls in ALL_ERRORS:
        assert cls.__name__ in errors.__all__, cls
        assert cls.__name__ in doc, f"{cls.__name__} missing from the tree in errors.py's docstring"


def _instance(cls):
    if cls is errors.QuerySyntaxError:
        return cls("bad query", text="/[", position=2, expected="an expression")
    return cls(f"{cls.__name__} happened; do the thing", path="/a/b", vid=7, rule="r", extra={"k": [1, 2]})


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda c: c.__name__)
def test_every_error_round_trips_with_its_own_class(cls):
    err = _instance(cls)
    back = errors.error_from_dict(json.loads(json.dumps(err.to_dict())))
    assert type(back) is cls
    assert back.message == err.message and str(back) == str(err)
    assert back.details == err.details and back.http_status == cls.http_status
    for key in ("path", "vid", "rule", "position", "retryable"):
        if hasattr(err, key):
            assert getattr(back, key) == getattr(err, key), key


def test_details_never_replace_class_attributes():
    err = errors.ConflictError("x", http_status=200, to_dict="oops")
    back = errors.error_from_dict({"error": "ConflictError", "message": "x",
                                   "details": {"http_status": 200, "to_dict": 1, "message": "y", "args": 3}})
    for e in (err, back):
        assert e.http_status == 409
        assert callable(e.to_dict)
    assert back.message == "x"


def test_unknown_error_names_become_catalog_errors():
    back = errors.error_from_dict({"error": "NoSuchThing", "message": "m", "details": {"a": 1}})
    assert type(back) is errors.CatalogError and back.details == {"a": 1}
    assert type(errors.error_from_dict({"error": 3, "message": "m", "details": "zz"})) is errors.CatalogError


def test_not_found_is_not_a_precondition_but_a_missing_object_at_commit_is_both():
    assert not issubclass(errors.SnapshotNotFoundError, errors.PreconditionError)
    assert not issubclass(errors.NoSuchTableError, errors.PreconditionError)
    assert issubclass(errors.MissingObjectError, errors.PreconditionError)
    assert issubclass(errors.MissingObjectError, errors.NotFoundError)


def test_errors_keep_their_class_across_http(catalog):
    from tests.helpers import lake

    lake(catalog)
    with pytest.raises(errors.SnapshotNotFoundError):
        catalog.get("/wh", vid=999)
    with pytest.raises(errors.SnapshotNotFoundError):
        catalog.resolve("no-such-snapshot")
    with pytest.raises(errors.NoSuchTableError):
        catalog.plan_files("wh.sales.nope")
    with pytest.raises(errors.MissingObjectError):
        with catalog.transaction() as t:
            t.add("/nope/child", {})
    with pytest.raises(errors.QuerySyntaxError) as info:
        catalog.query("/[obj_id = ]")
    assert info.value.position == 11


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("impl, proto", [(cc.Catalog, CatalogAPI), (RemoteCatalog, CatalogAPI),
                                         (cc.Transaction, TransactionAPI), (RemoteTransaction, TransactionAPI)])
def test_implementations_have_the_protocols_parameters(impl, proto):
    # mypy checks the types (catalog_core/_conformance.py); this checks names, kinds and defaults.
    for name, member in vars(proto).items():
        if name.startswith("_") or not callable(member):
            continue
        assert _params(getattr(impl, name)) == _params(member), f"{impl.__name__}.{name}"


def test_both_catalogs_are_catalog_apis(catalog):
    assert isinstance(catalog, CatalogAPI)
    with catalog.transaction() as t:
        assert isinstance(t, TransactionAPI)
