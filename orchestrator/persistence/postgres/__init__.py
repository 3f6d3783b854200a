"""The PostgreSQL session store: sessions shared by many workers (optimistic concurrency).

`PostgresStore` is in `orchestrator.persistence.postgres.store`, imported only when a
`postgresql://` location is opened (psycopg is an optional extra), so this package
imports nothing itself.
"""

__all__: list[str] = []
