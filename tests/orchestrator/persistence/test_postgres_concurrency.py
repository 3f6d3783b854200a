

_MOVES = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["ingest", "refresh"])), max_size=12)


@settings(max_examples=15, deadline=None)
@given(moves=_MOVES)
def test_any_interleaving_of_writers_ends_in_one_history(postgres: Any, moves: list[Any]) -> None:
    """Three writers ingesting and refreshing in any order: each lands once, all agree."""
    location = postgres.location("h")
    stores = [open_store(location, counter=WordCounter(), durable=False) for _ in range(3)]
    try:
        sessions = [store.restore(clock=_CLOCK) for store in stores]
        landed = []
        for number, (writer, move) in enumerate(moves):
            if move == "refresh":
                stores[writer].refresh()
                continue
            text = f"writer {writer} move {number}"
            try:
                sessions[writer].raw.add_user(text)
            except StoreConflictError:
                stores[writer].refresh()
                sessions[writer].raw.add_user(text)
            landed.append(text)
        for store in stores:
            store.refresh()
        assert [node.text for node in sessions[0].raw] == landed
        assert _seen(sessions[0]) == _seen(sessions[1]) == _seen(sessions[2])
    finally:
        for store in stores:
            store.close()
