"""Install the pinned npm packages the tests drive (tests/helpers.py: the TypeScript MCP SDK, the
MCP Inspector CLI and node@22; the MCP conformance suite; oidc-provider) into $SEMCAT_NPM_CACHE,
exactly as the tests do on first use and under the same locks. `.ci/run` starts it in the
background once the venv is installed, so on a fresh machine the downloads (about a minute) overlap
the lint and the Spark builds instead of holding a test worker; a test that needs a package before
it is there waits on its lock. Run: `.venv/bin/python -m tests.npm_prefetch`."""

from __future__ import annotations

import time

from tests.helpers import conformance_suite, oidc_provider, pinned_node_packages


def main() -> None:
    for name, install in (("the MCP clients", pinned_node_packages), ("the conformance suite", conformance_suite),
                          ("oidc-provider", oidc_provider)):
        t0 = time.monotonic()
        install()
        print(f"npm prefetch: {name} ready in {time.monotonic() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
