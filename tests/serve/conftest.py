"""The lab every test module of tests/serve talks to: the bundled catalogue behind the ASGI test client (one of each
per module, so a module's cached models are its own)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnlab.serve import Lab, Limits, catalogue, create_app

HOSTS = ["testserver"]


@pytest.fixture(scope="module")
def lab() -> Lab:
    return Lab(catalogue())


@pytest.fixture(scope="module")
def client(lab: Lab) -> TestClient:
    return TestClient(create_app(lab, Limits(), hosts=HOSTS))
