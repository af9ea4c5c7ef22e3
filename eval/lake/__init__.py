"""The Acme Outfitters demo lake (LAKE.md): generator, ETL history and annotation histories.

    from eval.lake import build, data_dir
    build("demo-data", seed=7, scale="small")          # DIR/enriched, DIR/stale, DIR/stale_manifest.json
    cat = cc.Catalog.open(data_dir("demo-data", "stale+detect"))
"""

from eval.lake.build import CONDITIONS, HISTORIES, MANIFEST, build, data_dir
from eval.lake.calendar import D0

__all__ = ["build", "data_dir", "CONDITIONS", "HISTORIES", "MANIFEST", "D0"]
