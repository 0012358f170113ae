"""The per-process generation memo (registry/readmodel/memo.py): one entry per rest of a key, the
newest generation's, and at most `maxsize` of them."""

from __future__ import annotations

from registry.readmodel.memo import GenerationMemo


def test_a_newer_entry_replaces_only_the_older_one_under_the_same_rest():
    memo: GenerationMemo[str] = GenerationMemo(maxsize=8)
    memo.put((1, "production"), "production at 1")
    memo.put((1, None), "latest at 1")
    memo.put((2, None), "latest at 2")
    assert memo.get((2, None)) == "latest at 2"
    assert memo.get((1, None)) is None
    # The other label's entry is outgrown but still there to move forward from.
    assert memo.get((2, "production")) is None
    assert memo.newest_before(2, "production") == "production at 1"
    assert memo.newest_before(1, "production") is None  # not below the generation asked for


def test_a_reader_at_an_older_generation_does_not_replace_a_newer_entry():
    memo: GenerationMemo[str] = GenerationMemo(maxsize=8)
    memo.put((3, None), "at 3")
    memo.put((2, None), "at 2")
    assert memo.get((3, None)) == "at 3"
    assert memo.get((2, None)) is None


def test_past_maxsize_the_least_recently_used_rest_goes():
    memo: GenerationMemo[str] = GenerationMemo(maxsize=2)
    memo.put((1, "a"), "a")
    memo.put((1, "b"), "b")
    assert memo.get((1, "a")) == "a"  # "b" is now the least recently used
    memo.put((2, "c"), "c")
    assert memo.newest_before(2, "b") is None
    assert memo.newest_before(2, "a") == "a"
    assert memo.get((2, "c")) == "c"
