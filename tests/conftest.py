import numpy as np
import pytest

from granular.synth import synthesize


@pytest.fixture(scope="session")
def sand():
    return synthesize("rft", "sand")


@pytest.fixture(scope="session")
def pebbles():
    return synthesize("rft", "pebbles")


@pytest.fixture(scope="session")
def sand_model(sand):
    from granular import model

    return model.fit(sand)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
