"""SIGKILL a process that commits in a loop: every acknowledged commit survives, none is partial."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import catalog_core as cc

WRITER = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, {root!r})
    import catalog_core as cc
    cat = cc.Catalog.open({data!r})
    with cat.transaction() as t:
        t.add("/c", {{"obj_type": "catalog", "stats": {{"n": 0}}}})
    print("ready", flush=True)

    lock = threading.Lock()

    def worker(w):
        i = 0
        while True:
            i += 1
            with cat.transaction(author=f"w{{w}}", message=f"{{w}}:{{i}}") as t:
                # three writes that must land together or not at all
                t.add(f"/c/w{{w}}-{{i}}", {{"obj_type": "namespace", "i": i}})
                t.add(f"/c/w{{w}}-{{i}}/f", {{"obj_type": "file", "i": i}}, leaf=True)
                t.merge("/c", {{"stats": {{"n": {{"op": "+", "val": 1}}}}}})
            with lock:  # one whole line per ack, written after commit() returned
                sys.stdout.write(f"ack {{t.vid}} w{{w}}-{{i}}\\n")
                sys.stdout.flush()

    for w in range(3):
        threading.Thread(target=worker, args=(w,), daemon=True).start()
    threading.Event().wait()
""")


def test_sigkill_loses_no_acknowledged_commit(data_dir, tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=root, data=data_dir))
    out_path = tmp_path / "out.txt"
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and out_path.read_text().count("ack") < 300:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    lines = out_path.read_text().split("\n")[:-1]  # the last piece may be cut by the kill
    acks = [line.split() for line in lines if line.startswith("ack")]
    assert len(acks) >= 300, out_path.read_text()[-2000:]
    cat = cc.Catalog.open(data_dir)
    try:
        for _ack, vid, name in acks:
            assert int(vid) <= cat.latest_vid
            assert cat.get(f"/c/{name}") is not None, f"acknowledged commit {vid} ({name}) lost"
        # no partial commit: each namespace has its file, and the counter equals the number of them
        names = [o for o in cat.children("/c")]
        for o in names:
            assert cat.get(o.path + "/f") is not None, f"partial commit at {o.path}"
        assert cat.get("/c").value["stats"]["n"] == len(names)
        assert len(cat.commits()) == cat.latest_vid + 1
        for c in cat.commits(since=2):
            assert len(c.paths) == 3
    finally:
        cat.close()
