import json
import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from madeira import Client  # noqa: E402
from madeira.testing import MadeiraServer  # noqa: E402

TESTDATA = os.path.normpath(os.path.join(HERE, "..", "..", "testdata"))


def vectors(name):
    with open(os.path.join(TESTDATA, name), encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def server():
    with MadeiraServer() as srv:
        yield srv


@pytest.fixture
def client(server):
    with Client(server.url) as c:
        yield c


@pytest.fixture
def queue_name():
    return f"conformance-{uuid.uuid4().hex[:12]}"


def wait_until(predicate, timeout=30.0, interval=0.05):
    """Poll `predicate` (bounded); return its last truthy value or fail."""
    import time
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
