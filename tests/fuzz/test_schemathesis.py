"""The schemathesis pass: every operation of the OpenAPI document, over REST, as the admin of a
seeded organization, with generated inputs both valid and invalid. The service must never answer
5xx, and every answer must be one its document promises: a documented status code, its content
type and a body matching its schema. An operation added later is fuzzed from the day it lands.

Runs in the normal test command, so on SQLite and again on PostgreSQL+Redis in CI. Bounds and
seed: tests/fuzz/support.py. Each operation is a test, named by its method and path; a failure
prints the check, the request (as curl) and the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import strategies as st

from tests.fuzz.support import BUDGET_SECONDS, Pass, Seeded, fuzz_config, service_document
from tests.support.backends import Backends
from tests.support.servers import AppServer

# Schemathesis's own negative generators draw from `random`, which Hypothesis seeds per example
# (so runs stay repeatable); its warning about that is not ours to act on.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")

# The document the service serves, read at collection so that each operation is a test of its
# own (named by method and path); the requests go to the suite's server.
schema = schemathesis.openapi.from_dict(service_document(), config=fuzz_config())
# The seeded organization of this process's pass (the `fuzz_pass` fixture sets it): generation
# reads it, as hooks take no fixtures.
SEEDED: list[Seeded] = []


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Path parameters as generated, or with a real value: an `{id}` of the seeded records of
    the path's collection, a published post's `{slug}`, a draft's `{version}`."""
    strategy = st.just(path_parameters)
    for name in path_parameters or {}:
        known = SEEDED[-1].known(context.operation.path, name) if SEEDED else []
        if known:
            strategy = strategy.flatmap(
                lambda values, name=name, known=known: st.one_of(
                    st.just(values),
                    st.sampled_from(known).map(lambda value: {**values, name: value}),
                )
            )
    return strategy


@pytest.fixture(scope="module")
def fuzz_pass(backends: Backends, server: AppServer, seeded: Seeded) -> Iterator[Pass]:
    sent = Pass(BUDGET_SECONDS, backends.backend, server.url, seeded)
    SEEDED.append(seeded)
    try:
        yield sent
    finally:
        SEEDED.remove(seeded)
        sent.session.close()


@schema.parametrize()
def test_every_operation_answers_as_its_document_says(
    case: Any, fuzz_pass: Pass, request: pytest.FixtureRequest
) -> None:
    try:
        fuzz_pass.send(case)
    finally:
        fuzz_pass.record(request.node)
