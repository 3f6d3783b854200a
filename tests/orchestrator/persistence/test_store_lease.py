"""The lease part of the `SessionStore` contract, on every backend `open_store` reaches.

The fixtures are the contract's (`test_store_contract.py`): one location per test, on
SQLite and on the tests' PostgreSQL server.
"""

from __future__ import annotations

import pytest

from context_graph.errors import StoreError
from tests.orchestrator.persistence.test_store_contract import (
    Opener,
    _clock,
    _drop,
    _observed,
    _recorded,
    _turn,
    backend_fixture,
    reopen_fixture,
)

__all__ = ["backend_fixture", "reopen_fixture"]  # the contract's fixtures, used here


class TestLease:
    def test_a_lease_is_granted_and_a_later_one_gets_a_larger_token(self, reopen: Opener) -> None:
        """Two leases one after the other: both granted, the second's token is larger."""
        store, _ = _recorded(reopen)
        with store.lease(holder="first") as first:
            assert first.holder == "first"
        with store.lease(holder="second") as second:
            assert second.token > first.token

    def test_a_lease_held_already_is_joined(self, reopen: Opener) -> None:
        """Taking the lease inside a lease block of the same store gives the same lease."""
        store, _ = _recorded(reopen)
        with store.lease(holder="outer") as outer, store.lease(holder="inner") as inner:
            assert inner == outer
        with store.lease() as after:  # the outer block gave it back
            assert after.token > outer.token

    def test_writes_inside_a_lease_land_as_usual(self, reopen: Opener) -> None:
        """A compaction-like block under the lease is kept whole, as without it."""
        store, live = _recorded(reopen)
        with store.lease(holder="compactor"), store.atomic():
            live.raw.ingest(_turn(7))
            proposal = _drop(live.working)
            assert proposal is not None
            live.working.apply(proposal)
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)

    def test_a_read_only_store_is_granted_a_lease_at_once(self, reopen: Opener) -> None:
        """A read-only store writes nothing, so its lease is granted and fences nothing."""
        store, _ = _recorded(reopen)
        reader = reopen(read_only=True)
        with reader.lease(holder="reader") as lease, store.lease(holder="writer"):
            assert lease.token == 0

    def test_a_closed_store_refuses_the_lease(self, reopen: Opener) -> None:
        """`lease` after `close` raises `StoreError` naming the store."""
        store, _ = _recorded(reopen)
        store.close()
        with pytest.raises(StoreError, match="closed") as refused, store.lease():
            pass
        assert store.location in str(refused.value)
