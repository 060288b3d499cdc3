import pytest, time, signal, json
from tests.integration.cluster_harness import Cluster, SESSION_TIMEOUT_MS, LoadGenerator
from tests.integration.harness import wait_until
pytestmark = pytest.mark.integration

def test_freeze(taskring_env, recording_executor):
    c = Cluster(taskring_env)
    try:
        for n in ("n1","n2","n3"): c.add(n)
        for n in c.live(): n.wait_ready()
        before = c.wait_settled({"n1","n2","n3"})
        lost = {s for s, o in before.items() if o == "n1"}
        load = LoadGenerator(taskring_env, [c.nodes["n2"], c.nodes["n3"]]).start()
        wait_until(lambda: len(load.acked) > 300, 20, "load")
        c.nodes["n1"].pause(); t0 = time.time()
        for i in range(16):
            t = time.time()
            try:
                o = c.owners(c.nodes["n2"])
                print(round(t - t0, 2), "took", round(time.time() - t, 2), {s: o[s] for s in lost})
            except Exception as e:
                print(round(t - t0, 2), "err", e)
            time.sleep(0.5)
        c.nodes["n1"].resume()
        load.stop()
    finally:
        c.stop_all()
