"""The output set every multi-file command writes through (jsonio.outputs_all_or_none):
its files appear together or not at all, and an OS error names the directory."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from kerneltracer.jsonio import (
    atomic_write_text,
    atomic_writer,
    outputs_all_or_none,
    remove_output,
)


def _files(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_text() for p in files}


def test_files_appear_together_when_the_block_succeeds(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "old").mkdir(parents=True)
    (out / "old" / "stale.txt").write_text("stale")
    with outputs_all_or_none(out):
        atomic_write_text(out / "a.txt", "a")
        atomic_write_text(out / "sub" / "b.txt", "b")
        remove_output(out / "old" / "stale.txt")
        assert not (out / "a.txt").exists()  # nothing shows before the end
        assert (out / "old" / "stale.txt").exists()
    assert _files(out) == {"a.txt": "a", "sub/b.txt": "b"}


def test_a_failure_changes_nothing_and_removes_what_it_made(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old a")
    (out / "keep.txt").write_text("keep")
    with pytest.raises(RuntimeError), outputs_all_or_none(out):
        atomic_write_text(out / "a.txt", "new a")
        atomic_write_text(out / "new" / "deep" / "b.txt", "b")
        remove_output(out / "keep.txt")
        raise RuntimeError("the third file failed")
    assert _files(out) == {"a.txt": "old a", "keep.txt": "keep"}
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "keep.txt"]  # no temp, no dir


def test_an_output_dir_the_block_created_goes_with_it(tmp_path: Path) -> None:
    out = tmp_path / "new-out"
    with pytest.raises(RuntimeError), outputs_all_or_none(out):
        out.mkdir()  # a writer's own mkdir
        atomic_write_text(out / "x" / "a.txt", "a")
        raise RuntimeError
    assert not out.exists()


def test_a_full_disk_names_the_directory_not_a_temp_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(OSError) as caught, outputs_all_or_none(out):
        atomic_write_text(out / "a.txt", "a")
        with atomic_writer(out / "sub" / "b.parquet") as fh:
            fh.write(b"x")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert caught.value.filename == str(out / "sub")
    assert not out.exists()


def test_nested_blocks_are_one_set(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError), outputs_all_or_none(out):
        with outputs_all_or_none(out / "inner"):  # a writer's own block inside a command's
            atomic_write_text(out / "inner" / "a.txt", "a")
        raise RuntimeError
    assert not out.exists()


def test_a_forked_writer_hands_its_files_to_the_parents_set(tmp_path: Path) -> None:
    # The timeline writes the InferScope file in a forked child (ForkedCall).
    from kerneltracer.analysis.timeline.render.forked import ForkedCall

    out = tmp_path / "out"
    with outputs_all_or_none(out):
        ForkedCall(lambda: atomic_write_text(out / "child.txt", "from the child")).result()
        atomic_write_text(out / "parent.txt", "from the parent")
        assert not (out / "child.txt").exists()  # the parent's set decides when
    assert _files(out) == {"child.txt": "from the child", "parent.txt": "from the parent"}

    again = tmp_path / "again"
    with pytest.raises(RuntimeError), outputs_all_or_none(again):
        ForkedCall(lambda: atomic_write_text(again / "child.txt", "x")).result()
        raise RuntimeError
    assert not again.exists()  # the child's temp file went with the parent's failure


def test_a_tree_replaces_the_old_one_whole_with_one_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of small files (compile health's texts) cost one flush, not an fsync
    each; the old folder's files go with it, and nothing shows before the block ends."""
    import os

    from kerneltracer import jsonio

    out = tmp_path / "out"
    (out / "texts" / "gone").mkdir(parents=True)
    (out / "texts" / "gone" / "old.txt").write_text("old")
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    flushes: list[int] = []
    monkeypatch.setattr(jsonio, "_syncfs", lambda fd: flushes.append(fd) or True)
    with outputs_all_or_none(out), jsonio.atomic_tree(out / "texts") as stage:
        for i in range(50):
            (stage / f"d{i % 5}").mkdir(exist_ok=True)
            (stage / f"d{i % 5}" / f"{i}.txt").write_text(str(i))
        assert (out / "texts" / "gone" / "old.txt").exists()
    files = _files(out)
    assert len(files) == 50 and files["texts/d3/8.txt"] == "8"
    assert len(flushes) == 1
    assert len(fsyncs) <= 3  # the folders' entries, never one per file
    assert [p.name for p in out.iterdir()] == ["texts"]  # no staging folder left


def test_a_failed_tree_leaves_the_old_one(tmp_path: Path) -> None:
    from kerneltracer.jsonio import atomic_tree

    out = tmp_path / "out"
    (out / "texts").mkdir(parents=True)
    (out / "texts" / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), outputs_all_or_none(out), atomic_tree(out / "texts") as st:
        (st / "a.txt").write_text("new")
        raise RuntimeError("disk gone")
    assert _files(out) == {"texts/a.txt": "old"}


def test_a_tree_of_a_few_files_is_fsynced_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A syncfs waits for every dirty page of the disk, other programs' too: a few files
    (one compile id's texts) are cheaper to fsync one by one."""
    import os

    from kerneltracer import jsonio

    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd)
    )
    flushes: list[int] = []
    monkeypatch.setattr(jsonio, "_syncfs", lambda fd: flushes.append(fd) or True)
    with jsonio.atomic_tree(tmp_path / "texts") as stage:
        (stage / "d").mkdir()
        for name in ("graph.txt", "guards.txt", "d/output_code.txt"):
            (stage / name).write_text(name)
    assert flushes == []
    assert {Path(p).name for p in synced} >= {"graph.txt", "guards.txt", "output_code.txt"}
    assert (tmp_path / "texts" / "d" / "output_code.txt").read_text() == "d/output_code.txt"
