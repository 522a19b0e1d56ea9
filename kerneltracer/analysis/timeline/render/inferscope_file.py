"""Write the InferScope trace file chunk by chunk, validating as it goes.

A million-event trace is over a gigabyte as Python dicts; streamed, only one chunk of
events exists at a time. Compression runs in a second thread (the codec releases the GIL),
so the deflate of one chunk overlaps with encoding the next. The codec is ISA-L's igzip
(the isal package), level 1: on the 30 MB of JSON of rank0.json.gz it takes 0.026 s of CPU
where zlib level 1 took 0.10 s, for 1% more bytes (zlib level 6 takes several times as
long). Its output is ordinary gzip. The file appears atomically (temp file, fsync, rename).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO

import orjson
from isal import igzip

from kerneltracer.analysis.timeline.load.loader import ChromeTrace
from kerneltracer.analysis.timeline.model.validate import ValidationReport, Validator
from kerneltracer.analysis.timeline.render.convert import InferScopeConverter
from kerneltracer.core.heap import no_cyclic_gc, release_free_heap
from kerneltracer.jsonio import atomic_writer

_COMPRESS_LEVEL = 1
# Bounds the bytes waiting for the compressor: a piece is a chunk's text (~7 MiB for the
# default 20,000 events) or a separator, and encoding a chunk takes longer than deflating it.
_QUEUED_PIECES = 2
# Chunks between hand-backs of the free heap. Each chunk's texts and columns, freed, left
# holes that the next chunk's did not fill: at 3M events the resident size grew by ~75 MiB
# over the 93 chunks with live memory flat, the writer's peak. Handing the heap back every
# 5 chunks kept it to ~30 MiB for ~120k more page faults (~0.1 s); every chunk, to ~25 MiB
# for ~340k (~0.65 s).
_TRIM_EVERY = 5


def write_inferscope(
    trace: ChromeTrace, path: Path, created: datetime | None = None, chunk_size: int = 20_000
) -> ValidationReport:
    """Write ``path`` (gzipped JSON) and return the constraint check of what was written."""
    conv = InferScopeConverter(trace, created)
    launches = conv.launch_pairs()  # its temporaries before the chunks' pieces pile up
    validator = Validator()
    with no_cyclic_gc(), atomic_writer(path) as raw, _background_gzip(raw) as put:
        put(orjson.dumps(conv.header())[:-1] + b',"events":[')
        sep = b""
        for k, (text, columns) in enumerate(conv.encoded_chunks(chunk_size), 1):
            validator.feed_columns(columns)
            if k % _TRIM_EVERY == 0:
                release_free_heap()
            if text:
                put(sep)  # on its own: joined, each chunk's text was copied once more
                put(text)
                sep = b","
        # The text orjson makes of relationships(), its launches written a run at a time.
        scopes = conv.scopes()
        put(b'],"relationships":{"scopes":' + orjson.dumps(scopes) + b',"launches":[')
        sep = b""
        for text in conv.encoded_launches(chunk_size, launches):
            put(sep + text)
            sep = b","
        put(b"]}}")
    return validator.finish(scopes)


@contextmanager
def _background_gzip(raw: IO[bytes]) -> Iterator[Callable[[bytes], None]]:
    """A ``put(bytes)`` whose pieces are gzipped into ``raw`` by a worker thread, in order."""
    pieces: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUED_PIECES)
    failure: list[BaseException] = []
    ended = threading.Event()  # the producer's end mark was taken

    def work() -> None:
        try:
            with igzip.IGzipFile(
                fileobj=raw, mode="wb", compresslevel=_COMPRESS_LEVEL, mtime=0
            ) as gz:
                while (piece := pieces.get()) is not None:
                    gz.write(piece)
                ended.set()
        except BaseException as exc:  # handed to the producer, which re-raises it
            failure.append(exc)
            # Drain so that the producer never blocks, unless the end mark is already
            # taken (a full disk at the gzip's last flush): waiting for it would hang.
            while not ended.is_set() and pieces.get() is not None:
                pass

    worker = threading.Thread(target=work, name="inferscope-gzip", daemon=True)
    worker.start()
    try:
        yield pieces.put
    finally:
        pieces.put(None)
        worker.join()
    if failure:
        raise failure[0]
