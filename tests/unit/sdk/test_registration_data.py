"""What an executor writes into ZooKeeper is what dispatchers parse (membership.ExecutorInstance)."""
import json

from taskring._registration import znode_data, znode_path


def test_znode_path_and_data():
    assert znode_path("shop", "host-1-abc") == "/executors/shop/host-1-abc"
    data = json.loads(znode_data(address="10.0.0.5:7100", namespace="shop", task_types=["b", "a"],
                                 max_in_flight=32, pid=123))
    assert data == {"address": "10.0.0.5:7100", "namespace": "shop", "task_types": ["a", "b"],
                    "max_in_flight": 32, "pid": 123}
